#pragma once
// Part history (docs/repair.md "Part history"): which part sits in each GPU slot of a node, from
// the reports' `gpus` (board serial and UUID, NVML), and when Vigil drained the node for that
// part. A part drained `drains` times within `window_s` is a repeat offender: with the repair
// ladder on, its drain is a `replace` (the node stays drained for a person, with the part's
// serial in the reason, which is what an RMA asks for). A different part in a slot (another
// serial, or UUID where the board has no serial) is a swap: the slot's history starts afresh
// (nebius/soperator #1316: a part swap must reset a part's history). Pure; time comes in as `now`.
#include <cstdint>
#include <functional>
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
// in 30 days, is a site's example; a site tunes it.
struct PartRule {
  int drains = 3;
  int64_t window_s = 30 * 86400;
};

// [{"index", "serial"?, "uuid"?, "drains": [...]}]. A wrong type, an index outside 0..1023 or a
// repeated one is an error; a field this build does not know is ignored, as in the rest of the
// node's state (a newer drainer's snapshot still reads after a rollback).
nlohmann::json parts_to_json(const std::vector<PartRecord>& parts);
// one_per_slot: a slot index may appear once (the node's slots), or more often (its departed
// parts, several of which may have left the same slot).
Result<std::vector<PartRecord>> parts_from_json(const nlohmann::json& j, bool one_per_slot = true);

// Whether two records name the same part: an identifier both have is equal (UUID, which NVML
// gives for every GPU, first; then the board serial). Without a shared identifier: no.
bool same_part(const PartRecord& a, const PartRecord& b);

// A part's history follows the part, not the slot ("faults per GPU serial / UUID", as sites ask): a
// GPU moved to another node, or to another slot of the same node, brings its drains with it.
// The lookup answers the drains recorded against a part on *other* nodes (the drainer core's
// node table); nothing when absent.
using PartLookup = std::function<std::vector<int64_t>(const PartRecord&)>;
// A node keeps the parts that left it with drains against them (`departed`, newest last, at most
// this many), so that a part pulled from one node and fitted to another days later still brings
// its history.
inline constexpr size_t kMaxDepartedParts = 16;

// Brings the slots up to date with a report's `gpus`; returns one note per swap ("gpu3 part
// changed (serial 1652823054323 -> serial 1652823059999): its history starts afresh", or "...: 2
// earlier drains follow it"). A swap is an identifier present on both sides that differs; one
// missing on either side is the same part, its identifier filled in: a board whose serial
// cannot be read this once (a sick InfoROM) keeps its history. A part that leaves a slot with
// drains goes to `departed`; a part that arrives takes the drains recorded against it in this
// node's slots and departed parts and, through `elsewhere`, on other nodes (each drain once).
std::vector<std::string> update_parts(std::vector<PartRecord>& parts,
                                      std::vector<PartRecord>& departed,
                                      const std::vector<GpuPart>& gpus,
                                      const PartLookup& elsewhere = {});
// The drains recorded against `part` in `records`, added to `out` (sorted, each once).
void collect_drains(const std::vector<PartRecord>& records, const PartRecord& part,
                    std::vector<int64_t>& out);

// The GPU slots a drain counts against: those whose figures break their (confirmed) fail bound
// in results of checks that charge a part (CheckSpec::charges_part: XIDs, ECC, remaps, the
// driver's recovery action, memtest; never clock events, temperature or performance probes),
// but only while they are a strict minority of the node's known parts. A
// fault on most GPUs at once (a fan wall, a PCIe switch, an NVSwitch tray) is the node's, not
// one part's, and counts against none.
std::set<int> failing_gpus(const std::vector<const CheckResult*>& results,
                           const std::vector<PartRecord>& parts);

struct RecordedDrain {
  bool counted = false;                // some part was charged
  std::optional<PartRecord> offender;  // the first part that now reaches the rule's count
};
// Records a drain at `now` for each of `gpus` that has a known part, forgetting drains older
// than the window.
RecordedDrain record_drain(std::vector<PartRecord>& parts, const std::set<int>& gpus, int64_t now,
                           const PartRule& rule);
// Undoes record_drain's entry at `when` (a drain Slurm never applied); nothing for 0.
void forget_drain(std::vector<PartRecord>& parts, int64_t when);

// "gpu3 serial 1652823054323 drained 3 times in 30 days": the why of a repeat offender's replace.
std::string offender_text(const PartRecord& part, const PartRule& rule);

}  // namespace vigil::drainer
