#pragma once
// Previous readings of counters that only grow (PCIe replays, NVLink errors, InfiniBand port
// error counters), kept as JSON in <state_dir>/<check>.<node>.json so a check reports what
// changed since its last run instead of totals accumulated since the driver loaded. One file
// per node: several simulated nodes may share a state dir on one host (demo, tests).
// The same file keeps a check's recent healthy figures (all_reduce busbw), the node's own
// expectation when it decides whether to repeat a run (docs/detection.md).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"

namespace vigil {

// A node name made safe for a file name ("local" when empty).
std::string file_safe(std::string_view s);

class CounterState {
 public:
  // Reads the previous file; an empty state_dir disables the store. A missing file means
  // "first run"; an unreadable or malformed one is treated the same and noted.
  CounterState(std::string state_dir, std::string_view check, std::string_view node);

  struct Change {
    std::optional<std::uint64_t> delta;  // nullopt: no previous reading (baseline)
    bool reset = false;  // counter went down (driver reload, GPU reset, perfquery -x): delta is
                         // the new value, counted from zero since the reset
  };

  bool enabled() const { return !dir_.empty(); }
  // Compares with the previous reading of `key` and remembers `current`.
  Change update(const std::string& key, std::uint64_t current);
  // The reading of `key` the previous run saved; nullopt on a first run or for a new key.
  std::optional<std::uint64_t> previous(const std::string& key) const;
  // Number of keys that had no previous reading in this run.
  int baselines() const { return baselines_; }
  bool has_previous() const { return !previous_.empty(); }
  // Seconds since the previous reading was saved, when known.
  std::optional<std::int64_t> seconds_since_previous() const;
  // Non-empty when the previous file existed but could not be used.
  const std::string& load_problem() const { return load_problem_; }
  // The recent figures remembered under `key`, oldest first (empty on a first run).
  const std::vector<double>& recent_figures(const std::string& key) const;
  // Appends `value` to the figures of `key`, keeping the latest `keep` (saved by save()).
  void remember_figure(const std::string& key, double value, std::size_t keep);

  // Writes the current readings atomically (temp file + rename). Keys read last time but not
  // this time (a port that could not be read) keep their previous value.
  VoidResult save() const;

 private:
  std::string dir_;
  std::string path_;
  std::string check_;
  std::map<std::string, std::uint64_t> previous_;
  std::map<std::string, std::uint64_t> current_;
  std::map<std::string, std::vector<double>> figures_;
  std::optional<std::int64_t> previous_time_;
  int baselines_ = 0;
  std::string load_problem_;
};

}  // namespace vigil
