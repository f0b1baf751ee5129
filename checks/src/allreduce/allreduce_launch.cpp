#include "allreduce/allreduce_launch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "allreduce/allreduce_repeats.h"
#include "allreduce/launch_files.h"
#include "core/counter_state.h"
#include "cuda/probe_math.h"
#include "ib/ib_sysfs.h"
#include "nvml/gpu_busy.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/ncclbench/bench_result.h"
#include "vigil/ncclbench/options.h"
#include "vigil/ncclbench/parser.h"

namespace vigil {
namespace fs = std::filesystem;
namespace nb = ncclbench;

namespace {

// Extra time the launcher waits past vigil-allreduce's own watchdog before it kills mpirun.
constexpr std::chrono::seconds kLauncherGrace{15};

std::string seconds_text(std::chrono::seconds s) { return std::to_string(s.count()) + " s"; }

CheckResult timeout_result(const AllreduceSpec& spec, std::chrono::seconds t, std::string detail) {
  CheckResult r;
  r.check = std::string(spec.check);
  r.status = Status::kFail;  // a hang on a fabric test is a health signal
  r.message = "timeout after " + seconds_text(t);
  if (!detail.empty()) r.message += " (" + detail + ")";
  r.fault_code = std::string(spec.fault_prefix) + "-TIMEOUT";
  return r;
}

std::string connections_text(const nb::TransportUse& t) {
  std::string used = "NCCL connected via " + (t.paths.empty() ? "?" : short_list(t.paths, 4));
  if (t.net_connections > 0)
    used += " (GDRDMA on " + std::to_string(t.gdr_connections) + " of " +
            std::to_string(t.net_connections) + " network connections)";
  if (t.nvls) used += ", NVLS";
  return used;
}

bool uses_path(const nb::TransportUse& t, std::string_view kind) {
  return std::any_of(t.paths.begin(), t.paths.end(),
                     [&](const std::string& p) { return p.rfind(kind, 0) == 0; });
}

// A multi-node run crosses the network whatever its intra-node transport setting says, except
// an NVLink domain job's, which must not.
bool across_the_network(const AllreduceSpec& spec, const nb::BenchRun& run) {
  return spec.transport != kDomainTransport &&
         (spec.transport == "ib" || spec.map_by_node || run.nodes.value_or(1) > 1);
}

// GPUDirect RDMA on fewer than all network connections of an IB test is named as the cause of a
// low figure, which still counts: every job's traffic on that node is staged through host
// memory too.
void judge_transport(CheckResult& r, const AllreduceSpec& spec, const nb::BenchRun& run,
                     const nb::TransportUse& t) {
  const std::string used = connections_text(t);
  if (auto wrong = wrong_path(spec, run)) {
    r.status = Status::kError;
    r.fault_code = std::string(spec.fault_prefix) + wrong->code;
    r.message = wrong->why + " (" + used + "): the figure is not judged; " + r.message;
    return;
  }
  r.message += "; " + used;
  if (across_the_network(spec, run) && t.gdr_connections < t.net_connections &&
      (r.status == Status::kFail || r.status == Status::kWarn))
    r.fault_code = std::string(spec.fault_prefix) + "-IB-NO-GDR";
}

// Turns a parsed run into the check's verdict.
CheckResult verdict(const CheckContext& ctx, const AllreduceSpec& spec, const nb::BenchRun& run) {
  CheckResult r;
  r.check = std::string(spec.check);
  const double busbw = run.summary_busbw();
  add_measurement(r, ctx, "busbw", busbw, "GB/s");
  const std::int64_t wrong = run.out_of_bounds.value_or(run.total_wrong());
  if (wrong > 0 || run.out_of_bounds_ok == false) {
    r.status = Status::kFail;
    r.message = std::to_string(wrong) + " wrong values in the all_reduce data check (busbw " +
                fixed(busbw, 2) + " GB/s)";
    r.fault_code = std::string(spec.fault_prefix) + "-WRONG-RESULTS";
    return r;
  }
  finalize(r, spec.fault_prefix);
  if (r.status == Status::kPass && r.message.empty()) {
    r.message = "busbw " + fixed(busbw, 2) + " GB/s, " +
                std::to_string(run.ranks.value_or(spec.ranks)) + " ranks, " +
                std::to_string(run.rows.size()) + " sizes (slowest rank per size)";
  }
  // Review F06: the figure is only the SKU floor's if NCCL chose its own algorithms. Inherited
  // settings were removed (said so); a NCCL configuration file's cannot be, and a figure measured
  // under them is not judged against the floor: never a fail.
  if (!run.nccl_conf_tuning.empty()) {
    if (r.status == Status::kFail) {
      r.status = Status::kWarn;
      r.fault_code = std::string(spec.fault_prefix) + "-SITE-TUNING";
    }
    r.message += "; measured under the site's NCCL settings " +
                 short_list(run.nccl_conf_tuning, 3) +
                 ", not the mode the SKU floor describes (remove them to judge this node)";
  }
  if (!run.nccl_env_removed.empty())
    r.message += "; ignored the job's " + short_list(run.nccl_env_removed, 3);
  // What NCCL chose at the largest size (the bytes that dominate busbw), and whether it is the
  // algorithm the SKU floor was measured with (Threshold::nccl_algorithm). The verdict stays:
  // NCCL falling back from NVLS is itself a node problem (no NVSwitch multicast, an unregistered
  // fabric: nvml_fabric names the latter), every job there is as slow, and the floor's own
  // `unconfirmed` flag is what keeps an unproven floor from draining. The cause goes into the
  // fault code and the reason.
  if (!run.nccl_algorithms.empty()) {
    const nb::AlgoChoice& big = run.nccl_algorithms.back();
    r.message +=
        "; NCCL chose " + big.algorithm + "/" + big.protocol + " at " + bytes_text(big.size_bytes);
    const Threshold* t = ctx.threshold(spec.check, "busbw");
    if (t && !t->nccl_algorithm.empty() && t->nccl_algorithm != big.algorithm) {
      r.message += ", not " + t->nccl_algorithm + " as the SKU floor assumes";
      if (r.status == Status::kFail || r.status == Status::kWarn)
        r.fault_code = std::string(spec.fault_prefix) + "-ALGORITHM";
    }
  }
  if (run.nccl_transport) {
    // What NCCL connected over, as figures for the fabric dashboard (docs/dashboards.md): the
    // network connections, how many of them with GPUDirect RDMA, and NVLS. No bound: the
    // verdict on them is judge_transport's.
    const nb::TransportUse& t = *run.nccl_transport;
    add_measurement(r, ctx, "net_connections", t.net_connections, "count");
    add_measurement(r, ctx, "gdr_connections", t.gdr_connections, "count");
    add_measurement(r, ctx, "nvls", t.nvls ? 1 : 0, "bool");
    judge_transport(r, spec, run, t);
  }
  if (auto hca = fabric_hca_setting(ctx, spec))
    r.message += "; ran with " + *hca + " (the SKU's infiniband.devices)";
  return r;
}

}  // namespace

// An IB or fabric test with no network connection, or one NCCL made over sockets ("NET/IB : No
// device found", "Using network Socket": NVIDIA/nccl#1267, #952); an NVLink domain test that
// joined its trays over the network (multi-node NVLink not set up: IMEX, the fabric); an NVLink
// test connected over SHM or the network without any P2P.
std::optional<WrongPath> wrong_path(const AllreduceSpec& spec, const nb::BenchRun& run) {
  if (!run.nccl_transport) return std::nullopt;
  const nb::TransportUse& t = *run.nccl_transport;
  if (spec.transport == kDomainTransport) {
    if (t.net_connections > 0 || uses_path(t, "NET"))
      return WrongPath{"-NO-MNNVL",
                       "NCCL joined the trays over the network, not the NVLink domain (is the IMEX "
                       "service running? nvlink_imex and nvml_fabric say)"};
    return std::nullopt;
  }
  if (across_the_network(spec, run)) {
    if (t.network == "Socket" || uses_path(t, "NET/Socket"))
      return WrongPath{"-SOCKET-FALLBACK",
                       "NCCL fell back to TCP sockets instead of InfiniBand (is rdma-core / "
                       "libibverbs in the job's image? NCCL_IB_HCA?)"};
    if (t.net_connections == 0 && !t.paths.empty())
      return WrongPath{"-NO-NET", "no NCCL connection went through the network"};
    return std::nullopt;
  }
  if (spec.transport == "nvlink" && !t.nvls && !uses_path(t, "P2P") &&
      (uses_path(t, "SHM") || uses_path(t, "NET")))
    return WrongPath{"-NO-P2P", "NCCL connected the GPUs without P2P (NVLink)"};
  return std::nullopt;
}

void apply_tuning(AllreduceSpec& spec, const AllreduceTuning& tuning) {
  if (tuning.timeout) spec.timeout = *tuning.timeout;
  if (tuning.min_bytes) spec.min_bytes = *tuning.min_bytes;
  if (tuning.max_bytes) spec.max_bytes = *tuning.max_bytes;
  if (tuning.warmup_iters) spec.warmup_iters = *tuning.warmup_iters;
  if (tuning.iters) spec.iters = *tuning.iters;
}

std::string find_allreduce_binary(const CheckContext& ctx) {
  if (!ctx.allreduce.binary.empty()) return ctx.allreduce.binary;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& p :
         {self.parent_path() / "vigil-allreduce",
          self.parent_path().parent_path() / "nccl-bench" / "vigil-allreduce"}) {
      if (fs::exists(p, ec)) return p.string();
    }
  }
  return "vigil-allreduce";
}

bool is_nccl_tests_binary(const std::string& binary) {
  return fs::path(binary).filename().string().rfind("vigil-allreduce", 0) != 0;
}

std::optional<std::string> fabric_hca_setting(const CheckContext& ctx, const AllreduceSpec& spec) {
  if (spec.backend != "nccl" || (spec.transport != "ib" && spec.transport != kFabricTransport))
    return std::nullopt;
  if (!ctx.sku || ctx.sku->infiniband.devices.empty() || std::getenv("NCCL_IB_HCA") != nullptr ||
      nb::conf_files_set("NCCL_IB_HCA"))
    return std::nullopt;
  const std::vector<std::string> hcas = ib::listed_hca_ports(
      ctx.sysfs_root, ctx.sku->infiniband.link_layer, ctx.sku->infiniband.devices);
  if (hcas.empty()) return std::nullopt;
  std::string list;
  for (const auto& h : hcas) list += (list.empty() ? "" : ",") + h;
  return "NCCL_IB_HCA==" + list;
}

std::vector<std::string> allreduce_command(const CheckContext& ctx, const AllreduceSpec& spec,
                                           const std::string& binary,
                                           const std::string& json_path) {
  // --bind-to none: OpenMPI binds to a socket by default for more than 2 ranks,
  // round-robin, so about half the ranks would sit on the socket away from their GPU and NIC.
  // Unbound, each rank's NCCL pins its own threads to its GPU's local CPUs (NCCL uses the
  // intersection of the process's affinity and the GPU's; NCCL_IGNORE_CPU_AFFINITY, NCCL's
  // environment variable documentation).
  std::vector<std::string> argv = {ctx.allreduce.mpirun,
                                   "--allow-run-as-root",
                                   "--oversubscribe",
                                   "--bind-to",
                                   "none",
                                   "-np",
                                   std::to_string(spec.ranks)};
  if (!spec.hosts.empty()) {
    const int slots = std::max(1, spec.ranks / static_cast<int>(spec.hosts.size()));
    std::string list;
    for (const auto& h : spec.hosts)
      list += (list.empty() ? "" : ",") + h + ":" + std::to_string(slots);
    argv.insert(argv.end(), {"--host", list});
  }
  if (spec.map_by_node) argv.insert(argv.end(), {"--map-by", "node"});
  if (auto hca = fabric_hca_setting(ctx, spec)) argv.insert(argv.end(), {"-x", *hca});
  const bool site = is_nccl_tests_binary(binary);
  const auto mode = value_of(nb::kTransportNames, spec.transport);
  if (site && mode && *mode != nb::Transport::kNvlink) {
    // all_reduce_perf does not know our transport modes: export NCCL's settings to the ranks.
    for (const auto& [k, v] : nb::transport_env(*mode)) {
      argv.push_back("-x");
      argv.push_back(k + "=" + v);
    }
  }
  argv.push_back(binary);
  std::vector<std::string> sweep = {"-b", spec.min_bytes,
                                    "-e", spec.max_bytes,
                                    "-f", std::to_string(spec.step_factor),
                                    "-w", std::to_string(spec.warmup_iters),
                                    "-n", std::to_string(spec.iters),
                                    "-c", "1"};
  argv.insert(argv.end(), sweep.begin(), sweep.end());
  if (site) {
    argv.insert(argv.end(), {"-g", "1"});  // one GPU per rank, as mpirun started them
  } else {
    argv.insert(argv.end(), {"--backend", spec.backend, "--transport", spec.transport, "--json",
                             json_path, "--timeout", std::to_string(spec.timeout.count())});
  }
  return argv;
}

namespace {

// Launches the benchmark and turns what it printed into the check's result.
CheckResult launch_and_judge(const CheckContext& ctx, const AllreduceSpec& spec) {
  const std::string binary = find_allreduce_binary(ctx);
  const bool site = is_nccl_tests_binary(binary);
  LaunchDir dir;
  if (!dir.ok()) return error(spec.check, "cannot create a temporary directory under /tmp");
  const std::string json_path = dir.file("allreduce.json");
  const auto argv = allreduce_command(ctx, spec, binary, json_path);

  LaunchOptions lo;
  // Our binary ends itself at spec.timeout (watchdog); a site binary has none, we are it.
  lo.timeout = site ? spec.timeout : spec.timeout + kLauncherGrace;
  auto launched = run_command(argv, lo);
  if (!launched.ok())
    return error(spec.check,
                 "cannot start " + ctx.allreduce.mpirun + ": " + launched.error().to_string(),
                 std::string(spec.fault_prefix) + "-LAUNCH");
  const LaunchResult& lr = *launched;
  if (lr.timed_out)
    return timeout_result(spec, spec.timeout, site ? "all_reduce_perf killed" : "mpirun killed");

  const std::string what = fs::path(binary).filename().string();
  auto launch_error = [&](const std::string& why) {
    std::string tail = tail_lines(lr.err.empty() ? lr.out : lr.err, 3);
    std::string msg = what + " " + why;
    if (!tail.empty()) msg += ": " + tail;
    if (lr.exit_code == 127) msg += " (is " + binary + " installed? set --allreduce-binary)";
    return error(spec.check, msg, std::string(spec.fault_prefix) + "-LAUNCH");
  };

  if (site) {
    auto run = nb::parse_nccl_tests_text(lr.out);
    if (!run.ok()) {
      return launch_error(lr.exit_code == 0 ? "printed no result table"
                                            : "exited with code " + std::to_string(lr.exit_code));
    }
    return verdict(ctx, spec, *run);
  }

  auto run = nb::parse_bench_json(read_launch_file(json_path));
  if (!run.ok()) {
    if (lr.exit_code == nb::kExitTimeout) return timeout_result(spec, spec.timeout, "");
    if (lr.term_signal) return launch_error("killed by signal " + std::to_string(lr.term_signal));
    return launch_error("exited with code " + std::to_string(lr.exit_code) + " and no result");
  }
  switch (run->outcome) {
    case nb::Outcome::kTimeout:
      return timeout_result(spec, spec.timeout, run->message);
    case nb::Outcome::kSetupError:
      return error(spec.check, "vigil-allreduce setup failed: " + run->message,
                   std::string(spec.fault_prefix) + "-SETUP");
    case nb::Outcome::kRuntimeError:
      return error(spec.check, "vigil-allreduce failed: " + run->message,
                   std::string(spec.fault_prefix) + "-RUNTIME");
    default:
      return verdict(ctx, spec, *run);
  }
}

// Runs the all_reduce, repeats a suspicious figure (allreduce_repeats.h) and remembers a healthy
// one in the check's state file, the node's own expectation for its next run.
CheckResult launch_and_confirm(const CheckContext& ctx, const AllreduceSpec& spec) {
  using Steady = std::chrono::steady_clock;
  const Steady::time_point start = Steady::now();
  CheckResult r = launch_and_judge(ctx, spec);
  Steady::duration longest = Steady::now() - start;
  const detect::DetectConfig& cfg = ctx.detect_config();  // the site's, as the drainer's
  CounterState state(ctx.state_dir, spec.check, ctx.node);
  const std::vector<double> recent = state.recent_figures("busbw");
  const int repeats = plan_allreduce_repeats(r, recent, cfg);
  Measurement* busbw = busbw_measurement(r);
  std::string figures, stopped;  // the repeats' figures; why repeating stopped early
  // Spaced repeats (docs/detection.md): a minute of a noisy host is gone, a slow link is not.
  const bool waited =
      repeats > 0 && wait_before_repeats(ctx, Steady::now() - start, longest, stopped);
  for (int k = 0; waited && k < repeats; ++k) {
    // Another run must fit in the check's limit with room for one 1.5x slower than the slowest
    // so far; else the runner would kill the check and every figure would be lost.
    if (!another_run_fits(Steady::now() - start, longest, ctx.time_limit)) {
      stopped = repeats_stopped_note(k, repeats, ctx.time_limit);
      break;
    }
    const Steady::time_point run_start = Steady::now();
    const CheckResult again = launch_and_judge(ctx, spec);
    longest = std::max(longest, Steady::now() - run_start);
    const Measurement* figure = busbw_measurement(again);
    if (!figure || again.status == Status::kError) {
      stopped = "repeat " + std::to_string(k + 1) + " failed: " + again.message;
      break;  // the figures so far stand; fewer than 2 repeats never confirm
    }
    busbw->repeats.push_back(figure->value);
    figures += (figures.empty() ? "" : ", ") + fixed(figure->value, 2);
  }
  if (!figures.empty()) {
    r.message += "; repeated" +
                 (ctx.repeat_spacing.count() > 0
                      ? " " + std::to_string(ctx.repeat_spacing.count()) + " s later"
                      : std::string()) +
                 ": " + figures + " GB/s";
  }
  if (!stopped.empty()) r.message += "; " + stopped;
  if (state.enabled() && learn_allreduce_figure(r, recent, cfg)) {
    std::vector<double> all = busbw->repeats;
    all.push_back(busbw->value);
    state.remember_figure("busbw", cuda_probe::median(std::move(all)),
                          static_cast<std::size_t>(cfg.history_window));
    if (VoidResult saved = state.save(); !saved) {
      r.message += "; state not saved: " + saved.error().to_string();
    }
  }
  return r;
}

}  // namespace

CheckResult run_allreduce_check(const CheckContext& ctx, const AllreduceSpec& spec) {
  if (spec.backend != "nccl") return launch_and_confirm(ctx, spec);
  // NCCL uses every local GPU: one shared with other work (a second all_reduce under srun -Z)
  // makes busbw low without a fault. Such a run is error VIGIL-GPU-BUSY and the benchmark is
  // not launched. Only this node's GPUs are visible; a fabric partner's are not.
  const nvml::BusyScan others = nvml::scan_gpus_for_other_work(ctx);
  if (!others.busy.empty()) return nvml::gpu_busy_result(spec.check, others.busy);
  CheckResult r = launch_and_confirm(ctx, spec);
  if (!others.unknown.empty()) {
    r.message += (r.message.empty() ? "" : "; ") + others.unknown;
  }
  return r;
}

}  // namespace vigil
