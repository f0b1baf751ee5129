#pragma once
// The simulated fleet behind detect_fleet_sim: 8x H100 nodes whose performance figures have a
// persistent per-unit spread (silicon, topology) and run-to-run noise, rare one-probe dips,
// and injected fail-slow faults. Every figure and its source: docs/detection.md.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda/probe_result.h"
#include "vigil/detect/config.h"
#include "vigil/report/report.h"

namespace vigil::detect::sim {

inline constexpr int kGpus = 8;

// One simulated figure. Fractions are standard deviations relative to `healthy`.
struct FigureModel {
  const char* label;  // "gemm"
  const char* check;
  const char* measurement;
  const char* unit;
  double healthy;  // mean healthy figure of the SKU
  double spread;   // persistent per-unit (per GPU; per node for node figures) deviation
  double noise;    // run-to-run deviation
  bool per_gpu;
  double floor_fail;  // the SKU's absolute floor (checks/thresholds/h100-sxm5-80gb.yaml)
  double floor_warn;  // 0 = none
};

// gemm, hbm, h2d, d2h, nvlink all_reduce, ib all_reduce.
const std::vector<FigureModel>& figure_models();

enum class FaultKind { kGemm, kHbm, kH2d, kNvlink, kIb, kGemmNode };
inline constexpr FaultKind kFaultKinds[] = {FaultKind::kGemm, FaultKind::kHbm,
                                            FaultKind::kH2d,  FaultKind::kNvlink,
                                            FaultKind::kIb,   FaultKind::kGemmNode};
const char* fault_label(FaultKind k);  // "GEMM 1 GPU", ...
const FigureModel& fault_figure(FaultKind k);

struct Fault {
  FaultKind kind = FaultKind::kGemm;
  double size = 0;  // fraction slower, e.g. 0.07
  int onset = 0;    // first cycle it shows in; 0 = present from the node's first report
  int gpu = 0;      // the slow GPU of single-GPU faults
};

struct SimNode {
  std::string name;
  std::vector<std::vector<double>> bias;  // [figure][unit]: persistent factor around 1
  std::optional<Fault> fault;
  // A fatal fault (a volatile uncorrectable ECC error in nvml_ecc) from this cycle on.
  std::optional<int> fatal_onset;
  // [figure]: the node's recent healthy all_reduce figures, as vigil-check keeps them in its
  // state file (empty for per-GPU figures).
  std::vector<std::vector<double>> recent;
  // check -> each GPU's recent healthy figures, as the CUDA probes keep them in their state files.
  std::map<std::string, cuda_probe::GpuHistory> gpu_history;
};

// The repeats the checker took of one suspicious unit.
struct Repeat {
  std::string check;
  std::string measurement;
  std::string unit_id;
  std::vector<double> values;
};

struct Run {
  NodeReport report;
  std::vector<Repeat> repeats;
  bool dipped = false;      // a one-probe transient dip happened in this run
  bool interfered = false;  // interference lasted through this run (set_interference)
  // How long the interference goes on after the run's last measurement (0: none, or over).
  double interference_left_s = 0;
};

class FleetModel {
 public:
  // `models`: figure_models() with the noise figures a sensitivity run overrides (--noise).
  FleetModel(std::uint64_t seed, double dip_rate, std::vector<FigureModel> models)
      : rng_(seed), dip_rate_(dip_rate), models_(std::move(models)) {}

  SimNode make_node(std::string name, std::optional<Fault> fault);
  // One vigil-check run on `node` in `cycle` at `now`: figures with noise, fault and maybe a
  // dip; suspicious units measured again as vigil-check decides it, with its own functions
  // (cuda_probe::plan_repeats for per-GPU figures, plan_allreduce_repeats against the node's
  // recent figures for all_reduce, which then learns them as vigil-check does).
  Run run(SimNode& node, int cycle, std::int64_t now, const DetectConfig& config);

  std::mt19937_64& rng() { return rng_; }

  // Interference that lasts through a whole run, its repeats included (a check's repeats are
  // seconds apart; these last a minute or more): in `rate` of node-cycles either a neighbour's
  // heat (one GPU's GEMM and HBM) or a noisy host (every GPU's H2D/D2H and the IB all_reduce) is
  // 4-12% slow for that run only. Not a fault: the node is healthy in every other cycle.
  // Its duration is exponential with mean `mean_s`; the checker's repeats run `spacing_s` after
  // the first measurement, then one every 5 s, and a repeat sees the interference only while it
  // lasts (spacing 0: today's checker, repeats seconds apart).
  // `pareto_alpha` > 1: the duration is Pareto with that shape and the same mean instead (a heavy
  // tail: with alpha 1.5 and mean 60 s, 6.8% outlast 120 s and 0.6% outlast 10 minutes, where
  // the exponential gives 13.5% and 0.005%).
  void set_interference(double rate, double mean_s = 60, double spacing_s = 0,
                        double pareto_alpha = 0) {
    interference_rate_ = rate;
    interference_mean_s_ = mean_s;
    repeat_spacing_s_ = spacing_s;
    pareto_alpha_ = pareto_alpha;
  }
  // true: the SKU floors are shipped unconfirmed (warn-only until calibrated, docs/thresholds.md).
  void set_unconfirmed_floors(bool on) { unconfirmed_floors_ = on; }
  bool interfered() const { return interference_.active; }

 private:
  double normal() { return gauss_(rng_); }
  double fault_factor(const SimNode& node, std::size_t figure, int unit, int cycle) const;
  double measure(const SimNode& node, std::size_t figure, int unit, int cycle);

  double interference_factor(std::size_t figure, int unit) const;

  struct Interference {
    bool active = false;
    bool heat = false;  // else a noisy host
    int gpu = 0;
    double size = 0;
    double duration_s = 0;
  };

  std::mt19937_64 rng_;
  std::normal_distribution<double> gauss_{0.0, 1.0};
  double dip_rate_;
  std::vector<FigureModel> models_;
  double interference_rate_ = 0, interference_mean_s_ = 60, repeat_spacing_s_ = 0;
  double pareto_alpha_ = 0;
  double at_s_ = 0;  // when in the run the current measurement is taken
  bool unconfirmed_floors_ = false;
  Interference interference_;
  double run_end_s_ = 0;  // the latest at_s_ of the run in progress
};

}  // namespace vigil::detect::sim
