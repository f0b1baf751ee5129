// vigil-check: runs Vigil's health checks on this node and reports them. Parses arguments only;
// the commands are in commands.cpp and cli_util.cpp, the checks in vigil::checks (see
// docs/vigil-check.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "host/host_services.h"
#include "nvml/gpu_reset.h"

using namespace vigil_cli;  // RunArgs, HookArgs, cmd_*, kExitError (commands.h, cli_util.h)

namespace {
// The node's GPU count as Slurm knows it (gpu_count's expectation; docs/vigil-check.md).
void add_expected_gpus(CLI::App* cmd, RunArgs& r) {
  cmd->add_option("--expected-gpus", r.expected_gpus,
                  "GPUs this node has in Slurm (its Gres gpu:N); 0: the SKU's count")
      ->envname("VIGIL_EXPECTED_GPUS")
      ->check(CLI::Range(0, 1024));
}

// Options of both `run` and `fabric`.
void add_common(CLI::App* cmd, RunArgs& r) {
  cmd->add_option("--suite", r.suite, "quick, full or qualify (docs/qualify.md)")
      ->check(CLI::IsMember({"quick", "full", "qualify"}));
  cmd->add_option("--soak-s", r.soak_s, "gpu_soak's load time in the qualify suite (60-1200 s)")
      ->check(CLI::Range(60, 1200));
  add_report_options(cmd, r);
  cmd->add_option("--job-id", r.job_id, "Slurm job id (default: $SLURM_JOB_ID)");
  cmd->add_option("--run-id", r.run_id, "Unique id of this run (default: node-time-pid)");
  cmd->add_option("--nvml-library", r.nvml_library, "NVML library to dlopen");
  cmd->add_option("--sysfs-root", r.sysfs_root, "Root under which /sys/class/infiniband is read");
  cmd->add_option("--state-dir", r.state_dir,
                  "Where previous counter readings are kept for deltas");
  cmd->add_option("--allreduce-binary", r.allreduce.binary,
                  "vigil-allreduce or a site's nccl-tests all_reduce_perf");
  cmd->add_option("--mpirun", r.allreduce.mpirun, "mpirun to launch all_reduce with");
  cmd->add_option("--only", r.only, "Run only these checks (comma-separated)");
  cmd->add_option("--exclude", r.exclude, "Report these checks as skipped (comma-separated)");
  cmd->add_flag("--quiet,-q", r.quiet, "No progress lines on stderr");
  add_expected_gpus(cmd, r);
}

CLI::App* add_run_command(CLI::App& app, RunArgs& run) {
  auto* cmd = app.add_subcommand("run", "Run the checks on this node and report");
  add_common(cmd, run);
  cmd->add_option("--k8s-node", run.k8s_node, "Kubernetes Node name of this node")
      ->envname("VIGIL_K8S_NODE");
  cmd->add_option("--xid-wait-ms", run.xid_wait_ms, "How long nvml_xid listens for XID events");
  cmd->add_option("--imex-ctl", run.imex.ctl,
                  "nvidia-imex-ctl for nvlink_imex (default: searched in the usual directories)")
      ->envname("VIGIL_IMEX_CTL");
  cmd->add_option("--hook-state-dir", run.hook_state_dirs,
                  "The Slurm hooks' state dir: Slurm's GPU count for this node "
                  "(--expected-gpus) is noted there for them; repeatable");
  cmd->add_option("--repeat-spacing-s", run.repeat_spacing_s, "Delay before repeats, seconds")
      ->capture_default_str();
  return cmd;
}

CLI::App* add_fabric_command(CLI::App& app, RunArgs& fabric) {
  auto* cmd = app.add_subcommand(
      "fabric",
      "Inside `sbatch -N k`: all_reduce across the nodes over InfiniBand (or the trays of one "
      "NVLink domain); one report per node");
  add_common(cmd, fabric);
  cmd->add_option("--nodes", fabric.allreduce.nodes, "The allocation's nodes (comma-separated)")
      ->required();
  cmd->add_option("--ranks", fabric.allreduce.ranks,
                  "MPI ranks across the pair (default: $SLURM_NTASKS)");
  cmd->add_option("--backend", fabric.allreduce.backend, "nccl, or host on CPU-only test clusters")
      ->check(CLI::IsMember({"nccl", "host"}));
  cmd->add_option("--min-bytes", fabric.min_bytes, "Smallest message (default 1G; full 512M)");
  cmd->add_option("--max-bytes", fabric.max_bytes, "Largest message (default 4G; full 8G)");
  cmd->add_option("--rounds", fabric.fabric_rounds,
                  "With more than 2 nodes: rounds of pairs with rotating partners (default 3)");
  cmd->add_option("--topology", fabric.topology,
                  "With more than 2 nodes: a '<node> <leaf switch>' map file, or 'slurm' "
                  "(Slurm's topology/tree), to tell a slow switch from a slow node "
                  "(default: Slurm's tree inside a job when it has one)");
  cmd->add_option("--network", fabric.fabric_network,
                  "ib: the compute fabric between the nodes (NVLink inside each, multi-node "
                  "NVLink off); nvlink-domain: the trays of one GB200/GB300 NVL72 domain over "
                  "multi-node NVLink and NVLS, both forced (docs/fabric.md)")
      ->check(CLI::IsMember({"ib", "nvlink-domain"}))
      ->capture_default_str();
  cmd->add_option("--report-nodes", fabric.report_nodes,
                  "Only these nodes get a report (a fabric re-check: the drained node, not "
                  "its known-good partner)");
  return cmd;
}

CLI::App* add_hook_command(CLI::App& app, HookArgs& hook) {
  auto* cmd = app.add_subcommand(
      "hook", "Slurm Prolog / Epilog / HealthCheckProgram: passive checks, drain on a fatal fault");
  cmd->add_option("mode", hook.mode, "prolog, epilog or healthcheck")
      ->required()
      ->check(CLI::IsMember({"prolog", "epilog", "healthcheck"}));
  hook.run.state_dir = "/var/lib/vigil/hook";
  hook.run.quiet = true;
  add_report_options(cmd, hook.run);
  cmd->add_option("--k8s-node", hook.run.k8s_node, "Kubernetes Node name")
      ->envname("VIGIL_K8S_NODE");
  cmd->add_option("--nvml-library", hook.run.nvml_library, "NVML library to dlopen")
      ->envname("VIGIL_NVML_LIBRARY");
  cmd->add_option("--sysfs-root", hook.run.sysfs_root,
                  "Root under which /sys/class/infiniband is read")
      ->envname("VIGIL_SYSFS_ROOT");
  cmd->add_option("--state-dir", hook.run.state_dir, "XID cursor and counter state")
      ->envname("VIGIL_HOOK_STATE_DIR");
  add_expected_gpus(cmd, hook.run);
  cmd->add_option("--kmsg", hook.kmsg, "Kernel log to read XIDs from")->envname("VIGIL_KMSG");
  cmd->add_option("--slurm-conf", hook.slurm_conf,
                  "slurm.conf for the drain fallback (default: SLURM_CONF)");
  cmd->add_option("--time-box", hook.time_box_s, "Seconds for the whole suite (default 30)")
      ->envname("VIGIL_HOOK_TIME_BOX");
  cmd->add_option("--drain-wait-ms", hook.drain_wait_ms,
                  "How long to wait for the drainer's drain before draining here");
  cmd->add_flag("--cuda-sanity", hook.cuda_sanity, "Also run a tiny CUDA kernel per idle GPU")
      ->envname("VIGIL_HOOK_CUDA_SANITY");
  cmd->add_option("--gpu-resident", hook.gpu_residents,
                  "A process name (as in /proc/PID/comm) that lives on the GPUs between jobs "
                  "and is never a job's leftover; repeatable (nvidia-cuda-mps-server always is)")
      ->delimiter(',')
      ->envname("VIGIL_HOOK_GPU_RESIDENTS");
  cmd->add_flag("--no-post", hook.no_post, "Print the result only: post nothing, drain nothing");
  cmd->add_flag("!--progress", hook.run.quiet, "Progress lines on stderr");
  return cmd;
}

// `repair reset-gpu`; returns the reset-gpu subcommand.
CLI::App* add_repair_command(CLI::App& app, RunArgs& repair, vigil::nvml::ResetOptions& reset) {
  auto* repair_cmd = app.add_subcommand("repair", "Repair steps of the drainer's repair ladder");
  repair_cmd->require_subcommand(1);
  auto* cmd = repair_cmd->add_subcommand(
      "reset-gpu",
      "Reset every GPU of this drained, idle node (nvidia-smi --gpu-reset) and report the outcome "
      "as gpu_reset (docs/repair.md)");
  add_report_options(cmd, repair);
  cmd->add_option("--run-id", repair.run_id, "Unique id of this run");
  cmd->add_option("--job-id", repair.job_id, "Slurm job id (default: $SLURM_JOB_ID)");
  cmd->add_option("--nvml-library", repair.nvml_library, "NVML library to dlopen")
      ->envname("VIGIL_NVML_LIBRARY");
  cmd->add_option("--nvidia-smi", reset.nvidia_smi, "nvidia-smi to reset with")
      ->envname("VIGIL_NVIDIA_SMI")
      ->capture_default_str();
  reset.xid_state_dirs = {"/var/lib/vigil/hook"};
  cmd->add_option("--xid-state-dir", reset.xid_state_dirs,
                  "Where kmsg_xid keeps its cursor (the hooks' and the runs' state dirs; "
                  "repeatable): after a good reset the XIDs a reset clears are forgotten there")
      ->capture_default_str();
  reset.evidence_dir = "/var/lib/vigil/evidence";
  cmd->add_option("--evidence-dir", reset.evidence_dir,
                  "Where nvidia-bug-report.sh keeps the driver's state before the reset (as "
                  "vigil-reboot does before a reboot); empty: none")
      ->envname("VIGIL_EVIDENCE_DIR")
      ->capture_default_str();
  cmd->add_option("--bug-report", reset.bug_report, "nvidia-bug-report.sh to run")
      ->envname("VIGIL_BUG_REPORT")
      ->capture_default_str();
  cmd->add_option("--stop-unit", reset.stop_units,
                  "A systemd unit that holds the GPUs open (e.g. nvidia-dcgm), stopped for the "
                  "reset and started again after it (repeatable; comma-separated in the "
                  "environment)")
      ->envname("VIGIL_RESET_STOP_UNITS")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string& unit) -> std::string {
            return vigil::services::is_unit_name(unit)
                       ? ""
                       : "'" + unit + "' is not a systemd unit name";
          },
          "UNIT"));
  cmd->add_flag("--quiet,-q", repair.quiet, "No progress line on stderr");
  return cmd;
}

// `thresholds validate`; returns the validate subcommand.
CLI::App* add_thresholds_command(CLI::App& app, std::string& validate_dir) {
  auto* th_cmd = app.add_subcommand("thresholds", "Threshold files");
  th_cmd->require_subcommand(1);
  auto* cmd = th_cmd->add_subcommand("validate", "Validate a directory of SKU threshold files");
  cmd->add_option("dir", validate_dir, "Thresholds directory")->required();
  return cmd;
}

// `report table`; returns the table subcommand.
CLI::App* add_report_command(CLI::App& app, std::vector<std::string>& report_files) {
  auto* report_cmd = app.add_subcommand("report", "Work with NodeReport files");
  report_cmd->require_subcommand(1);
  auto* cmd = report_cmd->add_subcommand("table", "Print a per-node table of report files");
  cmd->add_option("files", report_files, "NodeReport JSON files")->required();
  return cmd;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vigil-check: GPU and fabric health checks for one node"};
  app.require_subcommand(1);
  RunArgs run, fabric, repair;
  HookArgs hook;
  vigil::nvml::ResetOptions reset;
  std::string validate_dir;
  std::vector<std::string> report_files;
  XidClearArgs xid;
  auto* run_cmd = add_run_command(app, run);
  auto* fabric_cmd = add_fabric_command(app, fabric);
  auto* hook_cmd = add_hook_command(app, hook);
  auto* reset_cmd = add_repair_command(app, repair, reset);
  auto* validate_cmd = add_thresholds_command(app, validate_dir);
  auto* table_cmd = add_report_command(app, report_files);
  xid.state_dir = hook.run.state_dir;  // the hook's default
  add_xid_clear_command(app, xid);
  auto* list_cmd = app.add_subcommand("list", "List the checks (name, short name, suite, timeout)");
  std::string list_thresholds;
  list_cmd->add_option("--thresholds", list_thresholds,
                       "Directory of per-SKU threshold YAML files, whose site-checks/ are listed "
                       "too (default: the one `run` reads)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  if (*run_cmd) return cmd_run(run);
  if (*fabric_cmd) return cmd_fabric(fabric);
  if (*hook_cmd) return cmd_hook(hook);
  if (*reset_cmd) return cmd_repair_reset(repair, reset);
  if (*validate_cmd) return cmd_thresholds_validate(validate_dir);
  if (*table_cmd) return cmd_report_table(report_files);
  if (*list_cmd) return cmd_list(list_thresholds);
  if (*xid.cmd) return cmd_xid_clear(xid.state_dir, xid.node, xid.gpu);
  return kExitError;
}
