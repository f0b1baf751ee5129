#include "cuda/probe_result.h"

#include <cstdio>
#include <map>
#include <string>

namespace vigil::cuda_probe {
namespace {

std::string format_figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// "2 GPUs: hbm_bandwidth min 3012.4 GB/s (gpu 1), max 3050.0 GB/s"
std::string summary(const CheckResult& r, int gpus) {
  struct MinMax {
    const Measurement* lo = nullptr;
    const Measurement* hi = nullptr;
  };
  std::map<std::string, MinMax> by_name;
  std::vector<std::string> order;
  for (const Measurement& m : r.measurements) {
    auto [it, fresh] = by_name.try_emplace(m.name);
    if (fresh) order.push_back(m.name);
    if (!it->second.lo || m.value < it->second.lo->value) it->second.lo = &m;
    if (!it->second.hi || m.value > it->second.hi->value) it->second.hi = &m;
  }
  std::string s = std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs");
  for (const std::string& name : order) {
    const MinMax& mm = by_name[name];
    s += (name == order.front() ? ": " : "; ") + name + " min " + format_figure(mm.lo->value) +
         " " + mm.lo->unit + " (gpu " + std::to_string(mm.lo->gpu.value_or(-1)) + "), max " +
         format_figure(mm.hi->value) + " " + mm.hi->unit;
  }
  return s;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

}  // namespace

CheckResult finish_probe_result(const CheckContext& ctx, CheckResult r, int gpus,
                                const std::vector<GpuFailure>& failures,
                                const std::vector<std::string>& notes) {
  std::vector<std::string> unmeasured;
  bool ecc_fault = false;
  for (const GpuFailure& f : failures) {
    unmeasured.push_back("gpu " + std::to_string(f.gpu) + ": " + f.error.to_string());
    ecc_fault |= f.error.message.starts_with("cudaErrorECCUncorrectable");
  }

  finalize(r, "VIGIL-CUDA");
  if (ecc_fault) {
    r.status = Status::kFail;
    r.fault_code = "VIGIL-CUDA-ECC-UNCORRECTABLE";
    r.message = join(unmeasured) + (r.message.empty() ? "" : "; " + r.message);
  } else if (!unmeasured.empty()) {
    if (r.status == Status::kFail) {
      r.message += "; could not measure " + join(unmeasured);
    } else {
      r.status = Status::kError;
      r.fault_code = "VIGIL-CUDA-CALL";
      r.message = "could not measure " + join(unmeasured) +
                  "; check nvidia-smi and dmesg (Xid) on this node";
    }
  } else if (r.message.empty()) {
    r.message = summary(r, gpus);
    bool any_threshold = false;
    for (const Measurement& m : r.measurements) any_threshold |= m.threshold.has_value();
    if (!ctx.sku) {
      r.message += "; unknown SKU: figures only, no thresholds";
    } else if (!any_threshold) {
      r.message +=
          "; SKU " + ctx.sku->name + " has no thresholds for " + r.check + ": figures only";
    }
  }
  if (!notes.empty()) r.message += "; " + join(notes);
  return r;
}

void add_memtest_errors(CheckResult& r, const CheckContext& ctx, int gpu,
                        unsigned long long mismatches, unsigned long long tested_mib,
                        std::string_view detail) {
  Measurement& m =
      add_measurement(r, ctx, "memtest_errors", static_cast<double>(mismatches), "count", gpu);
  if (!m.threshold) {
    Threshold any_mismatch;
    any_mismatch.op = Op::kLe;
    any_mismatch.fail = 0;
    any_mismatch.unit = "count";
    m.threshold = any_mismatch;
  }
  if (mismatches == 0) return;
  r.message += (r.message.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(gpu) + ": " +
               std::to_string(mismatches) + " mismatching words in " + std::to_string(tested_mib) +
               " MiB";
  if (!detail.empty()) r.message += " (" + std::string(detail) + ")";
}

}  // namespace vigil::cuda_probe
