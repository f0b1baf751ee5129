#pragma once
// The qualify gate (docs/qualify.md "The gate"): a node that joins the fleet, or comes back from
// the repair ladder's reboot or GPU reset, is held drained until a run of the qualify suite
// passes on it. NVSentinel's node validation does this for new and remediated nodes (design 049,
// issue #1427: "a node reboot or GPU reset completes, but the GPU is still unstable"); Soperator
// drains, checks extensively, then releases or replaces (docs/qualify.md).
//
// Pure: records and reports in, verdicts out. The policy engine holds a new node with the gate's
// drain and resumes a held node only on a pass of the gate's suite; GET /v1/rechecks lists held
// nodes with that suite, and vigil-submit --rechecks-from runs it in their held re-check.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/drainer/config.h"
#include "vigil/report/report.h"

namespace vigil::drainer {

struct NodeRecord;

// The word of the gate's Slurm reasons ("vigil: qualify new node, ..."), its drain cause in the
// reliability figures, and its annotation's name.
inline constexpr std::string_view kGateWord = "qualify";
inline constexpr std::string_view kGateNew = "new";
inline constexpr std::string_view kGateRepaired = "repaired";

// Why `s` is held by the gate now: "new" (held when first heard from), "repaired" (back from a
// reboot or GPU reset with gate.repaired), or "" (not held; a `replace` is a person's).
std::string_view gate_hold(const NodeRecord& s);

// With gate.repaired, the node the ladder just brought back (its `rechecking` stage) is held.
// Returns what to add to the step's note: "; held until the qualify suite passes (qualify
// gate)", or "" when the node is not held.
std::string hold_repaired(NodeRecord& s, const GateConfig& g, int64_t now);

// The gate lets the node go (resumed, Vigil's drain lifted by someone, a hold Slurm refused).
void release_gate(NodeRecord& s);

// Whether a node first heard from now is new to the gate: gate.new_nodes, and the drainer's state
// began (state_began_unix) at least gate.learn_s ago.
bool new_to_gate(const GateConfig& g, int64_t state_began_unix, int64_t now);

// The Slurm reason that holds a new node: "vigil: qualify new node, held until the qualify suite
// passes".
std::string gate_reason(const GateConfig& g);

// A Slurm reason of gate_reason's form ("vigil: qualify ..."): a hold the drainer adopts as one.
bool is_gate_reason(std::string_view reason);

// nullopt when report `r` passes the gate: it is a run of a suite holding gate.suite (report.h
// suite_covers), something in it passed, nothing failed and nothing errored (a check that could
// not run proves nothing). Otherwise why not, for the node's note.
std::optional<std::string> gate_refusal(const NodeReport& r, bool report_fail, const GateConfig& g);

// The gate's run failed on errors alone (a run of its suite, no fail, an error): Vigil's own
// trouble as likely as the node's. After kGateErrorRuns such runs the gate lets the node go to
// its ordinary re-checks rather than hold it, or have the ladder replace it, for Vigil's mistake.
bool gate_errored(const NodeReport& r, bool report_fail, const GateConfig& g);
inline constexpr int kGateErrorRuns = 2;

// Why a node held by the gate is due for its qualify run now (GET /v1/rechecks), or nullopt:
// held, drained by Vigil, not rebooting or resetting (a `replace` is a person's), and never listed
// (last_listed 0) or listed gate.retry_s ago or more.
std::optional<std::string> gate_due(const NodeRecord& s, const GateConfig& g, int64_t now,
                                    int64_t last_listed);

}  // namespace vigil::drainer
