#pragma once
// Slurm drain reasons and ownership: the one place that knows Vigil's "vigil:" prefix.
// A reason reads "vigil: <short name> <detail>": plain `sinfo -R` prints only 20 characters, so
// the prefix and the check's short name come first. Vigil only ever lifts a drain whose reason
// starts with its prefix, and never touches a DOWN, FAIL or MAINT node.
#include <cstddef>
#include <string>
#include <string_view>

#include "vigil/slurm/slurm_api.h"

namespace vigil::slurm {

inline constexpr std::string_view kReasonPrefix = "vigil:";
// The repair ladder's word for "reset this node's GPUs before its re-check": the drainer writes
// "vigil: reset-gpu <the drain's text>", vigil-submit reads it (docs/repair.md "GPU reset").
inline constexpr std::string_view kResetGpuWord = "reset-gpu";

// "vigil: <short_name> <detail>", sanitized (printable ASCII, runs of blanks and control
// characters folded into one space), at most max_len characters.
std::string make_reason(std::string_view short_name, std::string_view detail, size_t max_len = 200);

bool reason_is_vigil(std::string_view reason);
bool is_reset_gpu_reason(std::string_view reason);  // "vigil: reset-gpu ..."
bool untouchable(const SlurmNodeInfo& n);           // DOWN, FAIL or MAINT: never touched
bool drained_by_vigil(const SlurmNodeInfo& n);
bool drained_by_other(const SlurmNodeInfo& n);
// Undrained inside Vigil's own hold (vigil_hold, not drained): the seconds of a held re-check
// between UNDRAIN and the allocation, after which the drain and its reason come back
// (docs/recheck.md). Not a drain someone lifted: ownership and the repair ladder stay as they are.
bool held_by_vigil(const SlurmNodeInfo& n);
// DOWN because Slurm gave up on a reboot (ResumeTimeout, slurm.conf(5)) with Vigil's reason, to
// which it appended " : reboot timed out" (node_mgr.c set_node_down_ptr). Measured with
// ReturnToService=2 (docs/repair.md "Slurm's own timeout"): 22.05 lifts the drain with it, 24.11
// and 26.05 keep it.
bool reboot_timed_out(const SlurmNodeInfo& n);

}  // namespace vigil::slurm
