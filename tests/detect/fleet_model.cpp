#include "fleet_model.h"

#include <cmath>

#include "allreduce/allreduce_repeats.h"
#include "cuda/probe_math.h"
#include "cuda/probe_result.h"
#include "vigil/base/time.h"
#include "vigil/detect/detect.h"

namespace vigil::detect::sim {

const std::vector<FigureModel>& figure_models() {
  // Healthy figures: docs/detection.md "Simulation model" (anchors.md section 4 and 6).
  // Spreads and noise are assumptions, stated and sourced there; the all_reduce noise comes from
  // genuine public nccl-tests logs (docs/detection.md "Where the all_reduce noise comes from").
  static const std::vector<FigureModel> models = {
      {"gemm", "gpu_gemm", "gemm_bf16_tflops", "TFLOP/s", 798, 0.020, 0.010, true, 640, 720},
      {"hbm", "gpu_hbm", "hbm_bandwidth", "GB/s", 3000, 0.010, 0.010, true, 1905, 2400},
      {"h2d", "gpu_pcie_bw", "h2d_bandwidth", "GB/s", 54, 0.020, 0.010, true, 48, 0},
      {"d2h", "gpu_pcie_bw", "d2h_bandwidth", "GB/s", 54, 0.020, 0.010, true, 48, 0},
      {"nvlink", "nccl_allreduce_nvlink", "busbw", "GB/s", 480, 0.010, 0.005, false, 420, 460},
      {"ib", "nccl_allreduce_ib", "busbw", "GB/s", 41, 0.010, 0.010, false, 36, 38},
  };
  return models;
}

const char* fault_label(FaultKind k) {
  switch (k) {
    case FaultKind::kGemm:
      return "GEMM, 1 GPU";
    case FaultKind::kHbm:
      return "HBM, 1 GPU";
    case FaultKind::kH2d:
      return "H2D, 1 GPU";
    case FaultKind::kNvlink:
      return "NVLink all_reduce";
    case FaultKind::kIb:
      return "IB all_reduce";
    case FaultKind::kGemmNode:
      return "GEMM, all 8 GPUs";
  }
  return "?";
}

namespace {

std::size_t figure_index(FaultKind k) {
  switch (k) {
    case FaultKind::kGemm:
    case FaultKind::kGemmNode:
      return 0;
    case FaultKind::kHbm:
      return 1;
    case FaultKind::kH2d:
      return 2;
    case FaultKind::kNvlink:
      return 4;
    case FaultKind::kIb:
      return 5;
  }
  return 0;
}

int units_of(const FigureModel& f) { return f.per_gpu ? kGpus : 1; }

Measurement measurement(const FigureModel& f, double value, int unit) {
  Measurement m;
  m.name = f.measurement;
  m.value = value;
  m.unit = f.unit;
  if (f.per_gpu) m.gpu = unit;
  Threshold t;
  t.op = Op::kGe;
  t.fail = f.floor_fail;
  if (f.floor_warn > 0) t.warn = f.floor_warn;
  t.unit = f.unit;
  m.threshold = t;
  return m;
}

NodeReport build_report(const SimNode& node, std::int64_t now,
                        const std::vector<std::vector<double>>& values, bool ecc_error) {
  NodeReport r;
  r.node = node.name;
  r.sku = "H100-SXM5-80GB";
  r.run_id = node.name + "-" + std::to_string(now);
  r.start_time = rfc3339_utc(now);
  r.end_time = rfc3339_utc(now + 300);
  const auto& models = figure_models();
  for (std::size_t f = 0; f < models.size(); ++f) {
    if (r.checks.empty() || r.checks.back().check != models[f].check) {
      CheckResult c;
      c.check = models[f].check;
      c.duration_s = 30;
      r.checks.push_back(c);
    }
    CheckResult& c = r.checks.back();
    for (int u = 0; u < units_of(models[f]); ++u) {
      c.measurements.push_back(measurement(models[f], values[f][u], u));
      c.status = combine(c.status, c.measurements.back().status());
    }
  }
  // The fatal check every report carries (DCGM: any volatile double-bit error fails).
  CheckResult ecc;
  ecc.check = "nvml_ecc";
  Measurement m;
  m.name = "volatile_uncorrected_ecc";
  m.value = ecc_error ? 1 : 0;
  m.unit = "count";
  m.gpu = 0;
  Threshold t;
  t.op = Op::kLe;
  t.fail = 0;
  t.unit = "count";
  m.threshold = t;
  ecc.measurements.push_back(m);
  ecc.status = m.status();
  if (ecc_error) {
    ecc.message = "gpu0 volatile_uncorrected_ecc 1>0";
    ecc.fault_code = "VIGIL-NVML-ECC-UNCORRECTABLE";
  }
  r.checks.push_back(ecc);
  return r;
}

}  // namespace

const FigureModel& fault_figure(FaultKind k) { return figure_models()[figure_index(k)]; }

SimNode FleetModel::make_node(std::string name, std::optional<Fault> fault) {
  SimNode n;
  n.name = std::move(name);
  n.fault = fault;
  for (const FigureModel& f : figure_models()) {
    std::vector<double> b;
    for (int u = 0; u < units_of(f); ++u) b.push_back(1 + f.spread * normal());
    n.bias.push_back(std::move(b));
  }
  n.recent.resize(figure_models().size());
  return n;
}

double FleetModel::fault_factor(const SimNode& node, std::size_t figure, int unit,
                                int cycle) const {
  if (!node.fault || cycle < node.fault->onset) return 1;
  const Fault& f = *node.fault;
  if (figure_index(f.kind) != figure) return 1;
  const bool single_gpu =
      f.kind == FaultKind::kGemm || f.kind == FaultKind::kHbm || f.kind == FaultKind::kH2d;
  if (single_gpu && unit != f.gpu) return 1;
  return 1 - f.size;
}

double FleetModel::interference_factor(std::size_t figure, int unit) const {
  if (!interference_.active || at_s_ >= interference_.duration_s) return 1;
  const std::string_view check = models_[figure].check;
  if (interference_.heat) {
    const bool gpu_figure = check == "gpu_gemm" || check == "gpu_hbm";
    return gpu_figure && unit == interference_.gpu ? 1 - interference_.size : 1;
  }
  const bool host_figure = check == "gpu_pcie_bw" || check == "nccl_allreduce_ib";
  return host_figure ? 1 - interference_.size : 1;
}

double FleetModel::measure(const SimNode& node, std::size_t figure, int unit, int cycle) {
  const FigureModel& f = models_[figure];
  return f.healthy * node.bias[figure][unit] * fault_factor(node, figure, unit, cycle) *
         interference_factor(figure, unit) * (1 + f.noise * normal());
}

Run FleetModel::run(SimNode& node, int cycle, std::int64_t now, const DetectConfig& config) {
  const auto& models = figure_models();
  interference_ = {};
  if (interference_rate_ > 0) {
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < interference_rate_) {
      interference_.active = true;
      interference_.heat = u(rng_) < 0.5;
      interference_.gpu = std::uniform_int_distribution<int>(0, kGpus - 1)(rng_);
      interference_.size = 0.04 + 0.08 * u(rng_);
      if (pareto_alpha_ > 1) {  // inverse CDF: x_m / U^(1/alpha), x_m = mean (alpha-1)/alpha
        const double xm = interference_mean_s_ * (pareto_alpha_ - 1) / pareto_alpha_;
        interference_.duration_s = xm / std::pow(1 - u(rng_), 1 / pareto_alpha_);
      } else {
        interference_.duration_s =
            std::exponential_distribution<double>(1.0 / interference_mean_s_)(rng_);
      }
    }
  }
  at_s_ = 0;
  run_end_s_ = 0;
  std::vector<std::vector<double>> values(models.size());
  int instances = 0;
  for (std::size_t f = 0; f < models.size(); ++f) {
    for (int u = 0; u < units_of(models[f]); ++u) values[f].push_back(measure(node, f, u, cycle));
    instances += units_of(models[f]);
  }
  Run out;
  std::uniform_real_distribution<double> u01(0, 1);
  out.interfered = interference_.active;
  if (u01(rng_) < dip_rate_) {  // one probe of one unit 8-12% low; a re-run does not repeat it
    int pick = std::uniform_int_distribution<int>(0, instances - 1)(rng_);
    std::size_t f = 0;
    while (pick >= units_of(models[f])) pick -= units_of(models[f++]);
    values[f][pick] *= 1 - (0.08 + 0.04 * u01(rng_));
    out.dipped = true;
  }
  out.report = build_report(node, now, values, node.fatal_onset && cycle >= *node.fatal_onset);
  if (unconfirmed_floors_) {  // as shipped: a broken performance floor only warns
    for (CheckResult& c : out.report.checks) {
      if (c.check == "nvml_ecc") continue;
      c.status = Status::kPass;
      for (Measurement& m : c.measurements) {
        if (m.threshold) m.threshold->unconfirmed = true;
        c.status = combine(c.status, m.status());
      }
    }
  }
  for (const CheckResult& c : out.report.checks) {
    if (c.check == "nvml_ecc") continue;  // a count, not a performance figure
    if (!c.measurements.empty() && c.measurements.front().gpu) {
      // A CUDA probe: the GPUs that look slow next to their peers or their own history, within
      // the probe's budget; then the healthy figures join the history, as in vigil-check.
      cuda_probe::GpuHistory& history = node.gpu_history[c.check];
      CheckResult judged = c;
      for (const auto& [gpu, times] : cuda_probe::plan_repeats(c, config, history)) {
        for (std::size_t f = 0; f < models.size(); ++f) {
          if (std::string_view(models[f].check) != c.check) continue;
          Repeat rep{c.check, models[f].measurement, "gpu" + std::to_string(gpu), {}};
          for (int k = 0; k < times; ++k) {
            at_s_ = repeat_spacing_s_ + 5.0 * (k + 1);
            run_end_s_ = std::max(run_end_s_, at_s_);
            rep.values.push_back(measure(node, f, gpu, cycle));
          }
          at_s_ = 0;
          for (auto& m : judged.measurements)
            if (m.gpu == gpu && m.name == rep.measurement) m.repeats = rep.values;
          out.repeats.push_back(std::move(rep));
        }
      }
      for (const auto& learned : cuda_probe::learnable_figures(judged, history, config)) {
        std::vector<double>& recent = history[{learned.measurement, learned.gpu}];
        recent.push_back(learned.value);
        if (recent.size() > static_cast<std::size_t>(config.history_window))
          recent.erase(recent.begin());
      }
      continue;
    }
    // An all_reduce: compared with the node's recent figures and its SKU bound.
    std::size_t f = 0;
    while (std::string_view(models[f].check) != c.check) ++f;
    std::vector<double>& recent = node.recent[f];
    CheckResult judged = c;
    const int times = plan_allreduce_repeats(judged, recent, config);
    for (int k = 0; k < times; ++k) {
      at_s_ = repeat_spacing_s_ + 5.0 * (k + 1);
      run_end_s_ = std::max(run_end_s_, at_s_);
      judged.measurements.front().repeats.push_back(measure(node, f, 0, cycle));
      at_s_ = 0;
    }
    if (times > 0)
      out.repeats.push_back(
          {c.check, models[f].measurement, "node", judged.measurements.front().repeats});
    if (learn_allreduce_figure(judged, recent, config)) {
      std::vector<double> all = judged.measurements.front().repeats;
      all.push_back(judged.measurements.front().value);
      recent.push_back(cuda_probe::median(std::move(all)));
      if (recent.size() > static_cast<std::size_t>(config.history_window))
        recent.erase(recent.begin());
    }
  }
  if (interference_.active)
    out.interference_left_s = std::max(0.0, interference_.duration_s - run_end_s_);
  return out;
}

}  // namespace vigil::detect::sim
