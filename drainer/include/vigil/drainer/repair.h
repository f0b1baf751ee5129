#pragma once
// The repair ladder (docs/repair.md): what Vigil does with a node it drained once the node is
// idle. Pure: the node's state, its Slurm view, the cluster's repair load and the breaker in,
// the next step out; no I/O, no clock (time comes in as `now`). The drainer core runs it on
// every tick and journals what it decides like any other decision.
//
// A node drained for a fault whose documented remedy is a GPU reset or a reboot (the report's
// `remedy`, from NVIDIA's Xid catalogue, the driver's recovery action or the check's own
// source) climbs: reboot through Slurm -> re-check (vigil-submit's held re-check) ->
// resumed when the re-checks pass, or `replace` when the fault comes back, the node does not
// come back from its reboot, it is a repeat offender, or its remedy is hardware service.
// `replace` keeps the node drained with "vigil: replace ..." and Vigil never touches it again
// until a person resumes it. With `repair.reset_gpu` a reset_gpu fault first climbs the GPU
// reset rung: the drain's reason becomes "vigil: reset-gpu ...", vigil-submit's held re-check runs
// `vigil-check repair reset-gpu` for such a node, and its report (the entry gpu_reset) decides:
// reset and back -> re-check as after a reboot; refused, failed or never reported -> the
// reboot rung (or, with reboots off, the node waits drained as before).
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"
#include "vigil/drainer/action.h"
#include "vigil/report/report.h"

namespace vigil::slurm {
struct SlurmNodeInfo;
}

namespace vigil::drainer {

struct NodeRecord;
struct BreakerState;

struct RepairConfig {
  bool reboot = false;     // off by default: a site turns reboots on (`repair.reboot: true`)
  bool reset_gpu = false;  // off by default: the GPU reset rung (`repair.reset_gpu: true`)
  // From asking for a reset to its report: a vigil-submit run must come by (its CronJob
  // period) and srun -Z reach the node. Then the reset counts as failed.
  int64_t reset_timeout_s = 7200;
  int max_resets_per_node = 2;   // per node within node_window_s; after that a reset_gpu fault
                                 // goes straight to the reboot rung
  int max_in_repair = 2;         // nodes rebooting or being re-checked after a reboot, at once
  int max_per_window = 10;       // reboots Vigil starts per window, cluster-wide
  int64_t window_s = 3600;       // ... that window
  int max_reboots_per_node = 2;  // per node within node_window_s; a fault after that: replace
  int64_t node_window_s = 30 * 86400;
  // From asking Slurm to reboot to the node registering with a new boot time. NVIDIA's
  // NVSentinel notes bare-metal reboots "can take close to 30 minutes" (NVIDIA/NVSentinel #126).
  int64_t reboot_timeout_s = 3600;
  // What a reboot takes before the node is back: vigil-reboot's bug report (its default
  // VIGIL_BUG_REPORT_TIMEOUT 120 s + 10 s to kill it) and the node's boot (`repair.boot_time_s`).
  // Slurm marks a node DOWN "reboot timed out" when it is not back within ResumeTimeout
  // (slurm.conf(5), default 60 s; review W2), so the reboot rung is refused while Slurm's
  // ResumeTimeout (resume_timeout_s, read from slurmctld at start; 0: unknown) is shorter.
  int64_t bug_report_s = 130;
  int64_t boot_time_s = 600;
  int64_t resume_timeout_s = 0;
  // From the node's return to its first report after it: re-checks that never come (or only
  // ever `error`) must not hold a slot of max_in_repair forever.
  int64_t recheck_timeout_s = 86400;
  // Where the report that drained a node is kept as evidence ("" = <state_dir>/evidence), one
  // file per drain while reboots are on; its path travels in events and the Node annotation.
  std::string evidence_dir;
  // Part history's repeat-offender rule (parts.h): a GPU part Vigil drained the node for
  // part_drains times within part_window_s is drained as `replace` while reboots are on.
  int part_drains = 3;
  int64_t part_window_s = 30 * 86400;

  bool ladder_on() const { return reboot || reset_gpu; }
};

enum class RepairStage { kNone, kRebooting, kRechecking, kReplace, kResetting };
inline constexpr EnumName<RepairStage> kRepairStageNames[] = {
    {RepairStage::kNone, "none"},
    {RepairStage::kRebooting, "rebooting"},
    {RepairStage::kRechecking, "rechecking"},
    {RepairStage::kReplace, "replace"},
    {RepairStage::kResetting, "resetting"}};
inline std::string_view to_string(RepairStage s) { return name_of(kRepairStageNames, s, "none"); }

struct RepairState {
  RepairStage stage = RepairStage::kNone;
  std::optional<Remedy> remedy;  // the strongest remedy among the checks that drove the drain
  int64_t since_unix = 0;        // when the stage began
  std::vector<int64_t> reboots;  // when Vigil asked Slurm to reboot the node (node_window_s)
  std::string evidence;          // the draining report's evidence file, this drain episode
  // The driver's bug report the GPU reset kept on the node before resetting (the gpu_reset
  // result's `evidence`: its path on the node), this drain episode.
  std::string bug_report;
  int64_t booted_unix = 0;  // the boot time slurmd registered with after the reboot
  // Part history (parts.h): when this drain was counted against the node's parts (0: it was
  // not), undone if Slurm never applies the drain; and, for a repeat offender, why the ladder
  // relabels the drain `replace` at its next tick ("gpu3 serial S drained 3 times in 30 days").
  int64_t part_drain_unix = 0;
  std::string offender;
  // The GPU reset rung: when Vigil asked for a reset (node_window_s); the drain's own reason
  // while Slurm shows "vigil: reset-gpu ...", restored after the reset; whether this drain
  // episode had its reset (a second fault goes to the reboot rung); whether the re-check in
  // progress follows a reset rather than a reboot.
  std::vector<int64_t> resets;
  std::string held_reason;
  bool reset_tried = false;
  bool via_reset = false;
  // Slurm's ResumeTimeout ended this reboot and took the drain with it (22.05): Vigil's drain was
  // asked back while the node is DOWN (repair_tick), once.
  bool redrained = false;
};
// {"stage", "remedy"?, "since_unix", "reboots", "evidence"?, "bug_report"?, ...}; absent in
// snapshots written
// before the ladder.
nlohmann::json to_json(const RepairState& r);
Result<RepairState> repair_state_from_json(const nlohmann::json& j);

// "vigil: reset-gpu <the drain's own text>": the reason vigil-submit reads as "reset this
// node's GPUs before its re-check" (docs/repair.md; slurm::is_reset_gpu_reason tells it).
std::string reset_reason(std::string_view reason);

// The stronger of two remedies for the ladder: service > reboot > reset_gpu.
std::optional<Remedy> stronger(std::optional<Remedy> a, std::optional<Remedy> b);

// Nodes in the ladder now, and reboots started within the window, over the node table.
struct RepairLoad {
  int in_repair = 0;
  int started_in_window = 0;
};
RepairLoad repair_load(const std::map<std::string, NodeRecord>& nodes, const RepairConfig& cfg,
                       int64_t now);

// A step of the ladder, as what happens (action.h Action): kReboot, kRebooted (back from the
// reboot, waiting for the re-check), kReplace, kResetGpu (the reason becomes "vigil: reset-gpu
// ..."), kResetFailed (the reset did not come in time, or the rung was turned off: the drain's
// own reason comes back), kRedrain (Vigil's drain again, with its own reason, on a node Slurm set
// DOWN "reboot timed out" and undrained, 22.05, before it registers again), or kNone: the node
// is released from the ladder without a step of its own (the drain is no longer Vigil's in
// Slurm, or reboots were turned off or dry-run on while the node was in the ladder).
struct RepairStep {
  Action move;
  std::string why;  // into the node's note and the event
};

// The next step for `s` on a tick, or nullopt (nothing to do, or waiting: not idle, limits,
// breaker open, Slurm's view unknown). `s` is updated in place when a step is returned. With
// reboots off or in dry-run it only releases nodes still in the ladder.
// slurm: the node's row; null when Slurm's table could not be read (view_read false: wait) or
// has no such node (view_read true: the node leaves the ladder).
std::optional<RepairStep> repair_tick(NodeRecord& s, const slurm::SlurmNodeInfo* slurm,
                                      bool view_read, const RepairConfig& cfg,
                                      const RepairLoad& load, const BreakerState& breaker,
                                      bool dry_run, int64_t now);

// The outcome of a GPU reset the node reported (the report entry gpu_reset) for a node in the
// `resetting` stage: pass or warn -> `rechecking` (reports started before `started_unix`, the
// reset report's end on the node's clock, are not counted); anything else -> back to no
// stage with the drain's own reason, and the reboot rung next (if on). `s` updated in place.
enum class ResetOutcome { kPassed, kFailed };
ResetOutcome apply_reset_result(NodeRecord& s, Status status, int64_t started_unix, int64_t now);

// `s` to the `replace` stage: its reason becomes "vigil: replace <old reason's text> (why)".
void mark_replace(NodeRecord& s, const std::string& why, int64_t now);
// The ladder's stage ends (resumed, released, no longer Vigil's); the reboot history stays.
void end_repair(NodeRecord& s);
// The reason a node the ladder gave up on carries in Slurm: "vigil: replace ...".
bool is_replace_reason(std::string_view reason);
// In the ladder now: resetting, rebooting, or re-checking after either.
bool in_repair(const RepairState& r);
// At the node's return: counters start afresh, so only reports after the reboot decide.
void restart_counts(NodeRecord& s);

}  // namespace vigil::drainer
