// vigil-submit: argument parsing only; the work is in vigil::submit (submit.h, plan.h).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "vigil/submit/submit.h"

namespace {

// What the command line sets: the run's options and the flags read into them after parsing.
// The add_* functions declare the options in the order --help lists them.
struct Cli {
  vigil::submit::SubmitRunOptions o;
  std::string backend = "libslurm";
  bool no_recheck = false;
  std::string drainer_auth = "token";
};

// The job script and how Slurm is read.
void add_slurm_options(CLI::App& app, Cli& c) {
  vigil::submit::SubmitRunOptions& o = c.o;
  vigil::submit::SubmitOptions& p = o.plan;
  app.add_option("--job-script", p.job_script, "sbatch job script (cronjobs/vigil-check.sbatch)")
      ->capture_default_str();
  app.add_option("--slurm-conf", o.slurm_conf, "slurm.conf (default: $SLURM_CONF or /etc/slurm)");
  // Reading Slurm over slurmrestd, with the settings of the drainer's slurm.rest.
  app.add_option("--slurm-backend", c.backend,
                 "how nodes and jobs are read: libslurm, or rest (slurmrestd, JWT; "
                 "docs/slurm-compat.md); jobs are submitted with sbatch either way")
      ->check(CLI::IsMember({"libslurm", "rest"}))
      ->capture_default_str();
  app.add_option("--slurm-rest-url", o.rest.url, "slurmrestd URL (http:// or https://)");
  app.add_option("--slurm-rest-token-file", o.rest.token_file,
                 "file holding the JWT (default: $SLURM_JWT)");
  app.add_option("--slurm-rest-user", o.rest.user,
                 "X-SLURM-USER-NAME (default: the token's own user)");
  app.add_option("--slurm-rest-api-version", o.rest.api_version,
                 "e.g. v0.0.41 (default: chosen from what the server offers)");
  app.add_option("--slurm-rest-timeout-ms", o.rest.timeout_ms, "timeout of one request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

// What the jobs ask of Slurm, single-node and multi-node (fabric pairs, NVLink domains).
void add_job_options(CLI::App& app, Cli& c) {
  vigil::submit::SubmitRunOptions& o = c.o;
  vigil::submit::SubmitOptions& p = o.plan;
  app.add_option("--run-id", p.run_id, "run id for --comment=vigil:<id> (default: UTC time)");
  app.add_option("--partition,-p", p.partition, "partition for the jobs; only its nodes are used");
  app.add_option("--qos", p.qos, "QoS for the jobs");
  app.add_option("--account", p.account, "account for the jobs");
  app.add_option("--reservation", p.reservation,
                 "reservation for the jobs (nodes in a reservation are used only with it)");
  app.add_option("--time", p.time_limit, "time limit of a node job")->capture_default_str();
  app.add_option("--fabric-time", p.fabric_time_limit, "time limit of a fabric job")
      ->capture_default_str();
  app.add_option("--nodes", p.nodes, "only these nodes (comma separated)")->delimiter(',');
  app.add_option("--sbatch-arg", p.extra_sbatch_args, "extra sbatch argument (repeatable)");
  app.add_option("--max-pending-s", p.max_pending_s,
                 "how long a job may wait for its nodes (0: forever): every sbatch gets "
                 "--deadline=now+<its --time + this>, so Slurm cancels a job whose node was "
                 "drained meanwhile instead of letting it pend and block that node's re-check")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--fabric", p.fabric,
               "also submit multi-node fabric jobs over the nodes (rounds of pairs inside)");
  app.add_option("--fabric-nodes", p.fabric_nodes,
                 "nodes per fabric job (default 8; 2 = one pair per job)")
      ->check(CLI::Range(2, 64));
  app.add_option("--fabric-ranks-per-node", p.fabric_ranks_per_node,
                 "MPI ranks per node in a fabric job (one per GPU)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--nvlink-domains", o.nvlink_domains,
                 "also submit one NVLink domain job per GB200/GB300 NVL72 domain over its nodes "
                 "of this run: 'slurm' (the blocks of Slurm's topology/block) or a "
                 "'<node> <domain>' map file (docs/fabric.md)");
  app.add_option("--domain-nodes", p.domain_nodes,
                 "nodes per NVLink domain job at most (an NVL72 has 18 trays; a larger domain of "
                 "the map is split)")
      ->capture_default_str()
      ->check(CLI::Range(2, 72));
  app.add_option("--domain-ranks-per-node", p.domain_ranks_per_node,
                 "MPI ranks per node in an NVLink domain job (one per GPU of a tray)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

// How much one run launches and how fast, the held re-checks, the other modes and the output.
void add_run_options(CLI::App& app, Cli& c) {
  vigil::submit::SubmitRunOptions& o = c.o;
  vigil::submit::SubmitOptions& p = o.plan;
  app.add_option("--max-jobs", p.max_jobs, "node jobs per run (random subset beyond)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", p.seed, "seed of the random subset and pairing (default: time)");
  app.add_option("--interval-ms", o.interval_ms, "pause between two sbatch calls")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-recheck", c.no_recheck, "do not re-check nodes drained by Vigil");
  app.add_option("--max-rechecks", p.max_rechecks, "held re-checks per run")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--recheck-concurrency", o.recheck_concurrency, "re-checks at a time")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--recheck-timeout-s", p.recheck_timeout_s, "timeout of one re-check")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--hold-setup-s", p.hold_setup_s,
                 "how long a re-check's hold may take to set up (reservation, salloc, the drain "
                 "back); a hold older than this plus --recheck-timeout-s with no re-check job is "
                 "taken for one a killed run left, and released")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--dry-run", o.dry_run, "print the sbatch/srun commands, run nothing");
  app.add_flag("--check-config", o.check_config,
               "read Slurm's configuration (slurm.conf with cgroup.conf, the nodes' Gres, "
               "--partition, --reservation) and say what Vigil needs and what is wrong; submits "
               "nothing (exit 1 on a problem)");
  app.add_option("--boot-time-s", o.boot_time_s,
                 "--check-config: how long a node takes to boot, for ResumeTimeout")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rechecks-from", o.rechecks_from.url,
                 "the drainer's URL: re-check only the nodes its GET /v1/rechecks names (drains "
                 "on performance alone, re-qualified within minutes); no other jobs "
                 "(docs/recheck.md)");
  app.add_option("--drainer-token-file", o.rechecks_from.token_file,
                 "--rechecks-from: bearer token file (auth mode token)");
  app.add_option("--drainer-ca-file", o.rechecks_from.ca_file,
                 "--rechecks-from: CA of the drainer's certificate (https)");
  app.add_option("--drainer-auth", c.drainer_auth,
                 "--rechecks-from: token, or munge (a credential of this user from munged)")
      ->check(CLI::IsMember({"token", "munge"}))
      ->capture_default_str();
  app.add_flag("--json", o.json, "JSON output instead of the table");
}

}  // namespace

int main(int argc, char** argv) {
  Cli c;
  vigil::submit::SubmitRunOptions& o = c.o;
  vigil::submit::SubmitOptions& p = o.plan;
  CLI::App app{
      "vigil-submit: submits one Vigil health-check job per eligible Slurm node (sbatch), "
      "optional multi-node fabric jobs, and re-checks nodes Vigil drained, each held in a "
      "reservation with every GPU allocated "
      "(docs/deploy.md, docs/recheck.md)"};
  add_slurm_options(app, c);
  add_job_options(app, c);
  add_run_options(app, c);
  CLI11_PARSE(app, argc, argv);
  p.recheck = !c.no_recheck;
  o.rechecks_from.auth.mode = *vigil::parse_report_auth_mode(c.drainer_auth);
  for (const auto& [option, value] :
       {std::pair{"--time", &p.time_limit}, std::pair{"--fabric-time", &p.fabric_time_limit}}) {
    if (!vigil::submit::slurm_time_limit_s(*value)) {
      std::fprintf(stderr,
                   "vigil-submit: %s '%s' is not a Slurm time limit (minutes, MM:SS, HH:MM:SS, "
                   "D-HH, D-HH:MM or D-HH:MM:SS)\n",
                   option, value->c_str());
      return 2;
    }
  }
  o.slurm_rest = c.backend == "rest";
  if (o.slurm_rest && o.rest.url.empty()) {
    std::fprintf(stderr, "vigil-submit: --slurm-backend rest needs --slurm-rest-url\n");
    return 2;
  }
  return vigil::submit::run_submit(o);
}
