// gpu_count: how many GPUs NVML sees, against the node's count in Slurm (--expected-gpus,
// VIGIL_EXPECTED_GPUS) or else the SKU's expected count. A GPU that fell off
// the bus usually disappears from NVML entirely, so this is the check that catches it. When
// fewer are seen than expected, the missing ones are named by PCI bus id (and the board serial
// Vigil last saw there): those the driver lists (<proc_root>/driver/nvidia/gpus/<bus id>/,
// open-gpu-kernel-modules kernel-open/nvidia/nv-procfs.c: a GPU the driver probed but could not
// bring up is there, and absent from NVML) and those an earlier run saw (nvml::seen_gpus: a GPU
// gone from PCI altogether is in neither list of the driver).
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "check_factories.h"
#include "cuda/cuda_labels.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

class GpuCountCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_count"; }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    auto session = open_session(ctx);
    if (!session) return unavailable(name(), session.error());
    const Session& s = session.value();

    CheckResult r;
    r.check = std::string(name());
    Measurement& m = add_measurement(r, ctx, "gpu_count", s.count(), "count");
    // The site's own count first: Slurm's Gres for the node (slurmd refuses to register a node
    // with fewer GPUs than its gres.conf and slurm.conf say, slurm.conf(5) Gres), so a 4-GPU
    // board of a GPU whose catalogue board has 8 is judged against 4.
    if (ctx.expected_gpus > 0) {
      m.threshold.reset();
      default_threshold(m, Op::kGe, ctx.expected_gpus, std::nullopt,
                        ctx.expected_gpus_from + " gpu:" + std::to_string(ctx.expected_gpus));
    }
    if (!m.threshold && ctx.sku && ctx.sku->match.gpu_count > 0) {
      default_threshold(m, Op::kGe, ctx.sku->match.gpu_count, std::nullopt,
                        "SKU " + ctx.sku->name + " match.gpu_count");
    }
    std::string seen = std::to_string(s.count()) + " GPUs" + models(s);
    if (m.threshold) seen += ", expected by " + m.threshold->source;
    Verdict v;
    v.gpus_lost(s);
    if (!r.measurements[0].threshold && s.no_handle.empty()) {
      r.status = Status::kSkipped;
      r.message = "unknown SKU: " + seen + " seen, expected count unknown";
      return r;
    }
    const int expected =
        r.measurements[0].threshold ? static_cast<int>(r.measurements[0].threshold->fail) : 0;
    const std::map<std::string, nvml::SeenGpu> visible = visible_parts(s);
    std::map<std::string, nvml::SeenGpu> kept = nvml::seen_gpus(ctx);
    const std::string missing = missing_gpus(ctx, visible, kept);
    nvml::remember_seen_gpus(ctx, visible, std::move(kept), 0,
                             expected > 0 && static_cast<int>(visible.size()) >= expected);
    v.conclude(
        r,
        [&](const Measurement& mm, Status) {
          return Described{
              figure(mm.value) + " of " + std::to_string(expected) + " GPUs visible" + missing,
              "VIGIL-NVML-GPU-COUNT"};
        },
        seen);
    return r;
  }

 private:
  // Bus id ("0:18:00.0", normal_bus_id) -> the GPU NVML shows there: index and board serial
  // ("" where the driver has none).
  static std::map<std::string, nvml::SeenGpu> visible_parts(const Session& s) {
    std::map<std::string, nvml::SeenGpu> out;
    for (int g = 0; g < s.count(); ++g) {
      const std::string bus = cuda_probe::normal_bus_id(gpu_key(s, g));
      if (bus.empty()) continue;
      char serial[kNvmlDeviceSerialBufferSize] = {};
      if (call(s.api().device_get_serial, s.gpus[g], serial, unsigned{sizeof serial}) !=
          NVML_SUCCESS)
        serial[0] = '\0';
      serial[sizeof serial - 1] = '\0';
      out[bus] = nvml::SeenGpu{g, serial};
    }
    return out;
  }

  // "; not seen: 0000:18:00.0 (serial 1653723052734, seen before), 0000:2a:00.0 (the driver
  // lists it)", or "" when no GPU can be named.
  static std::string missing_gpus(const CheckContext& ctx,
                                  const std::map<std::string, nvml::SeenGpu>& visible,
                                  const std::map<std::string, nvml::SeenGpu>& kept) {
    std::map<std::string, std::string> gone;  // bus id -> how Vigil knows it
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(ctx.proc_root + "/driver/nvidia/gpus", ec)) {
      const std::string bus = cuda_probe::normal_bus_id(e.path().filename().string());
      if (!bus.empty() && !visible.count(bus)) gone[bus] = "the driver lists it";
    }
    for (const auto& [bus, seen] : kept)
      if (!visible.count(bus))
        gone[bus] =
            (seen.serial.empty() ? std::string() : "serial " + seen.serial + ", ") + "seen before";
    std::vector<std::string> names;
    for (const auto& [bus, how] : gone) {
      // "0:18:00.0" (normal_bus_id) as the kernel prints it: "0000:18:00.0"
      const size_t colon = bus.find(':');
      names.push_back(std::string(colon < 4 ? 4 - colon : 0, '0') + bus + " (" + how + ")");
    }
    return names.empty() ? "" : "; not seen: " + short_list(names, 4, ", ", ", ");
  }

  // " (NVIDIA H100 80GB HBM3)": the distinct model names, for the operator reading the result.
  static std::string models(const Session& s) {
    std::set<std::string> names;
    for (nvmlDevice_t dev : s.gpus) {
      char buf[kNvmlDeviceNameBufferSize] = {};
      if (dev && call(s.api().device_get_name, dev, buf, unsigned{sizeof buf}) == NVML_SUCCESS) {
        buf[sizeof buf - 1] = '\0';
        names.insert(buf);
      }
    }
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "" : " (" + out + ")";
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_count_check() { return std::make_unique<GpuCountCheck>(); }

}  // namespace vigil
