// Fleet-scale drain benchmark (issue 4): against a slurmctld with 10,000 simulated nodes
// (fleet-cluster.sh), 1,000 failing NodeReports go through the real drainer (journal, policy
// engine, Slurm sink batching) into libslurm, and the same number of drains are done the way
// shell-based health checkers do them: one `scontrol update` per node. Prints both times and
// the ratio; exits non-zero when a drain did not land (and, with --enforce-goals, when the goals
// are missed). Usage: tests/bench/drainer_fleet/run-fleet-bench.sh BUILD_DIR (docs/slurm-sink.md).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vigil/drainer/config.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/policy.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"
#include "vigil/slurm/slurm_rest.h"

extern char** environ;

namespace {

using vigil::slurm::SlurmApi;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string sim_node(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "sim-%05d", i);
  return buf;
}

std::vector<std::string> node_range(int first, int count) {
  std::vector<std::string> v;
  for (int i = 0; i < count; ++i) v.push_back(sim_node(first + i));
  return v;
}

// A report whose GEMM figure fails its threshold. distinct: a different figure per node (so a
// different Slurm reason each, the worst case for batching).
// pass: the same check and figure within its threshold (the previous, healthy, check cycle).
vigil::NodeReport failing_report(const std::string& node, int i, bool distinct, bool pass = false) {
  vigil::NodeReport r;
  r.node = node;
  r.sku = "h100-sxm5-80gb";
  r.run_id = std::string(pass ? "fleet-bench-prev-" : "fleet-bench-") + node;
  r.start_time = vigil::rfc3339_utc(std::time(nullptr) - 60);
  r.end_time = vigil::rfc3339_utc(std::time(nullptr));
  vigil::CheckResult c;
  c.check = "gpu_gemm";
  c.status = vigil::Status::kFail;
  vigil::Measurement m;
  m.name = "gemm_bf16_tflops";
  m.value = distinct ? 100.0 + i : 100.0;
  m.unit = "TFLOP/s";
  m.gpu = 0;
  vigil::Threshold t;
  t.op = vigil::Op::kGe;
  t.fail = 700;
  t.unit = "TFLOP/s";
  m.threshold = t;
  c.measurements.push_back(m);
  c.message = "gpu0 gemm " + std::to_string(static_cast<int>(m.value)) + " < 700 TFLOP/s";
  c.fault_code = "VIGIL-CUDA-GEMM-SLOW";
  if (pass) {
    c.status = vigil::Status::kPass;
    c.measurements.front().value = 900;
    c.message.clear();
    c.fault_code.clear();
  }
  r.checks.push_back(c);
  return r;
}

// Counts nodes in [first, first+count) that are drained with a reason starting with prefix.
int count_drained(vigil::slurm::SlurmApi& api, int first, int count, const std::string& prefix,
                  int* total) {
  auto nodes = api.load_nodes();
  if (!nodes.ok()) {
    std::fprintf(stderr, "load_nodes: %s\n", nodes.error().to_string().c_str());
    return -1;
  }
  if (total != nullptr) *total = static_cast<int>(nodes->size());
  const std::string lo = sim_node(first), hi = sim_node(first + count - 1);
  int n = 0;
  for (const auto& info : *nodes) {
    if (info.name >= lo && info.name <= hi && info.drain && info.reason.rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

// Forwards to the real vigil::slurm::SlurmApi and accounts for the time spent in each call, so the
// bench can say where the drainer's time goes (Slurm RPCs vs its own work).
class TimedSlurmApi final : public vigil::slurm::SlurmApi {
 public:
  explicit TimedSlurmApi(std::shared_ptr<vigil::slurm::SlurmApi> real) : real_(std::move(real)) {}
  vigil::Result<std::vector<vigil::slurm::SlurmNodeInfo>> load_nodes() override {
    auto t0 = Clock::now();
    auto r = real_->load_nodes();
    load_ms += ms_since(t0);
    ++loads;
    return r;
  }
  vigil::VoidResult drain(const std::vector<std::string>& nodes,
                          const std::string& reason) override {
    auto t0 = Clock::now();
    auto r = real_->drain(nodes, reason);
    update_ms += ms_since(t0);
    ++updates;
    return r;
  }
  vigil::VoidResult undrain(const std::vector<std::string>& nodes) override {
    auto t0 = Clock::now();
    auto r = real_->undrain(nodes);
    update_ms += ms_since(t0);
    ++updates;
    return r;
  }
  void reset() {
    loads = updates = 0;
    load_ms = update_ms = 0;
  }
  int loads = 0, updates = 0;
  double load_ms = 0, update_ms = 0;

 private:
  std::shared_ptr<vigil::slurm::SlurmApi> real_;
};

struct DrainerRun {
  double ingest_ms = 0;
  double decide_ms = 0;
  double apply_ms = 0;
  int decided = 0;
  int left = 0;
  bool ok = false;
  int loads = 0, updates = 0;  // vigil::slurm::SlurmApi calls during decide+apply
  double load_ms = 0, update_ms = 0;
};

// Ingest -> decide -> apply through vigil::drainer::Drainer, timed per stage.
// steady: the nodes' previous (passing) check cycle is decided first, untimed, as in a service
// that has been running: the timed decisions may then reuse the Slurm view that cycle read
// (slurm.view_max_age_s), while the sink still re-reads Slurm before acting. Otherwise the
// failing reports are the first thing the drainer sees (cold: it reads Slurm twice).
DrainerRun run_drainer(std::shared_ptr<vigil::slurm::SlurmApi> api, const std::string& conf,
                       const std::string& state_dir, int first, int count, bool distinct,
                       bool steady) {
  DrainerRun out;
  vigil::drainer::DrainerConfig cfg;
  cfg.source = "<fleet bench>";
  cfg.auth_enabled = false;
  cfg.state_dir = state_dir;
  cfg.policy.defaults.drain_after = 1;  // one failing report drains (a fatal finding)
  cfg.breaker.max_drains = 1000000;     // the bench measures throughput, not the breaker
  cfg.breaker.max_percent = 100;
  cfg.slurm.conf = conf;
  vigil::SystemClock clock;
  auto timed = std::make_shared<TimedSlurmApi>(std::move(api));
  vigil::drainer::Drainer drainer(cfg, timed, nullptr, clock);
  if (auto r = drainer.open(); !r.ok()) {
    std::fprintf(stderr, "drainer open: %s\n", r.error().to_string().c_str());
    return out;
  }
  std::vector<vigil::NodeReport> reports;
  if (steady) {
    for (int i = 0; i < count; ++i)
      reports.push_back(failing_report(sim_node(first + i), i, distinct, true));
    if (!drainer.ingest(reports).ok() || drainer.process_pending() != count ||
        drainer.run_slurm_sink_once() != 0) {
      std::fprintf(stderr, "steady state: the previous cycle was not decided\n");
      return out;
    }
    reports.clear();
  }
  for (int i = 0; i < count; ++i)
    reports.push_back(failing_report(sim_node(first + i), i, distinct));

  auto t0 = Clock::now();
  auto ing = drainer.ingest(reports);
  out.ingest_ms = ms_since(t0);
  if (!ing.ok() || ing->accepted != count) {
    std::fprintf(stderr, "ingest: %s\n",
                 ing.ok() ? "not all accepted" : ing.error().to_string().c_str());
    return out;
  }
  timed->reset();  // count decide+apply only
  t0 = Clock::now();
  out.decided = drainer.process_pending();
  out.decide_ms = ms_since(t0);
  t0 = Clock::now();
  out.left = drainer.run_slurm_sink_once();
  out.apply_ms = ms_since(t0);
  out.ok = out.decided == count && out.left == 0;
  out.loads = timed->loads;
  out.updates = timed->updates;
  out.load_ms = timed->load_ms;
  out.update_ms = timed->update_ms;
  return out;
}

// One `scontrol update` per node, as NHC-style shell checkers do.
double run_scontrol_loop(const std::vector<std::string>& nodes, const std::string& reason,
                         int* failures) {
  *failures = 0;
  auto t0 = Clock::now();
  for (const std::string& n : nodes) {
    std::string a1 = "nodename=" + n, a2 = "state=drain", a3 = "reason=" + reason;
    char* argv[] = {const_cast<char*>("scontrol"),
                    const_cast<char*>("update"),
                    a1.data(),
                    a2.data(),
                    a3.data(),
                    nullptr};
    pid_t pid;
    if (posix_spawnp(&pid, "scontrol", nullptr, nullptr, argv, environ) != 0) {
      ++*failures;
      continue;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++*failures;
  }
  return ms_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string conf;
  int count = 1000;
  bool enforce = false;
  std::string backend = "libslurm";
  vigil::slurm::RestSettings rest;
  // A 10,000-node GET nodes is a ~22 MB JSON document (24.11): allow it time on a busy machine.
  rest.timeout_ms = 120000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--conf" && i + 1 < argc)
      conf = argv[++i];
    else if (a == "--reports" && i + 1 < argc)
      count = std::atoi(argv[++i]);
    else if (a == "--enforce-goals")
      enforce = true;
    else if (a == "--backend" && i + 1 < argc)
      backend = argv[++i];
    else if (a == "--rest-url" && i + 1 < argc)
      rest.url = argv[++i];
    else if (a == "--token-file" && i + 1 < argc)
      rest.token_file = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s --conf SLURM_CONF [--reports N] [--enforce-goals] "
                   "[--backend libslurm|rest --rest-url URL --token-file FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  if (conf.empty() || count <= 0 || count > 2000) {
    std::fprintf(stderr,
                 "need --conf (fleet-cluster.sh's slurm.conf) and 1 <= --reports <= 2000\n");
    return 2;
  }
  setenv("SLURM_CONF", conf.c_str(), 1);  // for the scontrol baseline
  // The drainer's Slurm sink over the chosen backend; the baseline is always scontrol.
  std::shared_ptr<vigil::slurm::SlurmApi> api;
  if (backend == "rest") {
    auto r = vigil::slurm::make_rest_api(rest);
    if (!r.ok()) {
      std::fprintf(stderr, "rest backend: %s\n", r.error().to_string().c_str());
      return 2;
    }
    api = std::move(*r);
  } else if (backend == "libslurm") {
    api = vigil::slurm::make_libslurm_api(conf);
  } else {
    std::fprintf(stderr, "--backend must be libslurm or rest\n");
    return 2;
  }
  std::printf("backend: %s%s\n", backend.c_str(),
              backend == "rest" ? (" (slurmrestd " + rest.url + ")").c_str() : "");

  int total = 0;
  auto t0 = Clock::now();
  if (count_drained(*api, 0, 1, "vigil:", &total) < 0) return 1;
  const double load_ms = ms_since(t0);
  if (total < 5 * count) {
    std::fprintf(stderr, "the fleet has %d nodes; need at least %d\n", total, 5 * count);
    return 1;
  }
  std::printf("fleet: %d nodes in slurmctld; slurm_load_node of all: %.1f ms\n", total, load_ms);

  char tmpl[] = "/tmp/vigil-fleet-state.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string state_root = tmpl;
  bool all_ok = true;

  // 1. The vigil::slurm::SlurmApi alone: one drain() call over a 1,000-node hostlist.
  const auto sink_nodes = node_range(0, count);
  t0 = Clock::now();
  auto sink = api->drain(sink_nodes, "vigil: gemm gemm_bf16_tflops 100<700TFLOP/s");
  const double sink_ms = ms_since(t0);
  if (!sink.ok()) std::fprintf(stderr, "drain: %s\n", sink.error().to_string().c_str());
  const int sink_drained = count_drained(*api, 0, count, "vigil: gemm", nullptr);

  // 2. The whole drainer, one shared reason (a mass failure such as a bad threshold file), in
  //    a running service: the nodes passed their previous check cycle.
  DrainerRun same = run_drainer(api, conf, state_root + "/same", count, count, false, true);
  const int same_drained = count_drained(*api, count, count, "vigil:", nullptr);

  // 3. The same, as the first thing a freshly started drainer sees.
  DrainerRun cold = run_drainer(api, conf, state_root + "/cold", 4 * count, count, false, false);
  const int cold_drained = count_drained(*api, 4 * count, count, "vigil:", nullptr);

  // 4. The whole drainer, a different reason per node (worst case: one RPC per node).
  DrainerRun distinct =
      run_drainer(api, conf, state_root + "/distinct", 2 * count, count, true, true);
  const int distinct_drained = count_drained(*api, 2 * count, count, "vigil:", nullptr);

  // 5. Baseline: one scontrol process per node.
  int failures = 0;
  const double scontrol_ms =
      run_scontrol_loop(node_range(3 * count, count), "vigil: gemm 100<700TFLOP/s", &failures);
  const int scontrol_drained = count_drained(*api, 3 * count, count, "vigil:", nullptr);

  std::error_code ec;
  std::filesystem::remove_all(state_root, ec);

  const double same_total = same.decide_ms + same.apply_ms;
  const double cold_total = cold.decide_ms + cold.apply_ms;
  const double distinct_total = distinct.decide_ms + distinct.apply_ms;
  const std::string title = "path (" + std::to_string(count) + " failing nodes)";
  std::printf("\n%-58s %10s %9s %8s\n", title.c_str(), "time (ms)", "drained", "vs scontrol");
  auto row = [&](const std::string& name, double ms, int drained) {
    std::printf("%-58s %10.1f %9d %7.1fx\n", name.c_str(), ms, drained, scontrol_ms / ms);
  };
  row("vigil::slurm::SlurmApi::drain, one hostlist RPC", sink_ms, sink_drained);
  row("drainer decide+apply, shared reason", same_total, same_drained);
  row("  (ingest with fsync before that: " + std::to_string(static_cast<int>(same.ingest_ms)) +
          " ms)",
      same.ingest_ms + same_total, same_drained);
  row("  (first reports after the drainer started)", cold_total, cold_drained);
  row("drainer decide+apply, distinct reason per node", distinct_total, distinct_drained);
  row("scontrol update per node (baseline)", scontrol_ms, scontrol_drained);
  for (const auto* run : {&same, &cold, &distinct}) {
    std::printf(
        "%s: decide %.1f ms + apply %.1f ms; inside them %d slurm_load_node calls %.1f ms, "
        "%d slurm_update_node calls %.1f ms, drainer's own work %.1f ms\n",
        run == &same   ? "shared reason"
        : run == &cold ? "shared reason, first reports"
                       : "distinct reasons",
        run->decide_ms, run->apply_ms, run->loads, run->load_ms, run->updates, run->update_ms,
        run->decide_ms + run->apply_ms - run->load_ms - run->update_ms);
  }

  all_ok = sink.ok() && sink_drained == count && same.ok && same_drained == count && cold.ok &&
           cold_drained == count && distinct.ok && distinct_drained == count && failures == 0 &&
           scontrol_drained == count;
  const double ratio = scontrol_ms / same_total;
  const bool goals = ratio >= 20 && same_total < 1000;
  std::printf(
      "goal (>= 20x faster than scontrol and < 1 s for %d, running service): %s (%.1fx, %.0f ms)"
      "; first reports after a start: %.1fx, %.0f ms\n",
      count, goals ? "met" : "NOT met", ratio, same_total, scontrol_ms / cold_total, cold_total);
  if (!all_ok) {
    std::printf("FAILED: not every drain landed (see above)\n");
    return 1;
  }
  return (enforce && !goals) ? 3 : 0;
}
