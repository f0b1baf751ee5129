#pragma once
// The ingest log, the drainer's first stage (docs/drainer.md "Stages"): the reports accepted and
// not yet decided, in journal order, and the run ids each node has sent (a report seen again is
// a duplicate). It owns its state and the one lock that guards it; a snapshot or a replay that
// needs it together with the node table takes this lock first (`locked`), as the lock order says.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/drainer/journal.h"
#include "vigil/drainer/run_ids.h"
#include "vigil/report/report.h"

namespace vigil::drainer {

// The log's state as a plain value: what a snapshot holds of it and what a replay rebuilds.
struct IngestState {
  struct Accepted {
    uint64_t seq;  // its journal record
    NodeReport report;
  };
  std::map<std::string, RunIdWindow> seen_runs;  // node -> its recent run ids (run_ids.h)
  std::deque<Accepted> undecided;                // in journal order

  // A report the journal accepted at `seq` (a replayed ReportAccepted record).
  void accepted(uint64_t seq, const NodeReport& r);
  // The report at `seq` was decided: it leaves the queue. Returns it (nullopt: not queued).
  std::optional<NodeReport> decided(uint64_t seq);
  // The log's part of a snapshot: "run_id_digests" (since 2026-11; before, "seen_runs" held the
  // run ids themselves, still read) and "undecided".
  void write(nlohmann::json& snapshot) const;
  VoidResult restore(const nlohmann::json& snapshot);
};

class IngestLog {
 public:
  struct Counts {
    int accepted = 0;
    int duplicates = 0;
  };
  // Journals the reports not seen before (records[k] is reports[k]'s journal record) and queues
  // them, under the lock, so the queue's order is the journal's; not synced. A failed append
  // forgets them again (the client's retry is no duplicate) and returns the journal's error.
  Result<Counts> accept(const std::vector<NodeReport>& reports, std::vector<nlohmann::json> records,
                        Journal& journal);
  // Takes up to `max` of the oldest undecided reports off the queue.
  std::deque<IngestState::Accepted> take(size_t max);
  size_t undecided() const;
  // Waits up to `max` until `stopping`, or until a report waits and the drainer is not `halted`.
  void wait_for_work(std::chrono::milliseconds max, const std::atomic<bool>& stopping,
                     const std::atomic<bool>& halted);
  // Ends the waits: `wake` takes the lock first, so a waiter that is about to wait sees the flag
  // set before the call; `notify` does not (a caller holding the node table's lock may not take
  // this one), and a waiter that misses it sees the flag at its next timeout.
  void wake();
  void notify();
  // Runs f(state) under the lock: a snapshot's copy, a replay.
  template <typename F>
  decltype(auto) locked(F&& f) {
    std::lock_guard lk(mu_);
    return f(s_);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  IngestState s_;
};

}  // namespace vigil::drainer
