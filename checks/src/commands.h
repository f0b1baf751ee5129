#pragma once
// The commands of vigil-check that run checks: `run`, `fabric` and `hook`. main.cpp parses the
// command line into these argument structs and calls one of them; everything they do (thresholds,
// SKU, the checks, the report and its delivery) is here. Part of the vigil-check program only.
#include <string>
#include <vector>

#include "cli_util.h"
#include "vigil/checks/check.h"

namespace vigil::nvml {
struct ResetOptions;
}

namespace CLI {
class App;
}

namespace vigil_cli {

// The arguments of `run` and `fabric` (and, inside HookArgs, of `hook`).
struct RunArgs {
  std::string suite = "quick";
  int soak_s = 600;  // gpu_soak's load time (qualify)
  std::string thresholds;
  std::string sku;
  std::string format = "table";
  std::string output;
  std::string node;
  std::string k8s_node;
  std::string job_id;
  std::string run_id;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string sysfs_root = "/";
  std::string state_dir;
  vigil::AllReduceOptions allreduce;  // --allreduce-binary, --mpirun; fabric: --nodes, ...
  vigil::ImexOptions imex;            // --imex-ctl
  int xid_wait_ms = 2000;
  int expected_gpus = 0;  // --expected-gpus / VIGIL_EXPECTED_GPUS (Slurm's Gres); 0: the SKU's
  std::vector<std::string> hook_state_dirs;  // `run`: where Slurm's GPU count is noted for hooks
  int repeat_spacing_s = 120;  // `run` only: the wait before confirmation repeats (detection.md)
  std::string report_url;
  std::string token_file;
  std::string ca_file;
  std::string spool_dir;
  vigil_cli::AuthArgs auth;
  std::vector<std::string> only;
  std::vector<std::string> exclude;
  bool quiet = false;
  // vigil-check fabric
  std::string fabric_network = "ib";  // ib | nvlink-domain
  std::string min_bytes, max_bytes;
  int fabric_rounds = 3;
  std::string topology;
  std::vector<std::string> report_nodes;  // only these get a report (fabric re-check)
};

// `<hooks' state dir>/expected-gpus-<node>`: Slurm's GPU count for the node, as the last node
// job had it (one number); the hooks expect it (slurmd tells them none).
inline std::string expected_gpus_note(const std::string& dir, const std::string& node) {
  return dir + "/expected-gpus-" + node;
}

struct HookArgs {
  RunArgs run;
  std::string mode;
  bool no_post = false;
  bool cuda_sanity = false;
  int time_box_s = 30;
  int drain_wait_ms = 5000;
  std::string kmsg = "/dev/kmsg";
  std::string slurm_conf;
  std::vector<std::string> gpu_residents;  // besides nvidia-cuda-mps-server
};

// The options `run`, `fabric` and `hook` share: where the thresholds are, the node, the
// report's format and file, and its delivery (--report-url, --token-file, --ca-file,
// --spool-dir, --auth, --munge-socket). Declared once so that the three cannot drift apart.
void add_report_options(CLI::App* cmd, RunArgs& r);

// Each returns vigil-check's exit code: 0/1/2 by the worst verdict, kExitError (3) when nothing
// could be checked or a report was lost; `hook` exits 1 only on a fatal finding (docs/hooks.md).
int cmd_run(const RunArgs& a);
int cmd_fabric(const RunArgs& a);
int cmd_hook(HookArgs& h);
// `repair reset-gpu`: resets every GPU of this node for the repair ladder and reports the
// outcome as the result gpu_reset (docs/repair.md "GPU reset"); exit code by its status.
// `reset`: its options; node is filled here.
int cmd_repair_reset(const RunArgs& a, vigil::nvml::ResetOptions reset);

}  // namespace vigil_cli
