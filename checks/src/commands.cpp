// vigil-check's `run`, `fabric` and `hook` (commands.h).
#include "commands.h"

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
#include <set>

#include "allreduce/fabric_job.h"
#include "ib/ib_sysfs.h"
#include "inventory.h"
#include "nvml/gpu_reset.h"
#include "vigil/base/files.h"
#include "vigil/checks/gpu_probe.h"
#include "vigil/checks/passive.h"
#include "vigil/checks/registry.h"
#include "vigil/checks/runner.h"
#include "vigil/hook/hook.h"
#include "vigil/report/output.h"
#include "vigil/report/report_client.h"
#include "vigil/slurm/scontrol.h"

namespace vigil_cli {

void add_report_options(CLI::App* cmd, RunArgs& r) {
  cmd->add_option("--thresholds", r.thresholds, "Directory of per-SKU threshold YAML files");
  cmd->add_option("--sku", r.sku, "Use this SKU instead of detecting it");
  cmd->add_option("--format", r.format, "table or json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--output,-o", r.output, "Write the report(s) here (default: stdout)");
  cmd->add_option("--node", r.node, "Node name (default: $SLURMD_NODENAME or hostname)");
  cmd->add_option("--report-url", r.report_url,
                  "POST the report to vigil-drainer (retries, then spools)")
      ->envname("VIGIL_REPORT_URL");
  cmd->add_option("--token-file", r.token_file, "Bearer token for --report-url")
      ->envname("VIGIL_TOKEN_FILE");
  cmd->add_option("--ca-file", r.ca_file, "CA (PEM) that an https --report-url must chain to")
      ->envname("VIGIL_CA_FILE");
  cmd->add_option("--spool-dir", r.spool_dir, "Spool the report here when it cannot be delivered")
      ->envname("VIGIL_SPOOL_DIR");
  add_auth_options(cmd, r.auth);
}

namespace {

// A fabric re-check reports the drained node only: its known-good partner is not judged.
bool reported(const RunArgs& a, const std::string& node) {
  return a.report_nodes.empty() || std::ranges::count(split_list(a.report_nodes), node) > 0;
}

// Loads the thresholds and fills the context both subcommands share (node, SKU, paths).
// Returns 0, or the exit code after printing why.
// hook: `vigil-check hook`, whose passive suite detects the SKU itself and loads no GPU.
// parts: where to put the GPUs' serials, UUIDs and VBIOS versions (the report's "gpus") and
// the driver's version, when wanted.
int prepare(const RunArgs& a, vigil::Loaded<vigil::SkuSet>& skus, vigil::CheckContext& ctx,
            std::string& sku_note, bool hook = false, vigil::NodeReport* parts = nullptr) {
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
  ctx.suite = a.suite == "qualify" ? vigil::Suite::kQualify
              : a.suite == "full"  ? vigil::Suite::kFull
                                   : vigil::Suite::kQuick;
  ctx.soak.duration = std::chrono::seconds(a.soak_s);
  ctx.nvml_library = a.nvml_library;
  ctx.sysfs_root = a.sysfs_root;
  ctx.host.own_job = !a.job_id.empty() ? a.job_id : env_or("SLURM_JOB_ID", "");
  ctx.state_dir = a.state_dir;
  ctx.allreduce = a.allreduce;
  ctx.imex = a.imex;
  ctx.xid_wait = std::chrono::milliseconds(a.xid_wait_ms);
  ctx.expected_gpus = a.expected_gpus;

  if (hook) {  // the passive suite detects the SKU in its own child, with its one NVML attach
    if (!a.sku.empty() && !(ctx.sku = skus.value->by_name(a.sku))) {
      std::cerr << "vigil-check: --sku: unknown SKU '" << a.sku << "'\n";
      return kExitError;
    }
    return 0;
  }
  auto inventory = vigil::read_gpu_inventory(ctx.nvml_library);
  if (inventory) ctx.gpu_count = static_cast<int>(inventory->gpu_names.size());
  if (inventory && parts) {
    parts->gpus = vigil::gpu_parts(*inventory);
    parts->driver = inventory->driver;
  }
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
    const vigil::Delivery d = vigil::deliver_report(report, client);
    const bool lost = d.kind == vigil::Delivery::Kind::kFailed;
    if (lost) rc = kExitError;
    if (lost || !a.quiet)
      std::cerr << "vigil-check: report for " << report.node << " " << d.text << "\n";
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

// One report per fabric node this run reports for (--report-nodes), each with the results
// `checks_of(node)`; emitted, and the exit code of the worst of them.
int emit_node_reports(
    const RunArgs& a, const vigil::CheckContext& ctx, int64_t start, const std::string& end,
    const std::function<std::vector<vigil::CheckResult>(const std::string&)>& checks_of) {
  std::vector<vigil::NodeReport> reports;
  vigil::Status overall = vigil::Status::kPass;
  for (const auto& node : ctx.allreduce.nodes) {
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
int cmd_fabric_job(const RunArgs& a, const vigil::CheckContext& ctx,
                   const vigil::FabricNetwork& network) {
  std::string topology_note = "no topology (an NVLink domain has no leaf switches)";
  auto loaded =
      network.transport == vigil::kDomainTransport
          ? vigil::Result<std::map<std::string, std::string>>(std::map<std::string, std::string>{})
          : fabric_topology(a.topology, topology_note);
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
    std::cerr << "vigil-check fabric: " << network.job << ", " << ctx.allreduce.nodes.size()
              << " nodes, " << a.fabric_rounds << " rounds of pairs, backend "
              << ctx.allreduce.backend << "; " << topology_note << "\n";
  }
  vigil::AllreduceTuning tuning;
  if (!a.min_bytes.empty()) tuning.min_bytes = a.min_bytes;
  if (!a.max_bytes.empty()) tuning.max_bytes = a.max_bytes;
  const int64_t start = now_unix();
  const std::uint64_t seed = std::hash<std::string>{}(env_or("SLURM_JOB_ID", a.run_id));
  auto results = vigil::run_fabric_job(ctx, a.fabric_rounds, seed, leaf_of, tuning, network);
  const std::string end = vigil::rfc3339_utc(now_unix());
  return emit_node_reports(a, ctx, start, end, [&](const std::string& node) {
    return std::vector<vigil::CheckResult>{results.at(node)};
  });
}

}  // namespace

// Slurm's GPU count for this node (from vigil-submit) noted for the hooks, best effort: a
// directory that is missing or not writable leaves them the SKU's count (docs/hooks.md).
static void note_expected_gpus(const RunArgs& a, const vigil::CheckContext& ctx) {
  if (ctx.expected_gpus <= 0) return;
  for (const std::string& dir : a.hook_state_dirs) {
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec)) continue;
    auto w = vigil::replace_file_atomically(expected_gpus_note(dir, ctx.node),
                                            std::to_string(ctx.expected_gpus) + "\n");
    if (!w && !a.quiet)
      std::cerr << "vigil-check: Slurm's GPU count not noted for the hooks: "
                << w.error().to_string() << "\n";
  }
}

int cmd_run(const RunArgs& a) {
  vigil::Loaded<vigil::SkuSet> skus;
  vigil::CheckContext ctx;
  std::string sku_note;
  vigil::NodeReport parts;
  if (int rc = prepare(a, skus, ctx, sku_note, false, &parts); rc != 0) return rc;
  ctx.repeat_spacing = std::chrono::seconds(a.repeat_spacing_s);  // fabric and hook: none

  auto checks = vigil::all_checks(&*skus.value);
  size_t done = 0;
  vigil::RunOptions opts = run_options(a, done);
  if (!select_checks(a, checks, opts)) return kExitError;
  vigil::NodeReport report = start_report(a, ctx, now_unix());
  // A suite, less what the site excludes (a check its nodes cannot run), is named; checks picked
  // by hand (--only) are not a suite, and the qualify gate must not count them as one.
  if (a.only.empty()) report.suite = a.suite;
  if (!a.quiet) {
    std::cerr << "vigil-check: node " << ctx.node << ", SKU " << report.sku
              << (sku_note.empty() ? "" : " (" + sku_note + ")") << ", suite " << a.suite << "\n";
  }
  report.checks = vigil::run_checks(checks, ctx, opts);
  report.end_time = vigil::rfc3339_utc(now_unix());
  report.gpus = std::move(parts.gpus);
  report.driver = std::move(parts.driver);
  report.nics = vigil::ib::nic_parts(ctx.sysfs_root);
  note_expected_gpus(a, ctx);
  if (int rc = emit(a, {report}); rc != 0) return rc;
  return vigil::exit_code_for(report.overall());
}

// The pair test of a fabric job (`sbatch -N 2`): the fabric checks run once across the
// allocation, and every node of the pair gets a report with their results.
int cmd_fabric(const RunArgs& a) {
  vigil::Loaded<vigil::SkuSet> skus;
  vigil::CheckContext ctx;
  std::string sku_note;
  if (int rc = prepare(a, skus, ctx, sku_note); rc != 0) return rc;
  ctx.allreduce.nodes = split_list(ctx.allreduce.nodes);
  std::set<std::string> distinct(ctx.allreduce.nodes.begin(), ctx.allreduce.nodes.end());
  if (ctx.allreduce.nodes.size() < 2 || distinct.size() != ctx.allreduce.nodes.size()) {
    std::cerr << "vigil-check fabric: --nodes needs at least two distinct node names (got '"
              << join(ctx.allreduce.nodes, ",") << "')\n";
    return kExitError;
  }
  if (ctx.allreduce.ranks <= 0)
    ctx.allreduce.ranks = std::atoi(env_or("SLURM_NTASKS", "0").c_str());
  if (ctx.allreduce.ranks < 2) {
    std::cerr << "vigil-check fabric: --ranks (or SLURM_NTASKS) must be at least 2\n";
    return kExitError;
  }
  for (const auto& n : split_list(a.report_nodes)) {
    if (distinct.count(n)) continue;
    std::cerr << "vigil-check fabric: --report-nodes names " << n << ", which is not in --nodes\n";
    return kExitError;
  }

  const bool domain = a.fabric_network == "nvlink-domain";
  if (domain && !a.topology.empty()) {
    std::cerr << "vigil-check fabric: --topology names leaf switches of the InfiniBand fabric; an "
                 "NVLink domain job has none\n";
    return kExitError;
  }
  const vigil::FabricNetwork& network = domain ? vigil::kNvlinkDomain : vigil::kInfinibandFabric;
  if (ctx.allreduce.nodes.size() > 2) return cmd_fabric_job(a, ctx, network);

  auto checks = domain ? vigil::domain_checks(a.min_bytes, a.max_bytes)
                       : vigil::fabric_checks(a.min_bytes, a.max_bytes);
  size_t done = 0;
  vigil::RunOptions opts = run_options(a, done);
  if (!select_checks(a, checks, opts)) return kExitError;
  const std::string pair = join(ctx.allreduce.nodes, "+");
  if (!a.quiet) {
    std::cerr << "vigil-check fabric: " << network.job << ", pair " << pair << ", "
              << ctx.allreduce.ranks << " ranks, backend " << ctx.allreduce.backend << ", SKU "
              << (ctx.sku ? ctx.sku->name : "unknown")
              << (sku_note.empty() ? "" : " (" + sku_note + ")") << "\n";
  }
  const int64_t start = now_unix();
  auto results = vigil::run_checks(checks, ctx, opts);
  for (auto& r : results) r.message = "pair " + pair + (r.message.empty() ? "" : ": " + r.message);
  const std::string end = vigil::rfc3339_utc(now_unix());
  return emit_node_reports(a, ctx, start, end, [&](const std::string&) { return results; });
}

// slurmd tells its hooks no GPU count. The node jobs know Slurm's (vigil-submit passes the
// node's Gres as VIGIL_EXPECTED_GPUS) and note it in the hooks' state dir
// (`vigil-check run --hook-state-dir`, expected_gpus_note); the hooks read the latest note.
// None, or an unreadable one: the SKU's count, as before.
static void expect_noted_gpus(vigil::CheckContext& ctx) {
  if (ctx.state_dir.empty() || ctx.node.empty()) return;
  std::ifstream in(expected_gpus_note(ctx.state_dir, ctx.node));
  int n = 0;
  if (in >> n && n > 0 && n <= 1024) {
    ctx.expected_gpus = n;
    ctx.expected_gpus_from = "Slurm Gres (noted by a node job)";
  }
}

// `vigil-check hook MODE`: the passive suite, then post / drain (docs/hooks.md). Exit 1 only on a
// fatal finding; every other outcome, errors included, exits 0 so that Slurm does not drain.
int cmd_hook(HookArgs& h) {
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + std::chrono::seconds(h.time_box_s);
  const auto mode = value_of(vigil::hook::kModeNames, h.mode);
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
  if (ctx.expected_gpus == 0) expect_noted_gpus(ctx);
  // nvml_fabric's settle window must leave the rest of the suite its share of the time box.
  ctx.fabric_wait.settle = std::min<std::chrono::milliseconds>(
      ctx.fabric_wait.settle, std::chrono::milliseconds(h.time_box_s * 1000 / 4));
  if (*mode == vigil::hook::Mode::kEpilog) {
    ctx.leftovers.job_gpus = vigil::hook::parse_job_gpus(env_or("SLURM_JOB_GPUS", ""));
    ctx.leftovers.job_id = env_or("SLURM_JOB_ID", "");
    ctx.leftovers.residents.insert(ctx.leftovers.residents.end(), h.gpu_residents.begin(),
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

// The repair ladder's GPU reset (nvml/gpu_reset.h, docs/repair.md): a report with the one entry
// gpu_reset, delivered like any report; the exit code of its status.
int cmd_repair_reset(const RunArgs& a, vigil::nvml::ResetOptions o) {
  vigil::CheckContext ctx;
  ctx.node = !a.node.empty() ? a.node : env_or("SLURMD_NODENAME", hostname());
  ctx.nvml_library = a.nvml_library;
  vigil::NodeReport report = start_report(a, ctx, now_unix());
  o.node = ctx.node;
  const auto started = std::chrono::steady_clock::now();
  vigil::CheckResult r = vigil::nvml::reset_gpus(ctx, o);
  r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!a.quiet)
    std::cerr << "vigil-check repair reset-gpu: node " << ctx.node << ": "
              << vigil::to_string(r.status) << " - " << r.message << "\n";
  report.checks.push_back(std::move(r));
  report.end_time = vigil::rfc3339_utc(now_unix());
  if (int rc = emit(a, {report}); rc != 0) return rc;
  return vigil::exit_code_for(report.overall());
}

}  // namespace vigil_cli
