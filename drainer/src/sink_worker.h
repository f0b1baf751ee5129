#pragma once
// One sink's lane in the drainer: its sink, its settings from the sink table and its worker's
// wake-up. Every sink is served by the same worker loop (Drainer::loop_sink); only the lane
// differs.
#include <condition_variable>
#include <cstdint>
#include <memory>

#include "sinks.h"

namespace vigil::drainer {

struct SinkLane {
  SinkLane(const SinkSpec& s, LaneSettings l) : spec(s), settings(l) {}

  const SinkSpec& spec;
  const LaneSettings settings;
  std::unique_ptr<Sink> sink;  // null: the sink is disabled
  std::condition_variable cv;  // waited on with Drainer::mu_
  int64_t backoff_ms = 0;      // guarded by Drainer::mu_
};

}  // namespace vigil::drainer
