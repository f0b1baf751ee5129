// The repair ladder (repair.h, docs/repair.md).
#include "vigil/drainer/repair.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "vigil/drainer/breaker.h"
#include "vigil/drainer/policy.h"
#include "vigil/slurm/reason.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

namespace {

int rank(std::optional<Remedy> r) {
  if (!r) return 0;
  switch (*r) {
    case Remedy::kResetGpu:
      return 1;
    case Remedy::kReboot:
      return 2;
    case Remedy::kService:
      return 3;
  }
  return 0;
}

int count_since(const std::vector<int64_t>& times, int64_t since) {
  return static_cast<int>(
      std::count_if(times.begin(), times.end(), [&](int64_t t) { return t > since; }));
}
int reboots_since(const RepairState& r, int64_t since) { return count_since(r.reboots, since); }

// A Vigil reason's own text: without "vigil:" and the ladder's words ("replace", "reset-gpu").
std::string own_text(std::string_view reason) {
  std::string text(reason);
  if (text.rfind(slurm::kReasonPrefix, 0) == 0) text = text.substr(slurm::kReasonPrefix.size());
  text.erase(0, text.find_first_not_of(' '));
  for (std::string_view word : {std::string_view("replace "), std::string_view("reset-gpu ")})
    if (text.rfind(word, 0) == 0) text = text.substr(word.size());
  return text;
}

// "vigil: <own text>": a Vigil reason without the ladder's words.
std::string own_reason(std::string_view reason) {
  return std::string(slurm::kReasonPrefix) + " " + own_text(reason);
}

// Idle as the ladder needs it: drained by Vigil, no job and none completing, slurmd answering.
bool idle_for_repair(const slurm::SlurmNodeInfo& n) {
  return n.drain && slurm::drained_by_vigil(n) && !is_replace_reason(n.reason) &&
         n.state == "IDLE" && !n.completing && !n.not_responding && !n.reboot_pending &&
         !slurm::untouchable(n);
}

std::string days(int64_t s) { return std::to_string(s / 86400) + "d"; }

}  // namespace

nlohmann::json to_json(const RepairState& r) {
  nlohmann::json j = {
      {"stage", to_string(r.stage)}, {"since_unix", r.since_unix}, {"reboots", r.reboots}};
  if (r.remedy) j["remedy"] = to_string(*r.remedy);
  if (!r.evidence.empty()) j["evidence"] = r.evidence;
  if (!r.bug_report.empty()) j["bug_report"] = r.bug_report;
  if (r.booted_unix) j["booted_unix"] = r.booted_unix;
  if (r.part_drain_unix) j["part_drain_unix"] = r.part_drain_unix;
  if (!r.offender.empty()) j["offender"] = r.offender;
  if (!r.resets.empty()) j["resets"] = r.resets;
  if (!r.held_reason.empty()) j["held_reason"] = r.held_reason;
  if (r.reset_tried) j["reset_tried"] = true;
  if (r.via_reset) j["via_reset"] = true;
  if (r.redrained) j["redrained"] = true;
  return j;
}

Result<RepairState> repair_state_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error{"not an object", "repair"};
  RepairState r;
  auto stage = value_of(kRepairStageNames, j.value("stage", "none"));
  if (!stage) return Error{"unknown stage '" + j.value("stage", "") + "'", "repair.stage"};
  r.stage = *stage;
  if (j.contains("remedy")) {
    auto remedy = value_of(kRemedyNames, j.at("remedy").get<std::string>());
    if (!remedy) return Error{"unknown remedy", "repair.remedy"};
    r.remedy = remedy;
  }
  r.since_unix = j.value("since_unix", int64_t{0});
  r.reboots = j.value("reboots", std::vector<int64_t>{});
  r.evidence = j.value("evidence", "");
  r.bug_report = j.value("bug_report", "");
  r.booted_unix = j.value("booted_unix", int64_t{0});
  r.part_drain_unix = j.value("part_drain_unix", int64_t{0});
  r.offender = j.value("offender", "");
  r.resets = j.value("resets", std::vector<int64_t>{});
  r.held_reason = j.value("held_reason", "");
  r.reset_tried = j.value("reset_tried", false);
  r.via_reset = j.value("via_reset", false);
  r.redrained = j.value("redrained", false);
  return r;
}

std::optional<Remedy> stronger(std::optional<Remedy> a, std::optional<Remedy> b) {
  return rank(b) > rank(a) ? b : a;
}

RepairLoad repair_load(const std::map<std::string, NodeRecord>& nodes, const RepairConfig& cfg,
                       int64_t now) {
  RepairLoad load;
  for (const auto& [name, s] : nodes) {
    if (in_repair(s.repair)) load.in_repair++;
    load.started_in_window += reboots_since(s.repair, now - cfg.window_s) +
                              count_since(s.repair.resets, now - cfg.window_s);
  }
  return load;
}

std::string reset_reason(std::string_view reason) {
  return slurm::make_reason(slurm::kResetGpuWord, own_text(reason));
}

void mark_replace(NodeRecord& s, const std::string& why, int64_t now) {
  // A reset in flight gives its reason back first: the replace names the drain's own text.
  if (!s.repair.held_reason.empty()) s.reason = s.repair.held_reason;
  s.repair.held_reason.clear();
  std::string text = own_text(s.reason);
  // The why (a serial for an RMA, the ladder's cause) is kept whole: the old text gives way to
  // make_reason's 200 characters.
  const size_t room = 200 - std::min<size_t>(200, slurm::kReasonPrefix.size() + 9 + why.size() + 3);
  if (text.size() > room) text.resize(room);
  s.reason = slurm::make_reason("replace", text + " (" + why + ")");
  s.repair.stage = RepairStage::kReplace;
  s.repair.since_unix = now;
}

void end_repair(NodeRecord& s) {
  s.repair.stage = RepairStage::kNone;
  s.repair.remedy.reset();
  s.repair.since_unix = 0;
  s.repair.evidence.clear();
  s.repair.bug_report.clear();
  s.repair.booted_unix = 0;
  s.repair.part_drain_unix = 0;
  s.repair.offender.clear();
  s.repair.held_reason.clear();
  s.repair.redrained = false;
  s.repair.reset_tried = false;
  s.repair.via_reset = false;
}

bool is_replace_reason(std::string_view reason) {
  return reason.rfind(std::string(slurm::kReasonPrefix) + " replace ", 0) == 0;
}

bool in_repair(const RepairState& r) {
  return r.stage == RepairStage::kRebooting || r.stage == RepairStage::kRechecking ||
         r.stage == RepairStage::kResetting;
}

namespace {
// The reset ended without resetting: the drain's own reason back, no stage; reset_tried stays,
// so the ladder's next step is the reboot rung.
void end_reset(NodeRecord& s, int64_t now) {
  if (!s.repair.held_reason.empty()) s.reason = s.repair.held_reason;
  s.repair.held_reason.clear();
  s.repair.stage = RepairStage::kNone;
  s.repair.since_unix = now;
}
}  // namespace

ResetOutcome apply_reset_result(NodeRecord& s, Status status, int64_t started_unix, int64_t now) {
  if (status != Status::kPass && status != Status::kWarn) {
    end_reset(s, now);
    return ResetOutcome::kFailed;
  }
  if (!s.repair.held_reason.empty()) s.reason = s.repair.held_reason;
  s.repair.held_reason.clear();
  s.repair.stage = RepairStage::kRechecking;
  s.repair.since_unix = now;
  s.repair.booted_unix = started_unix;
  s.repair.via_reset = true;
  restart_counts(s);
  return ResetOutcome::kPassed;
}

void restart_counts(NodeRecord& s) {
  for (auto& [name, c] : s.checks) {
    c.consecutive_fails = 0;
    c.consecutive_passes = 0;
  }
  s.consecutive_fails = 0;
  s.consecutive_passes = 0;
}

namespace {

std::optional<RepairStep> release(NodeRecord& s, std::string why) {
  end_repair(s);
  return RepairStep{Action::kNone, std::move(why)};
}

std::optional<RepairStep> replace(NodeRecord& s, const std::string& why, int64_t now) {
  mark_replace(s, why, now);
  return RepairStep{Action::kReplace, why};
}

std::optional<RepairStep> reset_failed(NodeRecord& s, std::string why, int64_t now) {
  end_reset(s, now);
  return RepairStep{Action::kResetFailed, std::move(why)};
}

// A node back from its reboot: a boot at or after the request, slurmd answering.
bool back_from_reboot(const slurm::SlurmNodeInfo& n, const RepairState& r) {
  return n.boot_time >= r.since_unix && !n.down && !n.not_responding && !n.reboot_pending;
}

// A reboot Slurm's ResumeTimeout ended is still a reboot: the node may be booting. Its drain is
// kept (asked back while the node is DOWN where Slurm lifted it, so registering again cannot put
// it in service unchecked) and the ladder waits for it as for any reboot (reboot_timeout_s, then
// replace). A node that registered again and that Slurm keeps DOWN (ReturnToService 0 or 1) is
// released to a person.
std::optional<RepairStep> after_reboot_timeout(NodeRecord& s, const slurm::SlurmNodeInfo& n) {
  RepairState& r = s.repair;
  if (n.boot_time >= r.since_unix && !n.not_responding && !n.reboot_pending) {
    end_repair(s);
    return RepairStep{Action::kNone,
                      "back from its reboot, but Slurm keeps it DOWN: its ResumeTimeout ended the "
                      "reboot ('reboot timed out') and ReturnToService does not return such a "
                      "node; a person resumes it; raise ResumeTimeout"};
  }
  if (n.drain || r.redrained) return std::nullopt;
  r.redrained = true;
  return RepairStep{Action::kRedrain,
                    "Slurm's ResumeTimeout ended the reboot and lifted the drain ('reboot timed "
                    "out'): drained again while DOWN, so that the node does not return to "
                    "service unchecked when it registers; raise ResumeTimeout"};
}

// An idle node Vigil drained, no stage yet, breaker closed: its first rung, or nothing.
std::optional<RepairStep> start_rung(NodeRecord& s, const RepairConfig& cfg, const RepairLoad& load,
                                     int64_t now) {
  RepairState& r = s.repair;
  if (*r.remedy == Remedy::kService) return replace(s, "remedy: service", now);
  if (*r.remedy == Remedy::kResetGpu && cfg.reset_gpu && !r.reset_tried &&
      count_since(r.resets, now - cfg.node_window_s) < cfg.max_resets_per_node) {
    if (load.in_repair >= cfg.max_in_repair || load.started_in_window >= cfg.max_per_window)
      return std::nullopt;
    r.held_reason = own_reason(s.reason);
    s.reason = reset_reason(s.reason);
    r.stage = RepairStage::kResetting;
    r.since_unix = now;
    r.reset_tried = true;
    r.resets.push_back(now);
    std::erase_if(r.resets, [&](int64_t t) { return t <= now - cfg.node_window_s; });
    return RepairStep{Action::kResetGpu, "reset-gpu: reset_gpu fault, node idle"};
  }
  if (!cfg.reboot) return std::nullopt;  // no reboots: the node waits for its re-checks
  // Slurm would mark the node DOWN "reboot timed out" before it is back (review W2): refused
  // once for this drain (its remedy is dropped), said so; the node waits for its re-checks.
  if (cfg.resume_timeout_s > 0 && cfg.resume_timeout_s < cfg.bug_report_s + cfg.boot_time_s) {
    r.remedy.reset();
    return RepairStep{Action::kNone,
                      "reboot refused: Slurm's ResumeTimeout (" +
                          std::to_string(cfg.resume_timeout_s) +
                          " s) is shorter than the bug report and a boot (" +
                          std::to_string(cfg.bug_report_s + cfg.boot_time_s) +
                          " s, repair.boot_time_s); raise ResumeTimeout (vigil-submit "
                          "--check-config)"};
  }
  if (reboots_since(r, now - cfg.node_window_s) >= cfg.max_reboots_per_node)
    return replace(s,
                   "repeat offender: " + std::to_string(cfg.max_reboots_per_node) + " reboots in " +
                       days(cfg.node_window_s),
                   now);
  if (load.in_repair >= cfg.max_in_repair || load.started_in_window >= cfg.max_per_window)
    return std::nullopt;
  r.stage = RepairStage::kRebooting;
  r.since_unix = now;
  r.reboots.push_back(now);
  std::erase_if(r.reboots, [&](int64_t t) { return t <= now - cfg.node_window_s; });
  return RepairStep{Action::kReboot,
                    "reboot: " + std::string(to_string(*r.remedy)) + " fault, node idle"};
}

}  // namespace

std::optional<RepairStep> repair_tick(NodeRecord& s, const slurm::SlurmNodeInfo* slurm,
                                      bool view_read, const RepairConfig& cfg,
                                      const RepairLoad& load, const BreakerState& breaker,
                                      bool dry_run, int64_t now) {
  RepairState& r = s.repair;
  if (!s.drained_by_vigil) return std::nullopt;
  // Undrained for the seconds of its held re-check (docs/recheck.md): not a drain someone lifted;
  // the drain and its reason come back before the check runs. Nothing moves meanwhile.
  if (slurm && slurm::held_by_vigil(*slurm)) return std::nullopt;
  // A reset asked for gives the drain's own reason back when the rung is turned off (never
  // touching a drain that is no longer Vigil's; without Slurm's table: wait).
  if (r.stage == RepairStage::kResetting && (!cfg.reset_gpu || dry_run)) {
    if (!slurm) return view_read ? release(s, "node unknown to Slurm") : std::nullopt;
    if (!slurm::drained_by_vigil(*slurm))
      return release(s, "drain no longer vigil's: " + slurm->reason);
    return reset_failed(s, dry_run ? "dry-run: repair ladder off" : "repair.reset_gpu off", now);
  }
  if (in_repair(r) && (!cfg.ladder_on() || dry_run))
    return release(s, dry_run ? "dry-run: repair ladder off" : "repair ladder off");
  // Reboots turned off while the reset rung stays on: the reboot's stages end.
  if (!cfg.reboot && !dry_run &&
      (r.stage == RepairStage::kRebooting || (r.stage == RepairStage::kRechecking && !r.via_reset)))
    return release(s, "repair.reboot off");
  // A "vigil: reset-gpu" label with no reset in progress (a drain adopted after the state was
  // lost, a journal cut short): the drain's own text comes back, or vigil-submit would reset the
  // node on every run and never re-check it.
  if (r.stage != RepairStage::kResetting && !dry_run && slurm::is_reset_gpu_reason(s.reason) &&
      slurm && slurm::drained_by_vigil(*slurm)) {
    s.reason = own_reason(s.reason);
    return RepairStep{Action::kResetFailed, "reset-gpu label without a reset in progress"};
  }
  if (!cfg.ladder_on() || dry_run) return std::nullopt;
  if (!slurm) {  // a table without the node: it left Slurm; no table: wait
    if (view_read && r.stage != RepairStage::kNone) return release(s, "node unknown to Slurm");
    return std::nullopt;
  }
  // Not back within reboot_timeout_s: `replace` (a reboot Slurm timed out included).
  auto overdue = [&]() -> std::optional<RepairStep> {
    if (now - r.since_unix <= cfg.reboot_timeout_s) return std::nullopt;
    return replace(s, "not back from reboot within " + std::to_string(cfg.reboot_timeout_s) + "s",
                   now);
  };
  // After a redrain the reason is Vigil's own again, without Slurm's note: still this case while
  // the node is DOWN (ReturnToService 0 or 1 keeps it so after it registers).
  if (r.stage == RepairStage::kRebooting &&
      (slurm::reboot_timed_out(*slurm) ||
       (r.redrained && slurm->down && slurm::drained_by_vigil(*slurm)))) {
    if (auto step = after_reboot_timeout(s, *slurm)) return step;
    return overdue();
  }
  if (r.stage != RepairStage::kNone && !slurm::drained_by_vigil(*slurm))
    return release(s, "drain no longer vigil's: " + slurm->reason);
  // A part drained too often (parts.h): relabelled `replace` once Slurm shows Vigil's drain,
  // busy or not (only the reason changes).
  if (r.stage == RepairStage::kNone && !r.offender.empty() && slurm::drained_by_vigil(*slurm))
    return replace(s, "repeat offender: " + r.offender, now);
  if (r.stage == RepairStage::kRebooting) {
    if (back_from_reboot(*slurm, r)) {
      r.redrained = false;
      r.stage = RepairStage::kRechecking;
      r.since_unix = now;
      r.booted_unix = slurm->boot_time;
      restart_counts(s);
      return RepairStep{Action::kRebooted, "rebooted; waiting for the re-check"};
    }
    return overdue();
  }
  if (r.stage == RepairStage::kResetting) {
    if (now - r.since_unix <= cfg.reset_timeout_s) return std::nullopt;
    return reset_failed(
        s, "no GPU reset report within " + std::to_string(cfg.reset_timeout_s) + "s", now);
  }
  if (r.stage == RepairStage::kRechecking) {
    if (now - r.since_unix <= cfg.recheck_timeout_s) return std::nullopt;
    return replace(s, "no re-check within " + std::to_string(cfg.recheck_timeout_s) + "s", now);
  }
  if (r.stage != RepairStage::kNone || !r.remedy) return std::nullopt;
  if (!idle_for_repair(*slurm) || breaker.open) return std::nullopt;
  return start_rung(s, cfg, load, now);
}

}  // namespace vigil::drainer
