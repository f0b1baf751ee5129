#pragma once
// `vigil-check hook prolog|epilog|healthcheck`: the passive suite (no GPU load) run by slurmd
// between jobs, and what to do with its result (docs/hooks.md "Who drains").
//
//   (the checks)  vigil::run_passive_suite (vigil/checks/passive.h) inside one time box; a check
//                 that would outlive it is killed and reported `error`.
//   act           posts the report to vigil-drainer and asks for its verdict (one short
//                 attempt, else spooled), then obeys it: the drainer's policy, circuit breaker
//                 and dry-run decide, never the hook. Only when the drainer cannot be reached (or
//                 gives no verdict) does the hook decide a fatal finding alone, with the policy
//                 the drainer last sent (kept in the state dir) and a breaker of its own that
//                 counts the vigil drains Slurm shows. Never drains on error, warn or a non-fatal
//                 fail; never touches a node drained by someone else, DOWN, FAIL or MAINT.
//   exit code     Outcome::exit_code: 1 only when the node ends drained by vigil for this
//                 finding (a Prolog then requeues the job elsewhere); 0 otherwise, a held drain
//                 and every error included: a non-zero hook drains the node in Slurm.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/checks/check.h"
#include "vigil/report/drain_decision.h"
#include "vigil/report/report.h"
#include "vigil/report/report_client.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::hook {

enum class Mode { kProlog, kEpilog, kHealthcheck };

// Also the report's `context`.
inline constexpr EnumName<Mode> kModeNames[] = {
    {Mode::kProlog, "prolog"}, {Mode::kEpilog, "epilog"}, {Mode::kHealthcheck, "healthcheck"}};
inline std::string_view to_string(Mode m) { return name_of(kModeNames, m, "healthcheck"); }

inline constexpr std::chrono::seconds kDefaultTimeBox{30};  // below slurmd's 60 s kill

// The failing results of a report whose check `policy` calls fatal, in report order.
std::vector<const CheckResult*> fatal_failures(const NodeReport& r,
                                               const SharedDrainPolicy& policy);

// The `vigil:` reason for the first fatal failure (the format the drainer uses), "" if none.
std::string fatal_reason(const NodeReport& r, const SharedDrainPolicy& policy);

// The policy the drainer last sent, from `path`; the built-in defaults when there is none (or it
// cannot be read: `note` says why).
SharedDrainPolicy load_policy_cache(const std::string& path, std::string* note = nullptr);
// Keeps the drainer's policy in `path` (tmp + rename), marked with when it was received.
VoidResult save_policy_cache(const std::string& path, SharedDrainPolicy p, int64_t now_unix);

// The hook's own breaker when the drainer cannot be reached. Slurm's node table is the one
// thing every node's hook can see, so it counts the nodes of `self`'s first partition (the
// drainer's breaker group) that Slurm shows drained with a vigil: reason set within the policy's
// window. Returns why the drain is held, or nullopt when one more drain is within the cap.
std::optional<std::string> local_breaker_holds(const std::vector<slurm::SlurmNodeInfo>& nodes,
                                               const slurm::SlurmNodeInfo& self,
                                               const SharedDrainPolicy& policy, int64_t now_unix);

// SLURM_JOB_GPUS ("0,1,3") as NVML indices; nullopt when empty or unparsable.
std::optional<std::vector<int>> parse_job_gpus(std::string_view s);

struct ActOptions {
  bool post = true;  // false (--no-post): act on nothing
  std::string report_url;
  std::string token_file;
  std::string ca_file;  // https report URL: the CA its certificate must chain to
  std::string spool_dir;
  ReportAuth auth;                             // token (token_file) or munge (docs/security.md)
  int post_timeout_ms = 3000;                  // one attempt: slurmd waits for us
  std::chrono::milliseconds drain_wait{5000};  // for the drainer's drain to show in Slurm
  std::chrono::milliseconds poll_interval{200};
  std::string policy_cache;  // where the drainer's policy is kept; empty: built-in defaults
  // libslurm client, created on first use (tests: a fake).
  std::function<std::unique_ptr<slurm::SlurmApi>()> slurm;
  std::function<void(std::chrono::milliseconds)> sleep;  // default: this_thread::sleep_for
  std::function<int64_t()> now_unix;                     // default: the system clock
};

struct Outcome {
  bool fatal = false;
  std::string reason;    // the vigil: reason when fatal
  std::string delivery;  // "delivered to URL", "spooled to PATH (why)", "not posted (--no-post)"
  DrainVerdict verdict = DrainVerdict::kUnknown;  // the drainer's, when it gave one
  std::string action;                             // what happened in Slurm and why, one line
  bool drained_by_hook = false;
  bool held = false;             // a fatal finding whose drain a breaker or dry-run holds
  bool delivery_failed = false;  // neither delivered nor spooled
  int exit_code = 0;             // what the hook exits with (see above)
};

// Delivers the report and, on a fatal finding, does what the drainer decided (or, when it
// cannot be reached, what its policy and the local breaker allow).
Outcome act(const NodeReport& report, const ActOptions& opts);

}  // namespace vigil::hook
