#pragma once
// Previous readings of monotonic hardware counters (PCIe replays, NVLink replay/recovery/CRC),
// kept as JSON in <state_dir>/<check>.json so a check reports what changed since its last run
// rather than totals accumulated since the driver loaded.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/checks/result.h"

namespace vigil::nvml {

class CounterState {
 public:
  // Reads <state_dir>/<check>.json; an empty state_dir disables the store. A missing file
  // means "first run"; an unreadable or malformed one is treated the same and noted.
  CounterState(std::string state_dir, std::string_view check);

  bool enabled() const { return !dir_.empty(); }
  // Delta against the previous reading of `key` and remembers `current`. nullopt when there
  // was no previous reading (baseline). A counter below its previous value was reset
  // (driver reload, GPU reset): the delta is the new value.
  std::optional<std::uint64_t> update(const std::string& key, std::uint64_t current);
  // Number of keys that had no previous reading in this run.
  int baselines() const { return baselines_; }
  // Non-empty when the previous file existed but could not be used.
  const std::string& load_problem() const { return load_problem_; }
  // Writes the current readings atomically (temp file + rename).
  VoidResult save() const;

 private:
  std::string dir_;
  std::string path_;
  std::string check_;
  std::map<std::string, std::uint64_t> previous_;
  std::map<std::string, std::uint64_t> current_;
  int baselines_ = 0;
  std::string load_problem_;
};

}  // namespace vigil::nvml
