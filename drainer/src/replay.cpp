// Recovery: state = snapshot + the journal records after it; and the snapshots themselves.
#include <malloc.h>

#include <nlohmann/json.hpp>

#include "commit.h"
#include "ingest_log.h"
#include "outbox.h"
#include "records.h"
#include "sinks.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

// An intent read back from the journal; an unknown sink or action stops the replay.
Result<Intent> replayed_intent(const nlohmann::json& j, const std::string& where) {
  auto i = intent_from_json(j);
  if (!i.ok()) return Error{i.error().to_string(), where};
  return i;
}

}  // namespace

VoidResult Drainer::replay(const Recovered& rec, IngestState& in) {
  if (rec.snapshot) {
    VIGIL_TRY(auto r, replay_snapshot(*rec.snapshot, in));
    (void)r;
  }
  for (size_t k = 0; k < rec.records.size(); ++k) {
    auto r = record_from_json(rec.records[k]);
    // A record this build cannot read stops the replay: skipping it would rebuild a wrong
    // table (a lost drain, a breaker that forgot its window) and act on it.
    if (!r.ok()) {
      const std::string at =
          k < rec.positions.size() ? rec.positions[k] : "record " + std::to_string(k);
      return Error{r.error().to_string(), "replay(" + journal_->dir() + "/" + at + ")"};
    }
    replay_record(*r, in);
  }
  return ok_result();
}

VoidResult Drainer::replay_snapshot(const nlohmann::json& s, IngestState& in) {
  VIGIL_TRY(auto ingested, in.restore(s));
  (void)ingested;
  try {
    for (const auto& nj : s.at("nodes")) {
      VIGIL_TRY(auto ns, node_record_from_json(nj));
      nodes_[ns.node] = std::move(ns);
    }
    VIGIL_TRY(breaker_, breaker_state_from_json(s.at("breaker")));
    for (const auto& ij : s.at("pending")) {
      VIGIL_TRY(Intent i, replayed_intent(ij, "replay(snapshot pending)"));
      if (!sink_spec(i.sink).ordered)
        if (auto n = nodes_.find(i.node); n != nodes_.end())
          i.event = state_event(n->second, Action::kNone);
      outbox_->add(std::move(i));
    }
    outbox_->restore_next_id(s.value("next_intent_id", uint64_t{1}));
    if (slow_ && s.contains("detect")) {
      VIGIL_TRY(auto engine, detect::Engine::restore(s.at("detect"), cfg_.detection.engine));
      *slow_ = std::move(engine);
    }
  } catch (const std::exception& e) {
    return Error{e.what(), "replay(snapshot)"};
  }
  return ok_result();
}

void Drainer::replay_record(const JournalRecord& rec, IngestState& in) {
  std::visit(Overloaded{
                 [&](const ReportAccepted& a) { in.accepted(rec.seq, a.report); },
                 [&](const Decided& d) {
                   const auto report = d.report_seq ? in.decided(d.report_seq) : std::nullopt;
                   if (report && slow_) {
                     // The detection engine learns from decided reports: judge them again, in
                     // journal order, so it rebuilds the same baselines.
                     auto prev = nodes_.find(report->node);
                     (void)judge_slow_locked(*report,
                                             prev == nodes_.end() ? nullptr : &prev->second);
                   }
                   apply_locked(d);
                   for (Intent i : d.intents) {
                     // A sink that converges to the node's state gets it from the decision; one
                     // that delivers events journaled its event with the intent.
                     if (!sink_spec(i.sink).ordered) i.event = state_event(d.record, d.action);
                     outbox_->add(std::move(i));
                   }
                 },
                 [&](const IntentsDone& d) { outbox_->done(d.ids); },
                 [&](const BreakerReset& b) {
                   apply_locked(b);
                   outbox_->add(b.intents);
                 },
             },
             rec.body);
}

// The state a snapshot holds, copied under the locks; serialised after they are released.
struct Drainer::StateCopy {
  std::map<std::string, NodeRecord> nodes;
  IngestState ingest;
  std::map<uint64_t, Intent> pending;
  BreakerState breaker;
  uint64_t next_intent_id = 1;
  std::optional<nlohmann::json> detect;
};

Drainer::StateCopy Drainer::copy_state_locked(const IngestState& in) const {
  StateCopy c{nodes_, in, outbox_->owed(), breaker_, outbox_->next_id(), std::nullopt};
  if (slow_) c.detect = slow_->snapshot();
  return c;
}

nlohmann::json Drainer::snapshot_json(const StateCopy& c) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& [n, s] : c.nodes) nodes.push_back(to_json(s));
  nlohmann::json pend = nlohmann::json::array();
  for (const auto& [id, i] : c.pending) pend.push_back(to_json(i));
  nlohmann::json out = {{"version", 1},
                        {"nodes", nodes},
                        {"breaker", to_json(c.breaker)},
                        {"pending", pend},
                        {"next_intent_id", c.next_intent_id}};
  c.ingest.write(out);
  if (c.detect) out["detect"] = *c.detect;
  return out;
}

VoidResult Drainer::snapshot_now() {
  // One snapshot at a time; ingest and decisions wait only while the state is taken, not while
  // it is serialised, written and fsync'ed (they did, and it halved ingest throughput:
  // drainer_ingest_bench's "no snapshot during the run" variant, docs/drainer.md "Benchmark").
  std::lock_guard sl(snapshot_mu_);
  // Memory may hold decisions the journal does not: never make it the next run's truth.
  if (journal_failed_) return Error{"the journal failed: memory is not snapshotted", "snapshot"};
  std::optional<StateCopy> state;
  uint64_t last = 0;
  {
    std::lock_guard dl(decide_mu_);
    const VoidResult taken = ingest_->locked([&](const IngestState& in) -> VoidResult {
      std::lock_guard lk(mu_);
      // Again under the locks. A failure reported outside them (ingest's) has already made the
      // journal refuse every cut (journal.h), so no snapshot can follow a torn record.
      if (journal_failed_)
        return Error{"the journal failed: memory is not snapshotted", "snapshot"};
      VIGIL_TRY(last, journal_->cut());
      state = copy_state_locked(in);  // a copy: ~100x faster than building the JSON tree here
      return ok_result();
    });
    if (!taken.ok()) return taken;
  }
  VoidResult written = journal_->write_snapshot(snapshot_json(*state), last);
  state.reset();
  // The snapshot's JSON tree (tens of MB at 10,000 nodes) is freed by now, but glibc keeps freed
  // pages in its arenas: give them back, or the RSS stays at the peak of the largest snapshot.
  ::malloc_trim(0);
  return written;
}

VoidResult Drainer::maybe_snapshot() {
  if (journal_->records_since_snapshot() < static_cast<uint64_t>(cfg_.snapshot_every))
    return ok_result();
  return snapshot_now();
}

}  // namespace vigil::drainer
