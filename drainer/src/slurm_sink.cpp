#include "slurm_sink.h"

#include "vigil/drainer/repair.h"
#include "vigil/slurm/reason.h"

namespace vigil::drainer {

SlurmSink::SlurmSink(std::shared_ptr<slurm::SlurmApi> slurm, SlurmViewCache& views)
    : slurm_(std::move(slurm)), views_(views) {}

SinkResult SlurmSink::apply(const std::vector<Intent>& batch) {
  // Re-read the batch's nodes right before acting (only those: a 10,000-node table over
  // slurmrestd takes seconds).
  std::vector<std::string> names;
  names.reserve(batch.size());
  for (const auto& i : batch) names.push_back(i.node);
  auto fresh = views_.read_named(names);
  if (!fresh.ok()) return load_failed(batch, fresh.error());
  SinkResult out;
  Rpcs rpcs;
  for (const auto& i : batch)
    if (auto o = judge(i, *fresh.value(), rpcs)) out.outcomes.push_back(std::move(*o));
  const bool acting = !rpcs.drains.empty() || !rpcs.resumes.empty() || !rpcs.reboots.empty();
  // Tables read before or during these RPCs must not be reused by decisions: drop the
  // remembered one now and refuse any read that started before the RPCs ended.
  if (acting) views_.invalidate();
  bool all_ok = true;
  for (const auto& [reason, nodes] : rpcs.drains)
    all_ok = call(IntentAction::kDrain, nodes, reason, out) && all_ok;
  if (!rpcs.resumes.empty()) all_ok = call(IntentAction::kResume, rpcs.resumes, "", out) && all_ok;
  for (const auto& [reason, nodes] : rpcs.reboots) all_ok = reboot(nodes, reason, out) && all_ok;
  // Without RPCs the decisions' table stays as good as it was (the re-read covers only the
  // batch, so it cannot replace it).
  if (acting) views_.invalidate();
  out.back_off = !all_ok;
  return out;
}

SinkResult SlurmSink::load_failed(const std::vector<Intent>& batch, const Error& e) {
  SinkResult out;
  for (const auto& i : batch)
    out.outcomes.push_back(
        IntentOutcome::retry(i.id, "reading Slurm's node table: " + e.to_string()));
  out.back_off = true;
  return out;
}

std::optional<IntentOutcome> SlurmSink::judge(const Intent& i, const SlurmView& view, Rpcs& rpcs) {
  auto it = view.find(i.node);
  const slurm::SlurmNodeInfo* n = it == view.end() ? nullptr : &it->second;
  if (i.action == IntentAction::kReboot) return judge_reboot(i, n, rpcs);
  if (i.action == IntentAction::kRelabel) return judge_relabel(i, n, rpcs);
  if (i.action == IntentAction::kRedrain) return judge_redrain(i, n, rpcs);
  return i.action == IntentAction::kDrain ? judge_drain(i, n, rpcs) : judge_resume(i, n, rpcs);
}

std::optional<IntentOutcome> SlurmSink::judge_reboot(const Intent& i, const slurm::SlurmNodeInfo* n,
                                                     Rpcs& rpcs) {
  if (!n) return IntentOutcome::skipped(i.id, "node unknown to Slurm");
  if (!n->drain || !slurm::drained_by_vigil(*n) || is_replace_reason(n->reason))
    return IntentOutcome::skipped(i.id, "not drained by vigil for a repair: " + n->reason);
  // Already rebooted (the done record lost in a crash): a boot after the decision.
  if (i.decided_unix && n->boot_time >= i.decided_unix && !n->down)
    return IntentOutcome::ok(i.id, "already rebooted");
  if (n->reboot_pending) return IntentOutcome::ok(i.id, "a reboot is already pending");
  if (n->state != "IDLE" || n->completing || n->not_responding || slurm::untouchable(*n))
    return IntentOutcome::skipped(i.id, "node not idle (" + n->state + "); not rebooted");
  rpcs.reboots[i.reason].push_back(&i);
  return std::nullopt;
}

// The GPU reset rung's reasons: only the reason of a drain that is still Vigil's (and not a
// `replace`, a person's now) changes, in the same RPC as a drain with that reason.
std::optional<IntentOutcome> SlurmSink::judge_relabel(const Intent& i,
                                                      const slurm::SlurmNodeInfo* n, Rpcs& rpcs) {
  if (!n) return IntentOutcome::skipped(i.id, "node unknown to Slurm");
  if (!n->drain || !slurm::drained_by_vigil(*n) || is_replace_reason(n->reason))
    return IntentOutcome::skipped(i.id, "not relabelled: drain no longer vigil's: " + n->reason);
  if (n->reason == i.reason) return IntentOutcome::ok(i.id, "already labelled");
  rpcs.drains[i.reason].push_back(&i);
  return std::nullopt;
}

// Retried like every Slurm call (slurmctld unreachable, scontrol timed out). A reboot slurmctld
// keeps refusing (no RebootProgram) stays pending (vigil_pending_actions, alert
// VigilActionsPending) until the ladder's reboot_timeout_s replaces it with `replace`.
bool SlurmSink::reboot(const std::vector<const Intent*>& batch, const std::string& reason,
                       SinkResult& out) {
  std::vector<std::string> names;
  for (const auto* i : batch) names.push_back(i->node);
  VoidResult res = slurm_->reboot(names, reason);
  for (const auto* i : batch)
    out.outcomes.push_back(res.ok() ? IntentOutcome::ok(i->id)
                                    : IntentOutcome::retry(i->id, res.error().to_string()));
  return res.ok();
}

std::optional<IntentOutcome> SlurmSink::judge_drain(const Intent& i, const slurm::SlurmNodeInfo* n,
                                                    Rpcs& rpcs) {
  if (!n) return IntentOutcome::not_drained(i.id, "node unknown to Slurm", NodeState::kError);
  // A replace only relabels Vigil's own drain (also on a node that went DOWN in its reboot); it
  // never drains a node that is no longer drained, or drained by someone else.
  // Told by its journaled reason: the Slurm lane does not journal the event, so after a restart
  // from a snapshot its type is not "replace" any more.
  if (is_replace_reason(i.reason)) {
    if (!n->drain || !slurm::drained_by_vigil(*n))
      return IntentOutcome::skipped(i.id, "not relabelled: drain no longer vigil's");
    if (n->reason == i.reason) return IntentOutcome::ok(i.id, "already marked");
    rpcs.drains[i.reason].push_back(&i);
    return std::nullopt;
  }
  if (slurm::untouchable(*n))
    return IntentOutcome::not_drained(i.id, "node is DOWN/FAIL/MAINT", NodeState::kWarn);
  if (slurm::drained_by_other(*n))
    return IntentOutcome::not_drained(i.id, "drained by another owner: " + n->reason,
                                      NodeState::kDrained);
  // Already applied (e.g. before a crash): not repeated.
  if (n->drain && n->reason == i.reason) return IntentOutcome::ok(i.id, "already drained");
  rpcs.drains[i.reason].push_back(&i);
  return std::nullopt;
}

// The one DOWN node Vigil drains: one whose reboot Slurm's ResumeTimeout ended, taking Vigil's
// drain with it (22.05; the reason is still Vigil's, " : reboot timed out" appended). Drained
// while DOWN, it registers IDLE+DRAIN instead of returning to service unchecked (repair.cpp
// after_reboot_timeout, measured on the local cluster). Judged on the node as Slurm shows it now,
// never as a drain: a node no longer in that state (an admin resumed it, it registered and
// Slurm returned it) is left as it is, and the original drain's bookkeeping is not touched.
std::optional<IntentOutcome> SlurmSink::judge_redrain(const Intent& i,
                                                      const slurm::SlurmNodeInfo* n, Rpcs& rpcs) {
  if (!n) return IntentOutcome::skipped(i.id, "node unknown to Slurm");
  if (n->drain && n->reason == i.reason) return IntentOutcome::ok(i.id, "already drained");
  if (!slurm::reboot_timed_out(*n) || n->drain || n->fail || n->maint)
    return IntentOutcome::skipped(
        i.id, "not drained again: no longer DOWN from a timed-out reboot (" + n->state + ")");
  rpcs.drains[i.reason].push_back(&i);
  return std::nullopt;
}

std::optional<IntentOutcome> SlurmSink::judge_resume(const Intent& i, const slurm::SlurmNodeInfo* n,
                                                     Rpcs& rpcs) {
  if (!n) return IntentOutcome::skipped(i.id, "node unknown to Slurm");
  if (slurm::held_by_vigil(*n))
    return IntentOutcome::skipped(i.id, "held for its re-check (drain comes back first)");
  if (!n->drain) return IntentOutcome::ok(i.id, "already resumed");
  if (!slurm::drained_by_vigil(*n))
    return IntentOutcome::skipped(i.id, "drain reason not owned by vigil: " + n->reason);
  if (slurm::untouchable(*n) && !i.by_operator)
    return IntentOutcome::skipped(i.id, "node is DOWN/FAIL/MAINT");
  rpcs.resumes.push_back(&i);
  return std::nullopt;
}

bool SlurmSink::call(IntentAction action, const std::vector<const Intent*>& batch,
                     const std::string& reason, SinkResult& out) {
  std::vector<std::string> names;
  for (const auto* i : batch) names.push_back(i->node);
  VoidResult res =
      action == IntentAction::kDrain ? slurm_->drain(names, reason) : slurm_->undrain(names);
  for (const auto* i : batch)
    out.outcomes.push_back(res.ok() ? IntentOutcome::ok(i->id)
                                    : IntentOutcome::retry(i->id, res.error().to_string()));
  return res.ok();
}

}  // namespace vigil::drainer
