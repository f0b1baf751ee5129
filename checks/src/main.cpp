// vigil-check: runs Vigil's health checks on this node and reports them. Parses arguments only;
// the work is in vigil::checks (see docs/vigil-check.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "allreduce/fabric_job.h"
#include "cli_util.h"
#include "inventory.h"
#include "vigil/base/files.h"
#include "vigil/checks/gpu_probe.h"
#include "vigil/checks/passive.h"
#include "vigil/checks/registry.h"
#include "vigil/checks/runner.h"
#include "vigil/hook/hook.h"
#include "vigil/report/output.h"
#include "vigil/report/report_client.h"
#include "vigil/slurm/scontrol.h"

namespace fs = std::filesystem;

namespace {

using namespace vigil_cli;  // env_or, hostname, now_unix, split_list, join, ... (cli_util.h)

struct RunArgs {
  std::string suite = "quick";
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
  std::string allreduce_binary;
  std::string mpirun = "mpirun";
  int xid_wait_ms = 2000;
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
  std::vector<std::string> fabric_nodes;
  int fabric_ranks = 0;
  std::string fabric_backend = "nccl";
  std::string min_bytes, max_bytes;
  int fabric_rounds = 3;
  std::string topology;
  std::vector<std::string> report_nodes;  // only these get a report (fabric re-check)
};

// A fabric re-check reports the drained node only: its known-good partner is not judged.
bool reported(const RunArgs& a, const std::string& node) {
  return a.report_nodes.empty() || std::ranges::count(split_list(a.report_nodes), node) > 0;
}

// Loads the thresholds and fills the context both subcommands share (node, SKU, paths).
// Returns 0, or the exit code after printing why.
// hook: `vigil-check hook`, whose passive suite detects the SKU itself and loads no GPU.
int prepare(const RunArgs& a, vigil::Loaded<vigil::SkuSet>& skus, vigil::CheckContext& ctx,
            std::string& sku_note, bool hook = false) {
  const std::string dir = a.thresholds.empty() ? default_thresholds_dir() : a.thresholds;
  skus = vigil::load_sku_dir(dir, vigil::known_check_names());
  if (!skus) {
    print_config_errors(skus.errors);
    std::cerr << "vigil-check: threshold files in " << dir << " are invalid; nothing was checked. "
              << "Fix them (vigil-check thresholds validate " << dir
              << ") or pass --thresholds DIR.\n";
    return kExitError;
  }
  ctx.detection = skus.value->detection;  // detection.json, loaded (and checked) with them
  ctx.xid = skus.value->xid;              // xid-policy.json, likewise
  // nvml_xid's own time box is 60 s; keep the listening window well inside it.
  if (a.xid_wait_ms < 0 || a.xid_wait_ms > 30000 || a.repeat_spacing_s < 0 ||
      a.repeat_spacing_s > 600) {
    std::cerr << "vigil-check: --xid-wait-ms must be between 0 and 30000, --repeat-spacing-s "
                 "between 0 and 600\n";
    return kExitError;
  }
  ctx.node = !a.node.empty() ? a.node : env_or("SLURMD_NODENAME", hostname());
  ctx.suite = a.suite == "full" ? vigil::Suite::kFull : vigil::Suite::kQuick;
  ctx.nvml_library = a.nvml_library;
  ctx.sysfs_root = a.sysfs_root;
  ctx.state_dir = a.state_dir;
  ctx.allreduce_binary = a.allreduce_binary;
  ctx.mpirun = a.mpirun;
  ctx.xid_wait = std::chrono::milliseconds(a.xid_wait_ms);

  if (hook) {  // the passive suite detects the SKU in its own child, with its one NVML attach
    if (!a.sku.empty() && !(ctx.sku = skus.value->by_name(a.sku))) {
      std::cerr << "vigil-check: --sku: unknown SKU '" << a.sku << "'\n";
      return kExitError;
    }
    return 0;
  }
  auto inventory = vigil::read_gpu_inventory(ctx.nvml_library);
  if (inventory) ctx.gpu_count = static_cast<int>(inventory->gpu_names.size());
  if (!a.sku.empty()) {
    ctx.sku = skus.value->by_name(a.sku);
    if (!ctx.sku) {
      std::string known;
      for (const auto& s : skus.value->skus) known += (known.empty() ? "" : ", ") + s.name;
      std::cerr << "vigil-check: --sku: unknown SKU '" << a.sku << "' (known: " << known << ")\n";
      return kExitError;
    }
  } else if (inventory) {
    ctx.sku = vigil::detect_sku(*skus.value, *inventory);
    if (!ctx.sku) sku_note = "no SKU in " + dir + " matches this node's GPUs";
  } else {
    sku_note = "SKU unknown: " + inventory.error().to_string();
  }
  ctx.has_gpu_runtime = vigil::cuda_built_in() && vigil::probe_cuda_driver().devices > 0;
  return 0;
}

// A report with everything but its checks and end time.
vigil::NodeReport start_report(const RunArgs& a, const vigil::CheckContext& ctx, int64_t start) {
  vigil::NodeReport report;
  report.node = ctx.node;
  report.sku = ctx.sku ? ctx.sku->name : "unknown";
  if (!a.k8s_node.empty()) report.k8s_node = a.k8s_node;
  std::string job = !a.job_id.empty() ? a.job_id : env_or("SLURM_JOB_ID", "");
  if (!job.empty()) report.job_id = job;
  report.start_time = vigil::rfc3339_utc(start);
  report.run_id = !a.run_id.empty()
                      ? a.run_id
                      : ctx.node + "-" + std::to_string(start) + "-" + std::to_string(::getpid());
  return report;
}

// Writes the reports (--output / stdout) and delivers each one (--report-url, --spool-dir).
// Returns 0, or kExitError when a report could not be written or was neither delivered nor
// spooled (delivery problems never change the health verdict, but a lost report is an error).
int emit(const RunArgs& a, const std::vector<vigil::NodeReport>& reports) {
  std::string text;
  if (a.format == "json") {
    if (reports.size() == 1) {
      text = vigil::to_json(reports.front()).dump(2) + "\n";
    } else {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& r : reports) arr.push_back(vigil::to_json(r));
      text = arr.dump(2) + "\n";
    }
  } else {
    for (const auto& r : reports) text += vigil::format_report_table(r);
  }
  if (a.output.empty() || a.output == "-") {
    std::cout << text;
  } else {
    if (auto w = vigil::replace_file_atomically(a.output, text); !w.ok()) {
      std::cerr << "vigil-check: cannot write " << a.output << ": " << w.error().to_string()
                << "\n";
      return kExitError;
    }
  }
  if (a.report_url.empty() && a.spool_dir.empty()) return 0;
  vigil::ReportClientOptions client;
  client.url = a.report_url;
  client.token_file = a.token_file;
  client.ca_file = a.ca_file;
  client.spool_dir = a.spool_dir;
  client.auth = a.auth.to_report_auth();
  int rc = 0;
  for (const auto& report : reports) {
    const std::string who = "vigil-check: report for " + report.node;
    if (a.report_url.empty()) {
      auto spooled = vigil::spool_report(report, a.spool_dir);
      if (!spooled) {
        std::cerr << who << " not spooled: " << spooled.error().to_string() << "\n";
        rc = kExitError;
      } else if (!a.quiet) {
        std::cerr << who << " spooled to " << *spooled << "\n";
      }
      continue;
    }
    auto posted = vigil::post_report(report, client);
    if (!posted) {
      std::cerr << who << " neither delivered nor spooled: " << posted.error().to_string() << "\n";
      rc = kExitError;
    } else if (!a.quiet) {
      std::cerr << who << " "
                << (posted->delivered
                        ? "delivered to " + a.report_url
                        : "spooled to " + posted->spooled_path + " (" + posted->last_error + ")")
                << "\n";
    }
  }
  return rc;
}

// --only / --exclude into opts; false (after saying why) when --only names an unknown check.
bool select_checks(const RunArgs& a, const std::vector<std::unique_ptr<vigil::Check>>& checks,
                   vigil::RunOptions& opts) {
  opts.only = split_list(a.only);
  opts.exclude = split_list(a.exclude);
  for (const auto& name : opts.only) {
    bool known = false;
    for (const auto& c : checks) known |= c->name() == name;
    if (!known) {
      std::cerr << "vigil-check: --only: unknown check '" << name
                << "' (vigil-check list shows them)\n";
      return false;
    }
  }
  return true;
}

vigil::RunOptions run_options(const RunArgs& a, size_t& done) {
  vigil::RunOptions opts;
  if (!a.quiet) {
    opts.on_result = [&done](const vigil::CheckResult& r) {
      std::cerr << "  [" << ++done << "] " << r.check << ": " << vigil::to_string(r.status)
                << (r.message.empty() ? "" : " - " + r.message) << "\n";
    };
  }
  return opts;
}

int cmd_run(const RunArgs& a) {
  vigil::Loaded<vigil::SkuSet> skus;
  vigil::CheckContext ctx;
  std::string sku_note;
  if (int rc = prepare(a, skus, ctx, sku_note); rc != 0) return rc;
  ctx.repeat_spacing = std::chrono::seconds(a.repeat_spacing_s);  // fabric and hook: none

  auto checks = vigil::all_checks();
  size_t done = 0;
  vigil::RunOptions opts = run_options(a, done);
  if (!select_checks(a, checks, opts)) return kExitError;
  vigil::NodeReport report = start_report(a, ctx, now_unix());
  if (!a.quiet) {
    std::cerr << "vigil-check: node " << ctx.node << ", SKU " << report.sku
              << (sku_note.empty() ? "" : " (" + sku_note + ")") << ", suite " << a.suite << "\n";
  }
  report.checks = vigil::run_checks(checks, ctx, opts);
  report.end_time = vigil::rfc3339_utc(now_unix());
  if (int rc = emit(a, {report}); rc != 0) return rc;
  return vigil::exit_code_for(report.overall());
}

// One report per fabric node this run reports for (--report-nodes), each with the results
// `checks_of(node)`; emitted, and the exit code of the worst of them.
int emit_node_reports(
    const RunArgs& a, const vigil::CheckContext& ctx, int64_t start, const std::string& end,
    const std::function<std::vector<vigil::CheckResult>(const std::string&)>& checks_of) {
  std::vector<vigil::NodeReport> reports;
  vigil::Status overall = vigil::Status::kPass;
  for (const auto& node : ctx.fabric_nodes) {
    if (!reported(a, node)) continue;
    vigil::CheckContext node_ctx = ctx;
    node_ctx.node = node;
    vigil::NodeReport report = start_report(a, node_ctx, start);
    report.checks = checks_of(node);
    report.end_time = end;
    overall = vigil::combine(overall, report.overall());
    reports.push_back(std::move(report));
  }
  if (int rc = emit(a, reports); rc != 0) return rc;
  return vigil::exit_code_for(overall);
}

// A fabric job of k > 2 nodes: rounds of pairs with rotating partners, then one result per
// node from the localization (docs/fabric.md).
int cmd_fabric_job(const RunArgs& a, const vigil::CheckContext& ctx) {
  std::string topology_note;
  auto loaded = fabric_topology(a.topology, topology_note);
  if (!loaded.ok()) {
    std::cerr << "vigil-check fabric: " << loaded.error().to_string() << "\n";
    return kExitError;
  }
  const std::map<std::string, std::string> leaf_of = std::move(*loaded);
  if (a.fabric_rounds < 1 || a.fabric_rounds > 16) {
    std::cerr << "vigil-check fabric: --rounds must be between 1 and 16\n";
    return kExitError;
  }
  if (!a.quiet) {
    std::cerr << "vigil-check fabric: " << ctx.fabric_nodes.size() << " nodes, " << a.fabric_rounds
              << " rounds of pairs, backend " << ctx.fabric_backend << "; " << topology_note
              << "\n";
  }
  vigil::AllreduceTuning tuning;
  if (!a.min_bytes.empty()) tuning.min_bytes = a.min_bytes;
  if (!a.max_bytes.empty()) tuning.max_bytes = a.max_bytes;
  const int64_t start = now_unix();
  const std::uint64_t seed = std::hash<std::string>{}(env_or("SLURM_JOB_ID", a.run_id));
  auto results = vigil::run_fabric_job(ctx, a.fabric_rounds, seed, leaf_of, tuning);
  const std::string end = vigil::rfc3339_utc(now_unix());
  return emit_node_reports(a, ctx, start, end, [&](const std::string& node) {
    return std::vector<vigil::CheckResult>{results.at(node)};
  });
}

// The pair test of a fabric job (`sbatch -N 2`): the fabric checks run once across the
// allocation, and every node of the pair gets a report with their results.
int cmd_fabric(const RunArgs& a) {
  vigil::Loaded<vigil::SkuSet> skus;
  vigil::CheckContext ctx;
  std::string sku_note;
  if (int rc = prepare(a, skus, ctx, sku_note); rc != 0) return rc;
  ctx.fabric_nodes = split_list(a.fabric_nodes);
  std::set<std::string> distinct(ctx.fabric_nodes.begin(), ctx.fabric_nodes.end());
  if (ctx.fabric_nodes.size() < 2 || distinct.size() != ctx.fabric_nodes.size()) {
    std::cerr << "vigil-check fabric: --nodes needs at least two distinct node names (got '"
              << join(ctx.fabric_nodes, ",") << "')\n";
    return kExitError;
  }
  ctx.fabric_ranks =
      a.fabric_ranks > 0 ? a.fabric_ranks : std::atoi(env_or("SLURM_NTASKS", "0").c_str());
  if (ctx.fabric_ranks < 2) {
    std::cerr << "vigil-check fabric: --ranks (or SLURM_NTASKS) must be at least 2\n";
    return kExitError;
  }
  ctx.fabric_backend = a.fabric_backend;
  for (const auto& n : split_list(a.report_nodes)) {
    if (distinct.count(n)) continue;
    std::cerr << "vigil-check fabric: --report-nodes names " << n << ", which is not in --nodes\n";
    return kExitError;
  }

  if (ctx.fabric_nodes.size() > 2) return cmd_fabric_job(a, ctx);

  auto checks = vigil::fabric_checks(a.min_bytes, a.max_bytes);
  size_t done = 0;
  vigil::RunOptions opts = run_options(a, done);
  if (!select_checks(a, checks, opts)) return kExitError;
  const std::string pair = join(ctx.fabric_nodes, "+");
  if (!a.quiet) {
    std::cerr << "vigil-check fabric: pair " << pair << ", " << ctx.fabric_ranks
              << " ranks, backend " << ctx.fabric_backend << ", SKU "
              << (ctx.sku ? ctx.sku->name : "unknown")
              << (sku_note.empty() ? "" : " (" + sku_note + ")") << "\n";
  }
  const int64_t start = now_unix();
  auto results = vigil::run_checks(checks, ctx, opts);
  for (auto& r : results) r.message = "pair " + pair + (r.message.empty() ? "" : ": " + r.message);
  const std::string end = vigil::rfc3339_utc(now_unix());
  return emit_node_reports(a, ctx, start, end, [&](const std::string&) { return results; });
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

// `vigil-check hook MODE`: the passive suite, then post / drain (docs/hooks.md). Exit 1 only on a
// fatal finding; every other outcome, errors included, exits 0 so that Slurm does not drain.
int cmd_hook(HookArgs& h) {
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::seconds(h.time_box_s);
  const auto mode = vigil::hook::mode_from_string(h.mode);
  RunArgs& a = h.run;
  vigil::Loaded<vigil::SkuSet> skus;
  vigil::CheckContext ctx;
  std::string sku_note;
  if (h.time_box_s < 1 || h.time_box_s > 55) {
    std::cerr << "vigil-check hook: --time-box must be between 1 and 55 s (slurmd kills at 60 s); "
                 "nothing was checked\n";
    return 0;
  }
  if (int rc = prepare(a, skus, ctx, sku_note, /*hook=*/true); rc != 0) {
    std::cerr << "vigil-check hook: nothing was checked; exiting 0 so that Slurm does not drain "
                 "the node for a configuration error\n";
    return 0;
  }
  ctx.kmsg_path = h.kmsg;
  if (*mode == vigil::hook::Mode::kEpilog) {
    ctx.job_gpus = vigil::hook::parse_job_gpus(env_or("SLURM_JOB_GPUS", ""));
    ctx.job_id = env_or("SLURM_JOB_ID", "");
    ctx.resident_gpu_processes.insert(ctx.resident_gpu_processes.end(), h.gpu_residents.begin(),
                                      h.gpu_residents.end());
  }
  if (h.no_post) ctx.state_dir.clear();  // act on nothing: not even the XID cursor moves
  const int64_t start = now_unix();
  size_t done = 0;
  const vigil::PassiveSelection selection{*mode == vigil::hook::Mode::kEpilog, h.cuda_sanity};
  vigil::PassiveRun run = vigil::run_passive_suite(ctx, &*skus.value, selection, deadline,
                                                   run_options(a, done).on_result);
  ctx.sku = run.sku;
  vigil::NodeReport report = start_report(a, ctx, start);
  report.context = std::string(vigil::hook::to_string(*mode));
  report.checks = std::move(run.results);
  report.end_time = vigil::rfc3339_utc(now_unix());
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  vigil::hook::ActOptions act;
  act.post = !h.no_post;
  act.report_url = a.report_url;
  act.token_file = a.token_file;
  act.ca_file = a.ca_file;
  act.spool_dir = a.spool_dir;
  act.auth = a.auth.to_report_auth();
  act.drain_wait = std::chrono::milliseconds(h.drain_wait_ms);
  // The drainer's policy as it last sent it, for when it cannot be reached (docs/hooks.md).
  if (!ctx.state_dir.empty()) act.policy_cache = ctx.state_dir + "/drainer-policy.json";
  const std::string conf = h.slurm_conf;
  act.slurm = [conf] { return vigil::slurm::make_scontrol_api(conf); };
  const vigil::hook::Outcome out = vigil::hook::act(report, act);

  RunArgs print = a;
  print.report_url.clear();
  print.spool_dir.clear();
  emit(print, {report});
  std::cerr << "vigil-check hook " << h.mode << ": node " << ctx.node << ", "
            << vigil::to_string(report.overall()) << " in " << took << " s; report " << out.delivery
            << "; " << out.action << "\n";
  return out.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vigil-check: GPU and fabric health checks for one node"};
  app.require_subcommand(1);
  // Options of both `run` and `fabric`.
  auto add_common = [](CLI::App* cmd, RunArgs& r) {
    cmd->add_option("--suite", r.suite, "quick or full")->check(CLI::IsMember({"quick", "full"}));
    cmd->add_option("--thresholds", r.thresholds, "Directory of per-SKU threshold YAML files");
    cmd->add_option("--sku", r.sku, "Use this SKU instead of detecting it");
    cmd->add_option("--format", r.format, "table or json")->check(CLI::IsMember({"table", "json"}));
    cmd->add_option("--output,-o", r.output, "Write the report(s) here (default: stdout)");
    cmd->add_option("--node", r.node, "Node name (default: $SLURMD_NODENAME or hostname)");
    cmd->add_option("--job-id", r.job_id, "Slurm job id (default: $SLURM_JOB_ID)");
    cmd->add_option("--run-id", r.run_id, "Unique id of this run (default: node-time-pid)");
    cmd->add_option("--nvml-library", r.nvml_library, "NVML library to dlopen");
    cmd->add_option("--sysfs-root", r.sysfs_root, "Root under which /sys/class/infiniband is read");
    cmd->add_option("--state-dir", r.state_dir,
                    "Where previous counter readings are kept for deltas");
    cmd->add_option("--allreduce-binary", r.allreduce_binary,
                    "vigil-allreduce or a site's nccl-tests all_reduce_perf");
    cmd->add_option("--mpirun", r.mpirun, "mpirun to launch all_reduce with");
    cmd->add_option("--report-url", r.report_url,
                    "POST the report to vigil-drainer (retries, then spools)")
        ->envname("VIGIL_REPORT_URL");
    cmd->add_option("--token-file", r.token_file, "Bearer token for --report-url")
        ->envname("VIGIL_TOKEN_FILE");
    cmd->add_option("--ca-file", r.ca_file, "CA (PEM) that an https --report-url must chain to")
        ->envname("VIGIL_CA_FILE");
    cmd->add_option("--spool-dir", r.spool_dir, "Spool the report here when it cannot be delivered")
        ->envname("VIGIL_SPOOL_DIR");
    vigil_cli::add_auth_options(cmd, r.auth);
    cmd->add_option("--only", r.only, "Run only these checks (comma-separated)");
    cmd->add_option("--exclude", r.exclude, "Report these checks as skipped (comma-separated)");
    cmd->add_flag("--quiet,-q", r.quiet, "No progress lines on stderr");
  };
  RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "Run the checks on this node and report");
  add_common(run_cmd, run);
  run_cmd->add_option("--k8s-node", run.k8s_node, "Kubernetes Node name of this node")
      ->envname("VIGIL_K8S_NODE");
  run_cmd->add_option("--xid-wait-ms", run.xid_wait_ms, "How long nvml_xid listens for XID events");
  run_cmd->add_option("--repeat-spacing-s", run.repeat_spacing_s, "Delay before repeats, seconds")
      ->capture_default_str();

  RunArgs fabric;
  auto* fabric_cmd = app.add_subcommand(
      "fabric",
      "Inside `sbatch -N 2`: all_reduce across the pair over InfiniBand; one report per node");
  add_common(fabric_cmd, fabric);
  fabric_cmd->add_option("--nodes", fabric.fabric_nodes, "The allocation's nodes (comma-separated)")
      ->required();
  fabric_cmd->add_option("--ranks", fabric.fabric_ranks,
                         "MPI ranks across the pair (default: $SLURM_NTASKS)");
  fabric_cmd
      ->add_option("--backend", fabric.fabric_backend, "nccl, or host on CPU-only test clusters")
      ->check(CLI::IsMember({"nccl", "host"}));
  fabric_cmd->add_option("--min-bytes", fabric.min_bytes,
                         "Smallest message (default 1G; full 512M)");
  fabric_cmd->add_option("--max-bytes", fabric.max_bytes, "Largest message (default 4G; full 8G)");
  fabric_cmd->add_option(
      "--rounds", fabric.fabric_rounds,
      "With more than 2 nodes: rounds of pairs with rotating partners (default 3)");
  fabric_cmd->add_option("--topology", fabric.topology,
                         "With more than 2 nodes: a '<node> <leaf switch>' map file, or 'slurm' "
                         "(Slurm's topology/tree), to tell a slow switch from a slow node "
                         "(default: Slurm's tree inside a job when it has one)");
  fabric_cmd->add_option("--report-nodes", fabric.report_nodes,
                         "Only these nodes get a report (a fabric re-check: the drained node, not "
                         "its known-good partner)");

  HookArgs hook;
  auto* hook_cmd = app.add_subcommand(
      "hook", "Slurm Prolog / Epilog / HealthCheckProgram: passive checks, drain on a fatal fault");
  hook_cmd->add_option("mode", hook.mode, "prolog, epilog or healthcheck")
      ->required()
      ->check(CLI::IsMember({"prolog", "epilog", "healthcheck"}));
  hook.run.state_dir = "/var/lib/vigil/hook";
  hook.run.quiet = true;
  hook_cmd->add_option("--thresholds", hook.run.thresholds,
                       "Directory of per-SKU threshold YAML files");
  hook_cmd->add_option("--sku", hook.run.sku, "Use this SKU instead of detecting it");
  hook_cmd->add_option("--format", hook.run.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  hook_cmd->add_option("--output,-o", hook.run.output, "Write the report here (default: stdout)");
  hook_cmd->add_option("--node", hook.run.node,
                       "Node name (default: $SLURMD_NODENAME or hostname)");
  hook_cmd->add_option("--k8s-node", hook.run.k8s_node, "Kubernetes Node name")
      ->envname("VIGIL_K8S_NODE");
  hook_cmd->add_option("--nvml-library", hook.run.nvml_library, "NVML library to dlopen")
      ->envname("VIGIL_NVML_LIBRARY");
  hook_cmd
      ->add_option("--sysfs-root", hook.run.sysfs_root,
                   "Root under which /sys/class/infiniband is read")
      ->envname("VIGIL_SYSFS_ROOT");
  hook_cmd->add_option("--state-dir", hook.run.state_dir, "XID cursor and counter state")
      ->envname("VIGIL_HOOK_STATE_DIR");
  hook_cmd->add_option("--kmsg", hook.kmsg, "Kernel log to read XIDs from")->envname("VIGIL_KMSG");
  hook_cmd->add_option("--report-url", hook.run.report_url, "POST the report to vigil-drainer")
      ->envname("VIGIL_REPORT_URL");
  hook_cmd->add_option("--token-file", hook.run.token_file, "Bearer token for --report-url")
      ->envname("VIGIL_TOKEN_FILE");
  hook_cmd
      ->add_option("--ca-file", hook.run.ca_file,
                   "CA (PEM) that an https --report-url must chain to")
      ->envname("VIGIL_CA_FILE");
  hook_cmd
      ->add_option("--spool-dir", hook.run.spool_dir,
                   "Spool the report here when the drainer is unreachable")
      ->envname("VIGIL_SPOOL_DIR");
  vigil_cli::add_auth_options(hook_cmd, hook.run.auth);
  hook_cmd->add_option("--slurm-conf", hook.slurm_conf,
                       "slurm.conf for the drain fallback (default: SLURM_CONF)");
  hook_cmd->add_option("--time-box", hook.time_box_s, "Seconds for the whole suite (default 30)")
      ->envname("VIGIL_HOOK_TIME_BOX");
  hook_cmd->add_option("--drain-wait-ms", hook.drain_wait_ms,
                       "How long to wait for the drainer's drain before draining here");
  hook_cmd->add_flag("--cuda-sanity", hook.cuda_sanity, "Also run a tiny CUDA kernel per idle GPU")
      ->envname("VIGIL_HOOK_CUDA_SANITY");
  hook_cmd
      ->add_option("--gpu-resident", hook.gpu_residents,
                   "A process name (as in /proc/PID/comm) that lives on the GPUs between jobs "
                   "and is never a job's leftover; repeatable (nvidia-cuda-mps-server always is)")
      ->delimiter(',')
      ->envname("VIGIL_HOOK_GPU_RESIDENTS");
  hook_cmd->add_flag("--no-post", hook.no_post,
                     "Print the result only: post nothing, drain nothing");
  hook_cmd->add_flag("!--progress", hook.run.quiet, "Progress lines on stderr");

  auto* th_cmd = app.add_subcommand("thresholds", "Threshold files");
  th_cmd->require_subcommand(1);
  std::string validate_dir;
  auto* validate_cmd =
      th_cmd->add_subcommand("validate", "Validate a directory of SKU threshold files");
  validate_cmd->add_option("dir", validate_dir, "Thresholds directory")->required();

  auto* report_cmd = app.add_subcommand("report", "Work with NodeReport files");
  report_cmd->require_subcommand(1);
  std::vector<std::string> report_files;
  auto* table_cmd = report_cmd->add_subcommand("table", "Print a per-node table of report files");
  table_cmd->add_option("files", report_files, "NodeReport JSON files")->required();

  XidClearArgs xid;
  xid.state_dir = hook.run.state_dir;  // the hook's default
  add_xid_clear_command(app, xid);
  auto* list_cmd = app.add_subcommand("list", "List the checks (name, short name, suite, timeout)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  if (*run_cmd) return cmd_run(run);
  if (*fabric_cmd) return cmd_fabric(fabric);
  if (*hook_cmd) return cmd_hook(hook);
  if (*validate_cmd) return cmd_thresholds_validate(validate_dir);
  if (*table_cmd) return cmd_report_table(report_files);
  if (*list_cmd) return cmd_list();
  if (*xid.cmd) return cmd_xid_clear(xid.state_dir, xid.node, xid.gpu);
  return kExitError;
}
