#pragma once
// The drainer's one vocabulary of what happens to a node: decisions, a node's last action, the
// events the sinks get and the repair ladder's steps all say it with Action.
#include <string_view>

#include "vigil/base/enum_names.h"

namespace vigil::drainer {

// What happened to a node, or to the breaker: one vocabulary for a decision's action, the node's
// last action (NodeRecord::last_action) and the type of the event every sink gets (intent.h
// NodeEvent). The policy engine and the repair ladder decide the first eleven:
// kReboot: the repair ladder asks Slurm to reboot the node; kReplace: the node stays drained
// with a "vigil: replace ..." reason (a drain with the new reason) for a person (repair.h).
// kResetGpu: the ladder asks for a GPU reset (the reason becomes "vigil: reset-gpu ...");
// kResetPassed / kResetFailed: its outcome, the drain's own reason back (repair.h).
// The others are events of other steps: kDrainSkipped, the Slurm sink found the node not Vigil's
// to drain after all; kRebooted, the ladder saw the node back from its reboot; kRedrain, Vigil's
// drain back on a node whose reboot Slurm's ResumeTimeout ended (repair.h); the breaker's events
// carry no node. The spellings are the journal's, the snapshots' and the webhook's: never rename.
enum class Action {
  kNone,
  kDrain,
  kResume,
  kWouldDrain,
  kWouldResume,
  kBreakerBlocked,
  kReboot,
  kReplace,
  kResetGpu,
  kResetPassed,
  kResetFailed,
  kDrainSkipped,
  kRebooted,
  kRedrain,
  kBreakerOpened,
  kBreakerClosed,
  kBreakerReset
};
inline constexpr EnumName<Action> kActionNames[] = {{Action::kNone, "none"},
                                                    {Action::kDrain, "drain"},
                                                    {Action::kResume, "resume"},
                                                    {Action::kWouldDrain, "would_drain"},
                                                    {Action::kWouldResume, "would_resume"},
                                                    {Action::kBreakerBlocked, "breaker_blocked"},
                                                    {Action::kReboot, "reboot"},
                                                    {Action::kReplace, "replace"},
                                                    {Action::kResetGpu, "reset_gpu"},
                                                    {Action::kResetPassed, "reset_passed"},
                                                    {Action::kResetFailed, "reset_failed"},
                                                    {Action::kDrainSkipped, "drain_skipped"},
                                                    {Action::kRebooted, "rebooted"},
                                                    {Action::kRedrain, "redrain"},
                                                    {Action::kBreakerOpened, "breaker_opened"},
                                                    {Action::kBreakerClosed, "breaker_closed"},
                                                    {Action::kBreakerReset, "breaker_reset"}};
inline std::string_view to_string(Action a) { return name_of(kActionNames, a, "none"); }
// One the policy engine or the repair ladder decides (kNone to kResetFailed): what a journaled
// decision may hold. A node's last action is one of these or kDrainSkipped.
constexpr bool is_decided(Action a) {
  switch (a) {  // every value, no default: a new Action must be placed here (-Wswitch)
    case Action::kNone:
    case Action::kDrain:
    case Action::kResume:
    case Action::kWouldDrain:
    case Action::kWouldResume:
    case Action::kBreakerBlocked:
    case Action::kReboot:
    case Action::kReplace:
    case Action::kResetGpu:
    case Action::kResetPassed:
    case Action::kResetFailed:
      return true;
    case Action::kDrainSkipped:
    case Action::kRebooted:
    case Action::kRedrain:
    case Action::kBreakerOpened:
    case Action::kBreakerClosed:
    case Action::kBreakerReset:
      return false;
  }
  return false;
}

}  // namespace vigil::drainer
