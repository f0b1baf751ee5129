#pragma once
// One sink's lane in the drainer: its sink, its retry policy and its worker's wake-up. Every
// sink is served by the same worker loop (Drainer::loop_sink); only the lane differs.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>

#include "sink.h"

namespace vigil::drainer {

struct RetryPolicy {
  int64_t initial_ms = 500;  // first backoff after a failed batch
  int64_t max_ms = 30000;    // doubled after every failed batch, up to this
  int max_attempts = 0;      // an intent that failed this many times is given up; 0: never

  int64_t next_backoff_ms(int64_t current_ms) const {
    return std::min<int64_t>(max_ms, current_ms ? current_ms * 2 : initial_ms);
  }
  bool gives_up(const Intent& i) const {
    return max_attempts > 0 && i.attempts + 1 >= max_attempts;
  }
};

struct SinkLane {
  SinkLane(SinkKind k, RetryPolicy r, int64_t window_ms, bool sync)
      : kind(k), retry(r), batch_window_ms(window_ms), sync_done(sync) {}

  const SinkKind kind;
  const RetryPolicy retry;
  // Let intents arriving together pile up for this long before a batch (0: no wait).
  const int64_t batch_window_ms;
  // Sync the journal after a batch that did not fail, so its done records are durable at once
  // (Slurm: an applied drain is not even re-checked after a crash). Otherwise the next sync
  // makes them durable; repeating an annotation is harmless.
  const bool sync_done;
  std::unique_ptr<Sink> sink;  // null: the sink is disabled
  std::condition_variable cv;  // waited on with Drainer::mu_
  int64_t backoff_ms = 0;      // guarded by Drainer::mu_
};

}  // namespace vigil::drainer
