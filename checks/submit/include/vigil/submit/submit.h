#pragma once
// vigil-submit: the CronJob's entry point. Reads node states and the job queue through
// vigil::slurm (libslurm, or slurmrestd with a JWT: the drainer's two backends), plans (plan.h),
// prints the plan as a table, then submits the sbatch jobs (paced) and runs the held re-checks
// (bounded concurrency, timeout each; hold.h). Submitting stays sbatch / salloc / srun and
// scontrol on either backend: the job script, its #SBATCH lines and the hold's steps have no REST
// equivalent that keeps them.
#include <map>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/report/report_client.h"
#include "vigil/slurm/slurm_rest.h"
#include "vigil/submit/plan.h"

namespace vigil::submit {

struct SubmitRunOptions {
  SubmitOptions plan;
  std::string slurm_conf;            // empty: SLURM_CONF / /etc/slurm/slurm.conf
  bool slurm_rest = false;           // read Slurm over slurmrestd (rest) instead of libslurm
  slurm::RestSettings rest;          // with slurm_rest: as the drainer's slurm.rest
  bool dry_run = false;              // print the commands, run nothing
  int interval_ms = 200;             // pause between two sbatch calls
  int recheck_concurrency = 4;       // held re-checks at a time
  int sbatch_timeout_s = 60;         // one sbatch call
  int max_consecutive_failures = 5;  // stop submitting after this many sbatch failures in a row
  bool json = false;                 // JSON summary instead of the table
  // --nvlink-domains: "slurm" (Slurm's topology/block blocks, `scontrol show topology`) or a
  // "<node> <domain>" map file; empty: no NVLink domain jobs (plan.nvlink_domain_of).
  std::string nvlink_domains;
  // --check-config: read Slurm's configuration, say what Vigil needs and what is wrong, submit
  // nothing (config_check.h). boot_time_s: how long the nodes take to boot (ResumeTimeout).
  bool check_config = false;
  int boot_time_s = 600;
  // --rechecks-from: the drainer (url, token or munge, CA) whose GET /v1/rechecks names the only
  // nodes this run re-checks (held, as any re-check); no node, fabric or domain jobs. Empty url:
  // off. The re-qualification of performance drains within minutes (docs/recheck.md).
  ReportClientOptions rechecks_from;
};

// --rechecks-from: the nodes the drainer wants re-checked now, each with the suite it asks for
// ("" for the CronJob's own); an error naming the URL.
struct DueRecheck {
  std::string node;
  std::string suite;
  bool operator==(const DueRecheck&) const = default;
};
Result<std::vector<DueRecheck>> load_rechecks_due(const ReportClientOptions& drainer);

// plan.nvlink_domain_of from --nvlink-domains; an error naming the option, the file and line, or
// Slurm's answer (also when Slurm has no blocks: `slurm` was asked for them).
Result<std::map<std::string, std::string>> load_nvlink_domains(const std::string& option,
                                                               const std::string& slurm_conf);

// Outcome of one planned command.
struct CommandOutcome {
  std::string kind;  // PlannedCommand::kind: node, fabric, domain, recheck, *-recheck
  std::vector<std::string> nodes;
  std::string command;  // shell_join(argv), with an inline script shortened
  bool ran = false;
  int exit_code = -1;  // sbatch/srun exit status; 124 on timeout
  bool timed_out = false;
  std::string job_id;  // sbatch --parsable output
  std::string output;  // last part of stdout+stderr (errors, the re-check's verdict)
};

// --check-config: the findings table on stdout; 0 no problem (warnings may remain), 1 a problem,
// 2 Slurm could not be read.
int run_config_check(const SubmitRunOptions& options);

// Exit code of vigil-submit: 0 everything planned was launched (re-checks may report an
// unhealthy node: that is a result, not an error), 1 some sbatch/srun failed to launch or timed
// out, 2 Slurm could not be read.
int run_submit(const SubmitRunOptions& options);

}  // namespace vigil::submit
