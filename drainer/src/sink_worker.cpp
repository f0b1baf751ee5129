// The one sink worker: wait for work (or out a backoff), optionally let a batch pile up, pick
// the newest intent per node, hand the batch to the lane's sink, and apply the outcomes it
// returns. Applying outcomes is the Drainer's alone: done records, attempts, backoff, and the
// node-state correction for a drain that was not issued.
#include "sink_worker.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <tuple>

#include "audit_log.h"
#include "commit.h"
#include "ingest_log.h"
#include "outbox.h"
#include "records.h"
#include "vigil/base/time.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {

int Drainer::run_sink_once(SinkKind k) { return run_lane_once(lane(k)); }

int Drainer::run_lane_once(SinkLane& lane) {
  if (!lane.sink || journal_failed_) return 0;
  const std::vector<Intent> batch = pick(lane);
  if (batch.empty()) return 0;
  const SinkResult result = lane.sink->apply(batch);
  return apply_outcomes(lane, batch, result);
}

std::vector<Intent> Drainer::pick(SinkLane& lane) {
  std::vector<Intent> batch;
  std::vector<uint64_t> superseded;
  {
    std::lock_guard lk(mu_);
    batch = outbox_->pick(lane.spec.kind, lane.spec.ordered, superseded);
  }
  record_done(superseded, DoneOutcome::kSuperseded);
  return batch;
}

int Drainer::apply_outcomes(SinkLane& lane, const std::vector<Intent>& batch, const SinkResult& r) {
  std::map<uint64_t, const Intent*> unanswered;
  for (const auto& i : batch) unanswered[i.id] = &i;
  std::vector<uint64_t> ok, skipped, gave_up, retry;
  std::vector<NotDrained> not_drained;
  for (const auto& o : r.outcomes) {
    auto it = unanswered.find(o.intent_id);
    if (it == unanswered.end()) continue;  // not in this batch, or answered twice
    const Intent& i = *it->second;
    unanswered.erase(it);
    switch (o.kind) {
      case OutcomeKind::kOk:
        ok.push_back(i.id);
        break;
      case OutcomeKind::kNotDrained:
        not_drained.push_back({i, o.why, o.state});
        [[fallthrough]];
      case OutcomeKind::kSkipped:
        skipped.push_back(i.id);
        break;
      case OutcomeKind::kRetry:
        // Out of attempts: given up (the sink reported the error; the node's next decision
        // makes a new intent).
        (lane.settings.retry.gives_up(i) ? gave_up : retry).push_back(i.id);
        break;
      case OutcomeKind::kGaveUp:
        gave_up.push_back(i.id);
        break;
    }
  }
  for (const auto& [id, i] : unanswered) retry.push_back(id);  // a sink that said nothing
  observe_outcomes(lane, batch, r, gave_up);
  record_done(ok, DoneOutcome::kOk);
  record_done(skipped, DoneOutcome::kSkipped);
  record_done(gave_up, DoneOutcome::kError);
  correct_not_drained(not_drained);
  {
    std::lock_guard lk(mu_);
    outbox_->retry(retry);
    // Nothing left to retry: nothing to wait for.
    lane.backoff_ms =
        r.back_off && !retry.empty() ? lane.settings.retry.next_backoff_ms(lane.backoff_ms) : 0;
  }
  if (lane.settings.sync_done && !r.back_off) (void)committed(journal_->sync(), "sync (sink)");
  return static_cast<int>(retry.size());
}

void Drainer::record_done(const std::vector<uint64_t>& ids, DoneOutcome outcome) {
  if (ids.empty()) return;
  std::lock_guard lk(mu_);
  outbox_->done(ids);
  (void)committed(journal_->append({to_json(RecordBody{IntentsDone{ids, outcome}})}),
                  "append (intents done)");
  refresh_gauges_locked();
}

void Drainer::correct_not_drained(const std::vector<NotDrained>& not_drained) {
  if (not_drained.empty()) return;
  Commit c;
  {
    std::lock_guard lk(mu_);
    for (const auto& k : not_drained) {
      auto it = nodes_.find(k.intent.node);
      // Only the decision this intent came from is undone; a newer one stands.
      if (it == nodes_.end() || !it->second.drained_by_vigil ||
          it->second.reason != k.intent.reason)
        continue;
      if (outbox_->newer(SinkKind::kSlurm, k.intent.node, k.intent.id)) continue;
      apply_decision_locked(undone_drain(it->second, k.state, k.why, breaker_), nullptr, 0, c,
                            Action::kDrainSkipped);
    }
    if (!append_locked(c, "append (drain not applied)").ok()) return;
  }
  (void)publish(c, "sync (drain not applied)");
}

// Every sink's outcomes are counted and audited here, in one form: one audit line per batch
// and (action, outcome, reason, why, detail), listing its nodes; vigil_actions_total counts one
// per intent tried.
void Drainer::observe_outcomes(const SinkLane& lane, const std::vector<Intent>& batch,
                               const SinkResult& r, const std::vector<uint64_t>& gave_up) {
  std::map<uint64_t, const Intent*> by_id;
  for (const auto& i : batch) by_id[i.id] = &i;
  using Key = std::tuple<IntentAction, std::string, std::string, std::string, std::string>;
  std::map<Key, std::vector<std::string>> lines;
  const std::string sink(lane.spec.name);
  for (const auto& o : r.outcomes) {
    auto it = by_id.find(o.intent_id);
    if (it == by_id.end()) continue;
    const Intent& i = *it->second;
    const Metrics::Outcome mo = o.kind == OutcomeKind::kOk ? Metrics::Outcome::kOk
                                : o.kind == OutcomeKind::kRetry || o.kind == OutcomeKind::kGaveUp
                                    ? Metrics::Outcome::kError
                                    : Metrics::Outcome::kSkipped;
    metrics_.on_action(i.action, lane.spec.kind, mo);
    const std::string outcome(Metrics::outcome_name(mo));
    lines[{i.action, outcome, i.reason, o.why, o.detail}].push_back(i.node);
  }
  if (!gave_up.empty()) metrics_.on_given_up(sink, static_cast<double>(gave_up.size()));
  const std::string now = rfc3339_utc(clock_.now_unix());
  for (const auto& [k, nodes] : lines) {
    const auto& [action, outcome, reason, why, detail] = k;
    // At most 20 names a line: with slurmctld down every backoff retries every pending node.
    constexpr size_t kShown = 20;
    nlohmann::json a{{"time", now},
                     {"event", "action"},
                     {"sink", sink},
                     {"action", std::string(to_string(action))},
                     {"nodes", std::vector<std::string>(
                                   nodes.begin(), nodes.begin() + std::min(nodes.size(), kShown))},
                     {"outcome", outcome}};
    if (nodes.size() > kShown) a["nodes_total"] = nodes.size();
    if (!reason.empty()) a["reason"] = reason;
    if (!why.empty()) a[outcome == "error" ? "error" : "why"] = why;
    if (!detail.empty()) a["detail"] = detail;
    audit_->write(a);
  }
  for (uint64_t id : gave_up)
    if (auto it = by_id.find(id); it != by_id.end())
      audit_->write({{"time", now},
                     {"event", "given_up"},
                     {"sink", sink},
                     {"action", std::string(to_string(it->second->action))},
                     {"node", it->second->node},
                     {"intent", id}});
}

bool Drainer::has_work_locked(SinkKind k) const { return outbox_->has_work(k); }

void Drainer::loop_sink(SinkLane& lane) {
  while (!stopping_) {
    bool backing_off = false;
    {
      std::unique_lock lk(mu_);
      backing_off = lane.backoff_ms > 0;
      if (backing_off) {
        lane.cv.wait_for(lk, std::chrono::milliseconds(lane.backoff_ms),
                         [&] { return stopping_.load(); });
      } else {
        lane.cv.wait_for(lk, std::chrono::seconds(1), [&] {
          return stopping_ || (has_work_locked(lane.spec.kind) && !journal_failed_);
        });
      }
      if (stopping_) break;
      if (!has_work_locked(lane.spec.kind) || journal_failed_) continue;
    }
    // Let decisions arriving together pile up: for Slurm, one RPC per reason for all of them.
    if (!backing_off && lane.settings.batch_window_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(lane.settings.batch_window_ms));
    run_lane_once(lane);
  }
}

}  // namespace vigil::drainer
