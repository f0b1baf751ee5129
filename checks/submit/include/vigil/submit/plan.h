#pragma once
// vigil-submit planning: turns Slurm node states and the job queue into the sbatch jobs and the
// held re-checks to launch, and says for every node why it was or was not chosen. Pure code (no
// Slurm, no processes, no clock): tests feed in-memory node and job lists.
// Reference: docs/recheck.md (re-checks) and docs/deploy.md (the CronJob that runs it).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/slurm/reason.h"
#include "vigil/slurm/slurm_api.h"
#include "vigil/slurm/slurm_jobs.h"

namespace vigil::submit {

struct SubmitOptions {
  std::string job_script = "/etc/vigil/vigil-check.sbatch";  // sbatch script (cronjobs/)
  std::string run_id;                                        // --comment=vigil:<run_id>
  std::string job_name = "vigil-check";
  std::string partition;             // -p; also restricts the candidate nodes to this partition
  std::string qos;                   // --qos
  std::string account;               // --account
  std::string reservation;           // --reservation; nodes in a reservation are only used with it
  std::string time_limit = "30:00";  // --time of node jobs
  std::string fabric_time_limit = "30:00";  // --time of fabric jobs
  std::vector<std::string> nodes;           // only these nodes (empty: all)
  std::vector<std::string> extra_sbatch_args;
  // How long a job may wait for its nodes (seconds; 0: forever). Every sbatch gets
  // --deadline=now+<its time limit + this>: a job that cannot start because one of its nodes was
  // drained meanwhile (a node job draining a node of the same run's fabric or domain job, a hook
  // draining it) would otherwise pend forever, and each later run would skip its nodes ("vigil
  // job ... already PENDING"), the drained node's re-check included. Slurm cancels a pending job
  // once now + its time limit passes its deadline (state DEADLINE; deadline_ok() in slurmctld's
  // job_scheduler.c), so the limit is part of the deadline, not taken from the wait.
  int max_pending_s = 7200;
  bool fabric = false;            // add multi-node fabric jobs over the chosen nodes (IB)
  int fabric_nodes = 8;           // nodes per fabric job (rounds of pairs inside, docs/fabric.md)
  int fabric_ranks_per_node = 8;  // MPI ranks per node in a fabric job (one per GPU)
  // NVLink domain jobs (GB200/GB300 NVL72, docs/fabric.md "NVLink domain jobs"): node -> its
  // NVLink domain (Slurm's topology/block blocks, or a site's map). Empty: no domain jobs. The
  // nodes of this run's subset that share a domain (and a partition) get one job together.
  std::map<std::string, std::string> nvlink_domain_of;
  int domain_ranks_per_node = 4;  // one per GPU of a GB200/GB300 compute tray
  int domain_nodes = 18;          // nodes per domain job at most: the 18 trays of an NVL72
  int max_jobs = 200;             // node jobs per run; more eligible nodes -> a random subset
  uint64_t seed = 0;              // for the random subset and the fabric pairing
  bool recheck = true;            // re-check nodes drained by Vigil (held, docs/recheck.md)
  int max_rechecks = 50;
  int recheck_timeout_s = 900;  // per re-check; its srun is killed after it
  // The job script's text, run on the node as `bash -c TEXT` by a re-check's srun (the script
  // file lives in the submitting pod, not on the node). Empty: `bash job_script` (a shared file
  // system).
  std::string recheck_script_text;
  // Who may use a re-check's hold reservation (Users=): the user vigil-submit runs as (empty:
  // root).
  std::string hold_user;
  // How long a hold may take to set up (reservation, salloc, the drain back) before a later run
  // treats it as abandoned, on top of recheck_timeout_s (hold.h release_stale_holds).
  int hold_setup_s = 600;
  // --rechecks-from: the suite the drainer asks a node's re-check to run (the qualify gate's,
  // docs/qualify.md "The gate"), exported to the job script as VIGIL_SUITE; a node not named
  // runs the CronJob's own.
  std::map<std::string, std::string> recheck_suite;
};

enum class PlanStep { kSubmit, kRecheck, kSkip };
inline constexpr EnumName<PlanStep> kPlanStepNames[] = {
    {PlanStep::kSubmit, "submit"}, {PlanStep::kRecheck, "recheck"}, {PlanStep::kSkip, "skip"}};
inline std::string_view to_string(PlanStep a) { return name_of(kPlanStepNames, a, "?"); }

// One line of the table: what happens to a node and why.
struct NodeVerdict {
  std::string node;
  PlanStep action = PlanStep::kSkip;
  std::string why;
};

// The name a re-check's hold reservation of `node` gets; every Vigil hold is named so.
inline constexpr std::string_view kHoldPrefix = "vigil-hold-";
std::string hold_reservation(const std::string& node);

// What stands in a re-check's step for the hold's job id (srun --jobid=...).
inline constexpr std::string_view kHoldJobId = "@HOLD_JOB@";

// A drained node held for its re-check (docs/recheck.md "The hold"): a reservation only the
// checker may use keeps every user job off the node while it is undrained for the seconds the
// allocation takes; the allocation (`salloc`, holding every GPU of the node) then gets the drain
// and its reason back before anything runs, and the step runs inside it with every GPU.
// A fabric or NVLink-domain re-check holds its known-good partner in the same reservation and
// allocation: the pair test runs as a step on the partner, and mpirun reaches the drained node
// through a step of the same allocation, so both sides hold every GPU of their node.
struct Hold {
  std::string node;
  std::string reservation;              // hold_reservation(node)
  std::string reason;                   // the drain's reason, restored once the node is allocated
  std::string user;                     // the reservation's only user (SubmitOptions::hold_user)
  std::vector<std::string> allocate;    // salloc --no-shell ... (the allocation on the node)
  std::vector<std::string> partners{};  // idle nodes held with it, never undrained (fabric)
};

// One command to run: argv[0] is "sbatch" or "srun".
struct PlannedCommand {
  // "node", "fabric", "domain" (sbatch), or "recheck", "fabric-recheck", "domain-recheck" (held;
  // nodes: the drained node, then the partner)
  std::string kind;
  std::vector<std::string> nodes;
  std::vector<std::string> argv;
  // A re-check: the hold argv runs in (argv is then `srun --jobid=<kHoldJobId> ...`).
  std::optional<Hold> hold{};
};

struct SubmitPlan {
  std::vector<PlannedCommand> jobs;      // sbatch: node jobs, fabric and NVLink domain jobs
  std::vector<PlannedCommand> rechecks;  // held re-checks, one per node drained by Vigil
  std::vector<NodeVerdict> verdicts;     // every candidate node, sorted by name
};

// Why a node may not get a check now; empty when it may. Order matters: a node that is both
// DOWN and drained reports DOWN (nothing can run on it).
std::string skip_reason(const slurm::SlurmNodeInfo& node,
                        const std::vector<slurm::SlurmJobInfo>& jobs, const SubmitOptions& options);

// True for a node Vigil drained for the fabric (reason `vigil: fabric-ib ...`) or for its NVLink
// domain (`vigil: nvl-domain ...`): its re-check is a pair test against a known-good partner,
// of the same domain for the latter (docs/fabric.md "Fabric re-check").
bool is_fabric_drain(const slurm::SlurmNodeInfo& node);
bool is_domain_drain(const slurm::SlurmNodeInfo& node);

// True for a job submitted by Vigil (name or `vigil:` comment) that is still pending/running.
bool is_active_vigil_job(const slurm::SlurmJobInfo& job, const SubmitOptions& options);

SubmitPlan plan_submissions(const std::vector<slurm::SlurmNodeInfo>& nodes,
                            const std::vector<slurm::SlurmJobInfo>& jobs,
                            const SubmitOptions& options);

// A Slurm time limit ("30", "30:00", "1:00:00", "2-0", "2-00:30", "2-00:30:00") in seconds, or
// nullopt when it is none of Slurm's forms (sbatch(1), --time).
std::optional<int64_t> slurm_time_limit_s(std::string_view limit);

// argv as a copy-pasteable shell line ('quoted' where needed).
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace vigil::submit
