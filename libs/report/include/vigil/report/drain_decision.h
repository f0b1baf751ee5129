#pragma once
// What the drainer and the Slurm hooks agree on about draining (docs/hooks.md "Who drains"):
//   - the one default list of fatal checks (a fail drains after one report), and the noisy
//     ones (drain after 3), both derived from the check catalog (check_catalog.h);
//   - the shared policy the drainer sends the hooks with every decision (fatal list, dry-run,
//     circuit breaker) and the hooks keep for the times the drainer cannot be reached;
//   - the verdict the drainer gives for one report when a hook asks for it (request header
//     kDecisionHeader on POST /v1/reports): the hook obeys it instead of draining by itself.
// The wire format is JSON, version-free: a field a reader does not know is ignored, a missing
// one takes its default, so an old drainer (no "decisions") and a new hook work together.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"

namespace vigil {

// Request header: "1" asks the drainer to decide the posted reports before it answers and to
// put its verdicts in the 202 body.
inline constexpr std::string_view kDecisionHeader = "Vigil-Want-Decision";

// Checks whose fail is a fatal hardware finding by default: drain after one report. The
// drainer's policy.fatal_checks defaults to it; a hook that has never heard from the drainer
// uses it. (Each entry is a hard, self-confirming finding: a missing GPU, uncorrectable ECC,
// row-remap failure or pending, retired pages over the limit, an XID whose catalogue action is
// a reset or RMA, a port down, a memtest mismatch, a GPU left busy by a finished job, a CUDA
// context that cannot be created; docs/checks-nvml.md, docs/checks-ib.md, docs/cuda-probes.md
// and docs/hooks.md give each one's source.) The catalog's fatal entries (check_catalog.h).
const std::set<std::string>& default_fatal_checks();

// Checks whose fail is a noisy performance figure: the drainer's default policy drains after
// 3 failing reports instead of 2 (docs/drainer.md). The catalog's noisy entries.
const std::set<std::string>& default_noisy_checks();

// The circuit breaker's defaults (drainer.yaml breaker.*; docs/drainer.md "Circuit breaker").
inline constexpr int kDefaultBreakerMaxDrains = 10;      // new drains per window per group
inline constexpr double kDefaultBreakerMaxPercent = 50;  // ... and at most this % of the group
inline constexpr int64_t kDefaultBreakerWindowS = 3600;  // sliding window

// The part of the drainer's configuration a hook needs when it must act alone.
struct SharedDrainPolicy {
  // What drains after one failing report, as the drainer's policy says (its
  // PolicyConfig::for_check(check, fault_code).drain_after == 1): the checks that do (the fatal
  // list and any check the site set to drain_after 1), the fault codes that make any check do
  // so, and the fault codes whose own drain_after (over 1) overrides both. The drainer sends
  // them with every answer (drainer/src/config.cpp, shared_fatal_rule).
  std::set<std::string> fatal_checks = default_fatal_checks();
  std::set<std::string> fatal_fault_codes;
  std::set<std::string> lenient_fault_codes;
  bool dry_run = false;
  // The drainer's breaker (breaker.* in drainer.yaml), applied by the hook to what Slurm shows:
  // nodes drained with a vigil: reason in the window, per partition.
  int breaker_max_drains = kDefaultBreakerMaxDrains;
  double breaker_max_percent = kDefaultBreakerMaxPercent;
  int64_t breaker_window_s = kDefaultBreakerWindowS;
  // The drainer's breaker was open when it answered: it stays open until an operator resets it,
  // so a hook that cannot reach the drainer holds every drain while its last answer said so.
  bool breaker_open = false;
  std::string source = "built-in defaults";  // or "vigil-drainer at <time>" once cached
  bool unreadable = false;  // set by a reader whose cached copy could not be read (not sent)

  // Whether a failing result of `check` with `fault_code` drains after one report.
  bool is_fatal(std::string_view check, std::string_view fault_code = {}) const;
};

// The most drains a breaker allows in its window for a group of group_size nodes:
// min(max_drains, max(1, floor(group_size * max_percent / 100))). The drainer and the hooks'
// own breaker count with it.
int breaker_cap(int max_drains, double max_percent, int group_size);

nlohmann::json to_json(const SharedDrainPolicy& p);
// Strict on types (a wrong type, a fraction or a boolean where a count belongs, is an error naming
// the field) and ranges (max_drains >= 1, 0 < max_percent <= 100, window_s >= 1), lenient on
// absent fields.
Result<SharedDrainPolicy> shared_policy_from_json(const nlohmann::json& j);

// The drainer's verdict on one report.
enum class DrainVerdict {
  kDrain,           // drain decided and queued for Slurm (counted by the breaker)
  kAlreadyDrained,  // the node is already drained by vigil
  kOtherOwner,      // someone else drained the node: vigil does nothing
  kBreakerHeld,     // the circuit breaker holds the drain
  kDryRun,          // dry-run: would drain, does nothing
  kNoDrain,         // the policy does not drain on this report (not fatal, needs more reports,
                    // node DOWN/FAIL/MAINT or unknown to Slurm)
  kUnknown,         // no verdict (the report was not decided in time, or an old drainer)
};
inline constexpr EnumName<DrainVerdict> kDrainVerdictNames[] = {
    {DrainVerdict::kDrain, "drain"},
    {DrainVerdict::kAlreadyDrained, "already_drained"},
    {DrainVerdict::kOtherOwner, "other_owner"},
    {DrainVerdict::kBreakerHeld, "breaker_held"},
    {DrainVerdict::kDryRun, "dry_run"},
    {DrainVerdict::kNoDrain, "no_drain"},
    {DrainVerdict::kUnknown, "unknown"}};
inline std::string_view to_string(DrainVerdict v) {
  return name_of(kDrainVerdictNames, v, "unknown");
}

struct ReportDecision {
  std::string node;
  std::string run_id;
  DrainVerdict verdict = DrainVerdict::kUnknown;
  std::string reason;  // the vigil: reason for kDrain / kDryRun / kBreakerHeld
  std::string why;     // the drainer's note, one line
};

// The 202 body of POST /v1/reports when decisions were asked for. A malformed `policy` leaves
// `policy` empty (policy_error says why) without losing the verdicts; a malformed verdict list is
// an error.
struct ReportReply {
  int accepted = 0;
  int duplicates = 0;
  std::vector<ReportDecision> decisions;
  std::optional<SharedDrainPolicy> policy;
  std::string policy_error;
};
nlohmann::json to_json(const ReportReply& r);
Result<ReportReply> report_reply_from_json(std::string_view body);

}  // namespace vigil
