// detect_fleet_sim: a fleet of 8x H100 nodes, hourly vigil-check runs, injected fail-slow and
// fatal faults, every report through the real codec (to_json -> text -> parse_node_report), the
// real engine, and the drainer's real policy (fold_verdicts + PolicyEngine with the default
// policy: a confirmed slow fail drains after one report, an unconfirmed one after two in a row,
// a fatal check after one, a floor after two). Prints the table recorded in docs/detection.md.
//   detect_fleet_sim [--seed N] [--nodes N] [--episodes N] [--cycles N] [--onset N]
//                    [--faulty-share F --warn F --fail F --cross-scale X]   (tuning)
//                    [--noise FIGURE=F ...]   (sensitivity: e.g. --noise ib=0.01)
//                    [--kinds K,K...]   (only these fault kinds: gemm,hbm,h2d,nvlink,ib,gemm8)
//                    [--dip-rate F]   (share of node-cycles with a transient dip; default 0.005)
//                    [--interference F]   (share of node-cycles slowed 4-12% for a whole run,
//                                          repeats included: a neighbour's heat, a noisy host)
//                    [--interference-mean-s S]   (its mean duration, exponential; default 60)
//                    [--interference-pareto A]   (heavy-tailed duration instead: Pareto, shape
//                                                 A > 1, the same mean)
//                    [--requalify-s S]   (what a false drain costs: seconds until the node is
//                                         back; default 7200: resume_after 2 held re-checks,
//                                         one per hourly cycle)
//                    [--requalify-every-s P]   (model the re-qualifying CronJob instead:
//                                               requalify_cost; runs every P s, the drainer's
//                                               list from --requalify-after-s A (60) after the
//                                               drain until --requalify-window-s W (21600), its
//                                               backoff, re-checks of --recheck-s R (80))
//                    [--repeat-spacing-s S]   (the checker's pause before repeats; default 120,
//                                              as vigil-check run)
//                    [--unconfirmed-floors]   (the SKU floors as shipped: warn-only)
//                    [--check-goals]   (exit 1 when a goal is missed; default: report only)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "fleet_model.h"
#include "load_average.h"
#include "vigil/detect/detect.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/policy.h"
#include "vigil/drainer/slow_verdicts.h"

namespace vigil::detect::sim {
namespace {

constexpr double kSizes[] = {0.05, 0.07, 0.10, 0.15, 0.20, 0.30, 0.50};
constexpr int kSizeCount = 7;
constexpr int kKindCount = 6;
constexpr std::int64_t kT0 = 1'795'000'000;

struct Options {
  std::uint64_t seed = 20261123;
  int nodes = 1000;
  int episodes = 40;
  int cycles = 12;
  int onset = 6;                    // cycle in which faults "after history" appear
  double faulty_share = 0.20;       // of the nodes of an episode
  double fatal_share = 0.01;        // of the nodes: an uncorrectable ECC error from cycle `onset`
  double dip_rate = 0.005;          // of node-cycles: one probe 8-12% low, not repeated on re-run
  double interference = 0;          // of node-cycles: 4-12% slow for a whole run, repeats included
  double interference_mean_s = 60;  // its mean duration
  double interference_pareto = 0;   // > 1: Pareto duration of this shape (heavy tail)
  // What a false drain costs: seconds until the node is resumed. 7200: the default policy's
  // resume_after 2 passing reports, from the held re-checks of the next two hourly cycles
  // (docs/recheck.md), which pass on a healthy node.
  double requalify_s = 7200;
  double requalify_every_s = 0;  // > 0: the re-qualifying CronJob's model (requalify_cost)
  double requalify_after_s = 60, requalify_window_s = 21600, recheck_s = 80;
  double repeat_spacing_s =
      120;  // the checker's pause before its repeats (vigil-check run default)
  bool unconfirmed_floors = false;  // the SKU floors as shipped: warn-only until calibrated
  int timing_reports = 10000;
  double warn = 0, fail = 0;  // > 0: override every kind's margins (for tuning)
  double cross_scale = 0;     // > 0: override DetectConfig::cross_margin_scale
  bool check_goals = false;   // exit 1 when a goal is missed
  std::vector<FigureModel> models = figure_models();  // noise as --noise overrides it
  std::vector<FaultKind> kinds{std::begin(kFaultKinds), std::end(kFaultKinds)};  // --kinds
};

struct Cell {  // one fault kind, size and timing
  int n = 0, first = 0, two = 0, ever = 0, warned = 0, warned_not_drained = 0;
};

struct Totals {
  Cell cells[kKindCount][kSizeCount][2];  // [kind][size][0 after history, 1 from first report]
  long healthy_node_cycles = 0, false_drains = 0, misattributed = 0, healthy_warn_cycles = 0;
  long dips = 0, dip_drains = 0, healthy_nodes = 0, healthy_nodes_drained = 0;
  long interfered = 0, interference_drains = 0;
  double false_drain_s = 0;  // what the false drains cost: seconds until each node is resumed
  std::mt19937_64 cron_phase{20261203};  // where a drain falls between two CronJob runs
  long drained_before_onset = 0;
  long healthy_allreduce_repeat_cycles = 0, healthy_gpu_repeat_cycles = 0;
  long fatal_n = 0, fatal_first = 0;  // fatal faults; drained in their first cycle, naming nvml_ecc
  long fatal_drained_before_onset = 0;  // falsely drained before the fatal fault: out of fatal_n
  std::vector<std::string> texts;       // the first timing_reports report texts, for the timing
  std::vector<std::int64_t> nows;
};

struct Track {
  std::optional<drainer::NodeRecord> record;  // the drainer's record of the node
  bool drained = false, warned = false, right_check = false;
  int drain_cycle = -1;
};

// The drainer's decision on one judged report, made by its own code: the verdicts folded into
// the report (slow checks become VIGIL-SLOW[-CONFIRMED] fails), then the policy engine with the
// default policy, an idle node that Slurm knows and a breaker that never trips (the simulation
// counts every drain the policy asks for). Returns the checks that drove a drain, else nothing.
class Decider {
 public:
  explicit Decider(int group_size)
      : engine_(drainer::default_policy(), {1 << 30, 100, 3600}, false, clock_),
        group_size_(group_size) {}

  std::vector<std::string> decide(NodeReport report, const ReportVerdicts& rv, std::int64_t now,
                                  Track& t) {
    clock_.now = now;
    drainer::fold_verdicts(report, rv, engine_.policy());
    slurm::SlurmNodeInfo info;
    info.name = report.node;
    info.state = "IDLE";
    info.partitions = {"gpu"};
    const drainer::Decision d =
        engine_.on_report(t.record ? &*t.record : nullptr, report, &info, breaker_, group_size_);
    t.record = d.record;
    breaker_ = d.breaker;
    if (d.action != drainer::Action::kDrain) return {};
    return d.driving_checks;
  }

 private:
  struct SimClock final : Clock {
    std::int64_t now = 0;
    std::int64_t now_unix() const override { return now; }
  } clock_;
  drainer::PolicyEngine engine_;
  drainer::BreakerState breaker_;
  int group_size_;
};

std::vector<SimNode> make_nodes(FleetModel& model, const Options& o, int episode) {
  std::vector<SimNode> nodes;
  const int faulty = static_cast<int>(o.nodes * o.faulty_share);
  const int cells = static_cast<int>(o.kinds.size()) * kSizeCount * 2;
  for (int i = 0; i < o.nodes; ++i) {
    std::optional<Fault> fault;
    if (i < faulty) {
      const int c = (i + episode * faulty) % cells;  // cells take turns across episodes
      Fault f;
      f.kind = o.kinds[c / (kSizeCount * 2)];
      f.size = kSizes[(c / 2) % kSizeCount];
      f.onset = c % 2 == 0 ? o.onset : 0;
      f.gpu = static_cast<int>(model.rng()() % kGpus);
      fault = f;
    }
    nodes.push_back(
        model.make_node("e" + std::to_string(episode) + "-n" + std::to_string(i), fault));
    if (i >= faulty && i < faulty + static_cast<int>(o.nodes * o.fatal_share)) {
      nodes.back().fatal_onset = o.onset;
    }
  }
  return nodes;
}

std::pair<NodeReport, ReportVerdicts> judge_through_codec(Engine& engine, const Run& run,
                                                          std::int64_t now, Totals& totals,
                                                          const Options& o) {
  const std::string text = to_json(run.report).dump();
  if (static_cast<int>(totals.texts.size()) < o.timing_reports) {
    totals.texts.push_back(text);
    totals.nows.push_back(now);
  }
  auto parsed = parse_node_report(std::string_view(text));
  if (!parsed) {
    std::fprintf(stderr, "report codec rejected a simulated report: %s\n", parsed.error.c_str());
    std::exit(2);
  }
  std::vector<Sample> samples = samples_from_report(*parsed.value, engine.config());
  for (const Repeat& r : run.repeats) {
    attach_repeats(samples, r.check, r.measurement, r.unit_id, r.values);
  }
  auto rv = engine.judge(samples, now);
  if (!rv.ok()) {
    std::fprintf(stderr, "judge failed: %s\n", rv.error().to_string().c_str());
    std::exit(2);
  }
  return {std::move(*parsed.value), std::move(*rv)};
}

// Seconds from a false drain to the node's resume under the re-qualifying CronJob
// (docs/recheck.md "Re-qualifying a performance drain", drainer/src/requalify.cpp): its runs come
// every requalify_every_s (where the drain falls between two runs is uniform) and re-check the
// node when the drainer lists it: from requalify_after_s after the drain until it is
// requalify_window_s old, at once after a pass, else once the last re-check is half as old as
// the drain was then (at least requalify_after_s). A re-check passes when the interference that
// drained the node (`left` s more after the drain) is over when it starts, and reports
// recheck_s later; resume_after (2) passes in a row resume the node. Past the window: two more
// hourly cycles (the hourly re-checks inside the window are left out: a cost counted high).
double requalify_cost(double left, Totals& totals, const Options& o) {
  if (o.requalify_every_s <= 0) return o.requalify_s;
  const double phase =
      std::uniform_real_distribution<double>(0, o.requalify_every_s)(totals.cron_phase);
  double last = 0;  // the driving checks' latest run, as the drain's age
  int passes = 0;
  for (double t = phase; t <= o.requalify_window_s; t += o.requalify_every_s) {
    if (t < o.requalify_after_s || t < last) continue;
    if (passes == 0 && t - last < std::max(o.requalify_after_s, last / 2)) continue;
    last = t + o.recheck_s;
    passes = t >= left ? passes + 1 : 0;
    if (passes == 2) return last;
  }
  return o.requalify_window_s + 7200;
}

void account(const SimNode& node, Track& t, int cycle, const ReportVerdicts& rv,
             const std::vector<std::string>& drained, const Run& run, Totals& totals,
             const Options& o) {
  const bool dipped = run.dipped;
  const bool fatal = node.fatal_onset && cycle >= *node.fatal_onset;
  const bool active = fatal || (node.fault && cycle >= node.fault->onset);
  const std::string fault_check = fatal        ? "nvml_ecc"
                                  : node.fault ? fault_figure(node.fault->kind).check
                                               : "";
  const bool names_fault = std::find(drained.begin(), drained.end(), fault_check) != drained.end();
  if (!active) {
    ++totals.healthy_node_cycles;
    if (rv.worst() != Status::kPass) ++totals.healthy_warn_cycles;
    if (dipped) ++totals.dips;
    if (run.interfered) ++totals.interfered;
    // The cost of confirmation on healthy nodes: node-cycles whose checker ran repeats.
    const auto repeated = [&](bool node_figure) {
      return std::any_of(run.repeats.begin(), run.repeats.end(),
                         [&](const Repeat& r) { return (r.unit_id == "node") == node_figure; });
    };
    totals.healthy_allreduce_repeat_cycles += repeated(true);
    totals.healthy_gpu_repeat_cycles += repeated(false);
    if (!drained.empty()) {
      ++totals.false_drains, totals.dip_drains += dipped,
          totals.interference_drains += run.interfered;
      totals.false_drain_s += requalify_cost(run.interference_left_s, totals, o);
    }
  } else {
    const Verdict* v = rv.worst_for(fault_check);
    if (v && v->status != Status::kPass) t.warned = true;
    if (!drained.empty() && !names_fault) ++totals.misattributed;
  }
  if (!drained.empty()) {
    t.drained = true;
    t.drain_cycle = cycle;
    t.right_check = active && names_fault;
  }
}

void record_cells(const std::vector<SimNode>& nodes, const std::vector<Track>& tracks,
                  Totals& totals) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Track& t = tracks[i];
    if (nodes[i].fatal_onset) {
      if (t.drained && t.drain_cycle < *nodes[i].fatal_onset) {  // a false drain, counted there
        ++totals.fatal_drained_before_onset;
        continue;
      }
      ++totals.fatal_n;
      totals.fatal_first += t.drained && t.right_check && t.drain_cycle == *nodes[i].fatal_onset;
      continue;
    }
    if (!nodes[i].fault) {
      ++totals.healthy_nodes;
      totals.healthy_nodes_drained += t.drained;
      continue;
    }
    const Fault& f = *nodes[i].fault;
    if (t.drained && t.drain_cycle < f.onset) {  // a false drain before the fault appeared:
      ++totals.drained_before_onset;             // counted there, not in the fault's cell
      continue;
    }
    const int kind = static_cast<int>(f.kind);
    const int size = static_cast<int>(std::find(std::begin(kSizes), std::end(kSizes), f.size) -
                                      std::begin(kSizes));
    Cell& c = totals.cells[kind][size][f.onset == 0 ? 1 : 0];
    const bool caught = t.drained && t.right_check;
    ++c.n;
    c.first += caught && t.drain_cycle == f.onset;
    c.two += caught && t.drain_cycle <= f.onset + 1;
    c.ever += caught;
    c.warned += t.warned;
    c.warned_not_drained += t.warned && !t.drained;
  }
}

void run_episode(const Options& o, const DetectConfig& config, int episode, Totals& totals) {
  FleetModel model(o.seed + static_cast<std::uint64_t>(episode) * 7919, o.dip_rate, o.models);
  model.set_interference(o.interference, o.interference_mean_s, o.repeat_spacing_s,
                         o.interference_pareto);
  model.set_unconfirmed_floors(o.unconfirmed_floors);
  Engine engine(config);
  std::vector<SimNode> nodes = make_nodes(model, o, episode);
  std::vector<Track> tracks(nodes.size());
  Decider decider(o.nodes);
  std::vector<std::size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0);
  for (int cycle = 0; cycle < o.cycles; ++cycle) {
    std::shuffle(order.begin(), order.end(), model.rng());  // reports arrive in any order
    for (std::size_t i : order) {
      if (tracks[i].drained) continue;  // a drained node is out until repaired
      const std::int64_t now = kT0 + cycle * 3600 + static_cast<std::int64_t>(i % 600);
      const Run run = model.run(nodes[i], cycle, now, config);
      auto [report, rv] = judge_through_codec(engine, run, now, totals, o);
      const std::vector<std::string> drained =
          decider.decide(std::move(report), rv, now, tracks[i]);
      account(nodes[i], tracks[i], cycle, rv, drained, run, totals, o);
    }
  }
  record_cells(nodes, tracks, totals);
}

double pct(long num, long den) { return den ? 100.0 * num / den : 0; }

void print_model(const std::vector<FigureModel>& models) {
  std::printf("| figure | healthy | per-unit spread | run-to-run noise | floor (fail) |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const FigureModel& f : models) {
    std::printf("| %s/%s (%s) | %g %s | %.1f%% | %.1f%% | %g |\n", f.check, f.measurement,
                f.per_gpu ? "per GPU" : "per node", f.healthy, f.unit, 100 * f.spread,
                100 * f.noise, f.floor_fail);
  }
}

void print_cells(const Totals& t) {
  std::printf(
      "\n| fault | size | n | drained 1st cycle | within 2 | ever | warn, not drained "
      "| born: n | born: drained 1st | born: ever | born: warn, not drained |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int k = 0; k < kKindCount; ++k) {
    for (int s = 0; s < kSizeCount; ++s) {
      const Cell& a = t.cells[k][s][0];
      const Cell& b = t.cells[k][s][1];
      std::printf(
          "| %s | %.0f%% | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %d | %.1f%% | %.1f%% "
          "| %.1f%% |\n",
          fault_label(kFaultKinds[k]), 100 * kSizes[s], a.n, pct(a.first, a.n), pct(a.two, a.n),
          pct(a.ever, a.n), pct(a.warned_not_drained, a.n), b.n, pct(b.first, b.n),
          pct(b.ever, b.n), pct(b.warned_not_drained, b.n));
    }
  }
}

// Parse 10,000 report texts, then judge the parsed reports in a fresh engine: both on this
// thread, one after the other, in the same run.
// Seconds of CPU this thread has used: the judging goal is "on one core", and on a shared
// machine the wall time also counts the other processes' turns (1.71 s wall at load 20 for what
// took 0.48 s on a quiet core).
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct JudgeTiming {
  double parse_wall = 0, parse_cpu = 0, judge_wall = 0, judge_cpu = 0;
};

JudgeTiming time_judge_vs_parse(const Totals& t, const DetectConfig& config) {
  using clock = std::chrono::steady_clock;
  auto wall = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  JudgeTiming out;
  std::vector<NodeReport> reports;
  reports.reserve(t.texts.size());
  const auto p0 = clock::now();
  const double pc0 = thread_cpu_s();
  for (const std::string& text : t.texts)
    reports.push_back(*parse_node_report(std::string_view(text)).value);
  out.parse_cpu = thread_cpu_s() - pc0;
  out.parse_wall = wall(p0, clock::now());
  Engine engine(config);
  std::size_t verdicts = 0;
  const auto j0 = clock::now();
  const double jc0 = thread_cpu_s();
  for (std::size_t i = 0; i < reports.size(); ++i) {
    verdicts += engine.judge(reports[i], t.nows[i])->verdicts.size();
  }
  out.judge_cpu = thread_cpu_s() - jc0;
  out.judge_wall = wall(j0, clock::now());
  if (verdicts == 0) std::printf("(no verdicts?)\n");
  return out;
}

// The worst cell of `kind` over sizes in [lo, hi] of share(cell)/n, and where it is.
double worst_share(const Totals& t, int timing, double lo, double hi, int Cell::*field,
                   std::string& where) {
  double worst = 101;
  for (int k = 0; k < kKindCount; ++k) {
    for (int s = 0; s < kSizeCount; ++s) {
      const Cell& c = t.cells[k][s][timing];
      if (kSizes[s] < lo - 1e-9 || kSizes[s] > hi + 1e-9 || c.n == 0) continue;
      const double share = pct(c.*field, c.n);
      if (share < worst) {
        worst = share;
        where = std::string(fault_label(kFaultKinds[k])) + " " +
                std::to_string(static_cast<int>(100 * kSizes[s] + 0.5)) + "%";
      }
    }
  }
  return worst;
}

int print_goals(const Totals& t, double judge_s) {
  int missed = 0;
  auto goal = [&](const char* what, double value, bool ok, const std::string& where) {
    std::printf("- %s: %.2f%s%s -> %s\n", what, value,
                where.empty() ? "" : " (worst: ", where.empty() ? "" : (where + ")").c_str(),
                ok ? "met" : "MISSED");
    missed += !ok;
  };
  std::string w;
  double v = worst_share(t, 0, 0.10, 0.50, &Cell::first, w);
  goal(">= 99% of >= 10% faults drained in the first cycle after onset, every kind (%)", v, v >= 99,
       w);
  v = worst_share(t, 0, 0.07, 0.07, &Cell::two, w);
  goal(">= 90% of 7% faults drained within two cycles, every kind (%)", v, v >= 90, w);
  v = worst_share(t, 1, 0.15, 0.50, &Cell::ever, w);
  goal(">= 95% of nodes born >= 15% slow drained, every kind (%)", v, v >= 95, w);
  v = pct(t.false_drains, t.healthy_node_cycles);
  goal("false drains <= 0.1% of healthy node-cycles (%)", v, v <= 0.1, "");
  // Each healthy node-cycle is one node-hour (hourly runs); each false drain costs the time until
  // the node is resumed (requalify_cost; issue 43 item 4).
  v = 100.0 * (t.false_drain_s / 3600) / static_cast<double>(std::max(1L, t.healthy_node_cycles));
  goal("node-hours lost to false drains <= 0.01% of healthy node-hours (%)", v, v <= 0.01, "");
  v = worst_share(t, 0, 0.05, 0.05, &Cell::warned_not_drained, w);
  goal(">= 80% of 5% faults flagged warn and not drained, every kind (%)", v, v >= 80, w);
  goal("judging 10,000 reports < 1 s of one core's CPU (s)", judge_s, judge_s < 1, "");
  v = pct(t.fatal_first, t.fatal_n);
  goal("fatal faults drained in their first cycle (%)", v, v >= 100, "");
  return missed;
}

// --noise FIGURE=F: the run-to-run noise of one figure of the model (its label: gemm, hbm, h2d,
// d2h, nvlink, ib), for a sensitivity run; exits 2 on a bad value.
void set_noise(std::vector<FigureModel>& models, std::string_view arg) {
  const std::size_t eq = arg.find('=');
  const std::string label(arg.substr(0, eq == std::string_view::npos ? 0 : eq));
  char* end = nullptr;
  const std::string value(eq == std::string_view::npos ? "" : arg.substr(eq + 1));
  const double noise = std::strtod(value.c_str(), &end);
  auto it = std::find_if(models.begin(), models.end(),
                         [&](const FigureModel& f) { return label == f.label; });
  if (it == models.end() || value.empty() || *end != '\0' || !(noise >= 0 && noise < 0.5)) {
    std::fprintf(stderr,
                 "--noise %.*s: want FIGURE=F with FIGURE one of gemm, hbm, h2d, d2h, nvlink, ib "
                 "and F in [0, 0.5) (e.g. ib=0.01)\n",
                 static_cast<int>(arg.size()), arg.data());
    std::exit(2);
  }
  it->noise = noise;
}

// --kinds gemm,ib: inject only these fault kinds (every cell of theirs gets more faults).
std::vector<FaultKind> parse_kinds(std::string_view arg) {
  static const std::pair<const char*, FaultKind> names[] = {
      {"gemm", FaultKind::kGemm},     {"hbm", FaultKind::kHbm}, {"h2d", FaultKind::kH2d},
      {"nvlink", FaultKind::kNvlink}, {"ib", FaultKind::kIb},   {"gemm8", FaultKind::kGemmNode}};
  std::vector<FaultKind> kinds;
  while (!arg.empty()) {
    const std::size_t comma = arg.find(',');
    const std::string_view name = arg.substr(0, comma);
    auto it = std::find_if(std::begin(names), std::end(names),
                           [&](const auto& n) { return name == n.first; });
    if (it == std::end(names)) {
      std::fprintf(stderr, "--kinds: unknown kind '%.*s' (kinds: gemm,hbm,h2d,nvlink,ib,gemm8)\n",
                   static_cast<int>(name.size()), name.data());
      std::exit(2);
    }
    kinds.push_back(it->second);
    arg = comma == std::string_view::npos ? std::string_view() : arg.substr(comma + 1);
  }
  if (kinds.empty()) {
    std::fprintf(stderr, "--kinds: name at least one kind\n");
    std::exit(2);
  }
  return kinds;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check-goals") {
      o.check_goals = true;
      continue;
    }
    if (a == "--unconfirmed-floors") {
      o.unconfirmed_floors = true;
      continue;
    }
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!next) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      std::exit(2);
    }
    if (a == "--seed") {
      o.seed = std::strtoull(next, nullptr, 10);
    } else if (a == "--nodes") {
      o.nodes = std::atoi(next);
    } else if (a == "--episodes") {
      o.episodes = std::atoi(next);
    } else if (a == "--cycles") {
      o.cycles = std::atoi(next);
    } else if (a == "--onset") {
      o.onset = std::atoi(next);
    } else if (a == "--faulty-share") {
      o.faulty_share = std::atof(next);
    } else if (a == "--warn") {
      o.warn = std::atof(next);
    } else if (a == "--fail") {
      o.fail = std::atof(next);
    } else if (a == "--cross-scale") {
      o.cross_scale = std::atof(next);
    } else if (a == "--dip-rate") {
      o.dip_rate = std::atof(next);
    } else if (a == "--interference") {
      o.interference = std::atof(next);
    } else if (a == "--interference-mean-s") {
      o.interference_mean_s = std::atof(next);
    } else if (a == "--interference-pareto") {
      o.interference_pareto = std::atof(next);
    } else if (a == "--requalify-s") {
      o.requalify_s = std::atof(next);
    } else if (a == "--requalify-every-s") {
      o.requalify_every_s = std::atof(next);
    } else if (a == "--requalify-after-s") {
      o.requalify_after_s = std::atof(next);
    } else if (a == "--requalify-window-s") {
      o.requalify_window_s = std::atof(next);
    } else if (a == "--recheck-s") {
      o.recheck_s = std::atof(next);
    } else if (a == "--repeat-spacing-s") {
      o.repeat_spacing_s = std::atof(next);
    } else if (a == "--kinds") {
      o.kinds = parse_kinds(next);
    } else if (a == "--noise") {
      set_noise(o.models, next);
    } else {
      std::fprintf(
          stderr,
          "unknown flag %s (flags: --seed --nodes --episodes --cycles --onset "
          "--faulty-share --warn --fail --cross-scale --noise --kinds --dip-rate --interference "
          "--interference-mean-s --interference-pareto --requalify-s --requalify-every-s "
          "--requalify-after-s --requalify-window-s --recheck-s --repeat-spacing-s "
          "--unconfirmed-floors --check-goals)\n",
          a.c_str());
      std::exit(2);
    }
    ++i;
  }
  if (o.nodes < 100 || o.episodes < 1 || o.onset < 4 || o.cycles < o.onset + 2 ||
      o.faulty_share < 0 || o.faulty_share > 0.5 || o.dip_rate < 0 || o.dip_rate > 1 ||
      (o.interference_pareto != 0 && !(o.interference_pareto > 1)) || !(o.requalify_s >= 0) ||
      !(o.requalify_every_s >= 0) || !(o.requalify_after_s >= 0) ||
      !(o.requalify_window_s >= o.requalify_after_s) || !(o.recheck_s >= 0)) {
    std::fprintf(stderr,
                 "need --nodes >= 100, --episodes >= 1, --onset >= 4, --cycles >= onset+2, "
                 "--faulty-share in [0, 0.5], --dip-rate in [0, 1], --interference-pareto > 1, "
                 "--requalify-s >= 0, --requalify-every-s >= 0, --recheck-s >= 0, "
                 "--requalify-window-s >= --requalify-after-s >= 0\n");
    std::exit(2);
  }
  return o;
}

}  // namespace
}  // namespace vigil::detect::sim

int main(int argc, char** argv) {
  using namespace vigil::detect;
  using namespace vigil::detect::sim;
  const Options o = parse_args(argc, argv);
  DetectConfig config = DetectConfig::defaults();
  for (auto& [kind, m] : config.margins) {
    if (o.warn > 0) m.warn = o.warn;
    if (o.fail > 0) m.fail = o.fail;
  }
  if (o.cross_scale > 0) config.cross_margin_scale = o.cross_scale;
  if (const auto errors = config.validate(); !errors.empty()) {
    std::fprintf(stderr, "invalid margins: %s\n", errors.front().c_str());
    return 2;
  }
  std::printf(
      "detect_fleet_sim: seed %llu, %d nodes x %d GPUs, %d hourly cycles, %d episodes, "
      "%.0f%% of nodes faulty (+%.0f%% fatal), faults after history from cycle %d, dips %.1f%% "
      "of node-cycles; drainer: default policy\n\n",
      static_cast<unsigned long long>(o.seed), o.nodes, kGpus, o.cycles, o.episodes,
      100 * o.faulty_share, 100 * o.fatal_share, o.onset, 100 * o.dip_rate);
  std::printf("margins (warn/fail):");
  for (const auto& [kind, m] : config.margins)
    std::printf(" %s %.3f/%.3f", kind.c_str(), m.warn, m.fail);
  std::printf("; peer_spread_k %.1f, fleet_spread_k %.1f, min_fleet %d, window %d\n\n",
              config.peer_spread_k, config.fleet_spread_k, config.min_fleet, config.history_window);
  print_model(o.models);
  Totals totals;
  for (int e = 0; e < o.episodes; ++e) {
    run_episode(o, config, e, totals);
    std::fprintf(stderr, "\repisode %d/%d", e + 1, o.episodes);
  }
  std::fprintf(stderr, "\n");
  print_cells(totals);
  if (o.interference > 0 || o.unconfirmed_floors)
    std::printf(
        "\nmodel: interference in %.2f%% of node-cycles, mean %.0f s (%s), repeats %.0f s "
        "after the first figure (%ld healthy node-cycles hit, %ld of them drained); SKU floors "
        "%s\n",
        100 * o.interference, o.interference_mean_s,
        o.interference_pareto > 1
            ? ("Pareto, shape " + std::to_string(o.interference_pareto)).c_str()
            : "exponential",
        o.repeat_spacing_s, totals.interfered, totals.interference_drains,
        o.unconfirmed_floors ? "unconfirmed (as shipped)" : "confirmed (calibrated)");
  std::printf(
      "\nhealthy node-cycles %ld: false drains %ld (%.4f%%), of them after a dip %ld; "
      "healthy nodes ever drained %ld of %ld (%.3f%%); node-cycles with a warn %.2f%%; "
      "dips %ld; drains of a faulty node not naming its check %ld; faulty nodes drained "
      "before their fault appeared (left out of the table) %ld\n",
      totals.healthy_node_cycles, totals.false_drains,
      pct(totals.false_drains, totals.healthy_node_cycles), totals.dip_drains,
      totals.healthy_nodes_drained, totals.healthy_nodes,
      pct(totals.healthy_nodes_drained, totals.healthy_nodes),
      pct(totals.healthy_warn_cycles, totals.healthy_node_cycles), totals.dips,
      totals.misattributed, totals.drained_before_onset);
  const std::string cost_model =
      o.requalify_every_s > 0
          ? "re-qualifying CronJob every " + std::to_string(static_cast<int>(o.requalify_every_s)) +
                " s from " + std::to_string(static_cast<int>(o.requalify_after_s)) + " s to " +
                std::to_string(static_cast<int>(o.requalify_window_s)) + " s, re-checks of " +
                std::to_string(static_cast<int>(o.recheck_s)) + " s"
          : std::to_string(static_cast<int>(o.requalify_s)) + " s each";
  std::printf(
      "node-hours lost to false drains: %.1f of %ld healthy node-hours (%.5f%%), %.0f s from a "
      "false drain to the node's resume on average (%s)\n",
      totals.false_drain_s / 3600, totals.healthy_node_cycles,
      100.0 * (totals.false_drain_s / 3600) /
          static_cast<double>(std::max(1L, totals.healthy_node_cycles)),
      totals.false_drain_s / static_cast<double>(std::max(1L, totals.false_drains)),
      cost_model.c_str());
  std::printf(
      "cost of confirmation: healthy node-cycles whose checker repeated an all_reduce %.2f%%, "
      "a CUDA probe of some GPU %.2f%%\n",
      pct(totals.healthy_allreduce_repeat_cycles, totals.healthy_node_cycles),
      pct(totals.healthy_gpu_repeat_cycles, totals.healthy_node_cycles));
  std::printf(
      "fatal faults (uncorrectable ECC from cycle %d): %ld, drained in that cycle naming "
      "nvml_ecc %ld (%.1f%%); nodes drained (falsely) before it appeared, left out: %ld\n",
      o.onset, totals.fatal_n, totals.fatal_first, pct(totals.fatal_first, totals.fatal_n),
      totals.fatal_drained_before_onset);
  const JudgeTiming tm = time_judge_vs_parse(totals, config);
  std::printf(
      "timing, one thread: parse %zu report texts %.3f s CPU (%.3f s wall); judge them %.3f s "
      "CPU (%.3f s wall; %.2fx the parse CPU time); load average %s\n",
      totals.texts.size(), tm.parse_cpu, tm.parse_wall, tm.judge_cpu, tm.judge_wall,
      tm.judge_cpu / tm.parse_cpu, vigil::testing::load_average().c_str());
  const int missed = print_goals(totals, tm.judge_cpu);
  return o.check_goals && missed > 0 ? 1 : 0;
}
