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

constexpr std::string_view kStageNames[] = {"none", "rebooting", "rechecking", "replace"};

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

int reboots_since(const RepairState& r, int64_t since) {
  return static_cast<int>(
      std::count_if(r.reboots.begin(), r.reboots.end(), [&](int64_t t) { return t > since; }));
}

// Idle as the ladder needs it: drained by Vigil, no job and none completing, slurmd answering.
bool idle_for_repair(const slurm::SlurmNodeInfo& n) {
  return n.drain && slurm::drained_by_vigil(n) && n.state == "IDLE" && !n.completing &&
         !n.not_responding && !slurm::untouchable(n);
}

std::string days(int64_t s) { return std::to_string(s / 86400) + "d"; }

}  // namespace

std::string_view to_string(RepairStage s) { return kStageNames[static_cast<size_t>(s)]; }

std::optional<RepairStage> repair_stage_from_string(std::string_view s) {
  for (size_t i = 0; i < std::size(kStageNames); ++i)
    if (kStageNames[i] == s) return static_cast<RepairStage>(i);
  return std::nullopt;
}

nlohmann::json to_json(const RepairState& r) {
  nlohmann::json j = {
      {"stage", to_string(r.stage)}, {"since_unix", r.since_unix}, {"reboots", r.reboots}};
  if (r.remedy) j["remedy"] = to_string(*r.remedy);
  return j;
}

Result<RepairState> repair_state_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error{"not an object", "repair"};
  RepairState r;
  auto stage = repair_stage_from_string(j.value("stage", "none"));
  if (!stage) return Error{"unknown stage '" + j.value("stage", "") + "'", "repair.stage"};
  r.stage = *stage;
  if (j.contains("remedy")) {
    auto remedy = remedy_from_string(j.at("remedy").get<std::string>());
    if (!remedy) return Error{"unknown remedy", "repair.remedy"};
    r.remedy = remedy;
  }
  r.since_unix = j.value("since_unix", int64_t{0});
  r.reboots = j.value("reboots", std::vector<int64_t>{});
  return r;
}

std::optional<Remedy> stronger(std::optional<Remedy> a, std::optional<Remedy> b) {
  return rank(b) > rank(a) ? b : a;
}

RepairLoad repair_load(const std::map<std::string, NodeState>& nodes, const RepairConfig& cfg,
                       int64_t now) {
  RepairLoad load;
  for (const auto& [name, s] : nodes) {
    if (s.repair.stage == RepairStage::kRebooting || s.repair.stage == RepairStage::kRechecking)
      load.in_repair++;
    load.started_in_window += reboots_since(s.repair, now - cfg.window_s);
  }
  return load;
}

void mark_replace(NodeState& s, const std::string& why, int64_t now) {
  std::string text = s.reason;
  if (text.rfind(slurm::kReasonPrefix, 0) == 0) text = text.substr(slurm::kReasonPrefix.size());
  text.erase(0, text.find_first_not_of(' '));
  if (text.rfind("replace ", 0) == 0) text = text.substr(8);
  s.reason = slurm::make_reason("replace", text + " (" + why + ")");
  s.repair.stage = RepairStage::kReplace;
  s.repair.since_unix = now;
}

std::optional<RepairStep> repair_tick(NodeState& s, const slurm::SlurmNodeInfo* slurm,
                                      const RepairConfig& cfg, const RepairLoad& load,
                                      const BreakerState& breaker, bool dry_run, int64_t now) {
  if (!cfg.reboot || dry_run || !s.drained_by_vigil) return std::nullopt;
  RepairState& r = s.repair;
  if (r.stage == RepairStage::kRebooting) {
    if (slurm && slurm->boot_time >= r.since_unix && !slurm->down && !slurm->not_responding) {
      r.stage = RepairStage::kRechecking;
      r.since_unix = now;
      return RepairStep{RepairMove::kRebooted, "rebooted; waiting for the re-check"};
    }
    if (now - r.since_unix <= cfg.reboot_timeout_s) return std::nullopt;
    const std::string why =
        "not back from reboot within " + std::to_string(cfg.reboot_timeout_s) + "s";
    mark_replace(s, why, now);
    return RepairStep{RepairMove::kReplace, why};
  }
  if (r.stage != RepairStage::kNone || !r.remedy) return std::nullopt;
  if (!slurm || !idle_for_repair(*slurm) || breaker.open) return std::nullopt;
  if (*r.remedy == Remedy::kService) {
    mark_replace(s, "remedy: service", now);
    return RepairStep{RepairMove::kReplace, "the fault's documented remedy is hardware service"};
  }
  if (reboots_since(r, now - cfg.node_window_s) >= cfg.max_reboots_per_node) {
    const std::string why = "repeat offender: " + std::to_string(cfg.max_reboots_per_node) +
                            " reboots in " + days(cfg.node_window_s);
    mark_replace(s, why, now);
    return RepairStep{RepairMove::kReplace, why};
  }
  if (load.in_repair >= cfg.max_in_repair || load.started_in_window >= cfg.max_per_window)
    return std::nullopt;
  r.stage = RepairStage::kRebooting;
  r.since_unix = now;
  r.reboots.push_back(now);
  std::erase_if(r.reboots, [&](int64_t t) { return t <= now - cfg.node_window_s; });
  return RepairStep{RepairMove::kReboot,
                    "reboot: " + std::string(to_string(*r.remedy)) + " fault, node idle"};
}

}  // namespace vigil::drainer
