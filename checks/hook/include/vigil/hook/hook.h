#pragma once
// `vigil-check hook prolog|epilog|healthcheck`: the passive suite (no GPU load) run by slurmd
// between jobs, and what to do with its result (docs/hooks.md).
//
//   (the checks)       vigil::run_passive_suite (vigil/checks/passive.h) inside one time box;
//                      a check that would outlive it is killed and reported `error`.
//   act                posts the report to vigil-drainer (one short attempt, else spooled); on a
//                      fatal finding waits briefly for the drainer's drain to show in Slurm and,
//                      when it does not, drains the node itself through libslurm with the same
//                      `vigil:` reason (fail closed). Never drains on error, warn or a non-fatal
//                      fail; never touches a node drained by someone else, DOWN, FAIL or MAINT.
//   exit_code          1 on a fatal finding (a Prolog then requeues the job, an Epilog drains);
//                      0 otherwise, errors included: a non-zero hook drains the node in Slurm.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/checks/check.h"
#include "vigil/report/report.h"
#include "vigil/report/report_client.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::hook {

enum class Mode { kProlog, kEpilog, kHealthcheck };

std::optional<Mode> mode_from_string(std::string_view s);
std::string_view to_string(Mode m);  // "prolog", ... also the report's `context`

inline constexpr std::chrono::seconds kDefaultTimeBox{30};  // below slurmd's 60 s kill

// Checks whose `fail` is a fatal hardware finding: drain now (the drainer's default
// policy.fatal_checks drains them after one report too).
bool is_fatal_check(std::string_view check);

// The fatal failing results of a report, in report order.
std::vector<const CheckResult*> fatal_failures(const NodeReport& r);

// The `vigil:` reason for the first fatal failure (the format the drainer uses), "" if none.
std::string fatal_reason(const NodeReport& r);

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
  // libslurm client, created on first use (tests: a fake).
  std::function<std::unique_ptr<slurm::SlurmApi>()> slurm;
  std::function<void(std::chrono::milliseconds)> sleep;  // default: this_thread::sleep_for
};

struct Outcome {
  bool fatal = false;
  std::string reason;    // the vigil: reason when fatal
  std::string delivery;  // "delivered to URL", "spooled to PATH (why)", "not posted (--no-post)"
  std::string action;    // what happened in Slurm, one line
  bool drained_by_hook = false;
  bool delivery_failed = false;  // neither delivered nor spooled
};

// Delivers the report and, on a fatal finding, makes sure the node ends up drained.
Outcome act(const NodeReport& report, const ActOptions& opts);

// 1 when a fatal check failed, else 0 (pass, warn, error, non-fatal fail).
int exit_code(const NodeReport& r);

}  // namespace vigil::hook
