#pragma once
// Part history (docs/repair.md "Part history"): which part sits in each GPU slot of a node, from
// the reports' `gpus` (board serial and UUID, NVML), and when Vigil drained the node for that
// part. A part drained `drains` times within `window_s` is a repeat offender: with the repair
// ladder on, its drain is a `replace` (the node stays drained for a person, with the part's
// serial in the reason, which is what an RMA asks for). A different part in a slot (another
// serial, or UUID where the board has no serial) is a swap: the slot's history starts afresh
// (nebius/soperator #1316: a part swap must reset a part's history). Pure; time comes in as `now`.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/report/report.h"

namespace vigil::drainer {

struct PartRecord {
  int index = 0;  // the GPU slot (NVML index)
  std::string serial, uuid;
  std::vector<int64_t> drains;  // when Vigil drained the node for this part, oldest first
};

// The repeat-offender rule (`repair.part_drains`, `repair.part_window_s`). The default, 3 drains
// in 30 days, is the example of issue 26; a site tunes it.
struct PartRule {
  int drains = 3;
  int64_t window_s = 30 * 86400;
};

// [{"index", "serial"?, "uuid"?, "drains": [...]}]. Strict: an unknown field or a wrong type
// is an error naming it.
nlohmann::json parts_to_json(const std::vector<PartRecord>& parts);
Result<std::vector<PartRecord>> parts_from_json(const nlohmann::json& j);

// Brings the slots up to date with a report's `gpus`; returns one note per swap ("gpu3 part
// changed (serial 1652823054323 -> 1652823059999): its history starts afresh").
std::vector<std::string> update_parts(std::vector<PartRecord>& parts,
                                      const std::vector<GpuPart>& gpus);

// The GPU slots whose figures fail in these results (measurements with a `gpu` that break their
// fail bound).
std::set<int> failing_gpus(const std::vector<const CheckResult*>& results);

// Records a drain at `now` for each of `gpus` that has a known part, forgetting drains older
// than the window; the first part that now reaches the rule's count, if any.
std::optional<PartRecord> record_drain(std::vector<PartRecord>& parts, const std::set<int>& gpus,
                                       int64_t now, const PartRule& rule);

// "gpu3 serial 1652823054323 drained 3 times in 30 days": the why of a repeat offender's replace.
std::string offender_text(const PartRecord& part, const PartRule& rule);

}  // namespace vigil::drainer
