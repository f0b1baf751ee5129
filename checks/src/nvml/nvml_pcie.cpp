// nvml_pcie: the host link of every GPU. Width below the SKU threshold fails (a lane-degraded
// link halves host bandwidth and does not come back by itself); without a SKU, width below the
// GPU's own maximum warns. Generation: GPUs lower their PCIe generation when idle to save
// power (an idle H100 commonly reports gen 1 of 5), so a current generation below the maximum
// is never a failure: a SKU threshold on pcie_link_gen is demoted to warn-only, and without
// one the generation is reported but not judged. Replays: the replay counter's growth since
// the previous run (state in ctx.state_dir), judged by the SKU threshold only.
#include <algorithm>

#include "check_factories.h"
#include "core/counter_state.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

class NvmlPcieCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_pcie"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    const Api& api = s.api();
    CounterState state(ctx.state_dir, name(), ctx.node);
    int below_max_gen = 0;
    int below_max_width = 0;
    unsigned long long replay_total = 0;
    bool replays_read = false;
    for (int g = 0; g < s.count(); ++g) {
      nvmlDevice_t dev = s.gpus[g];
      if (!dev) continue;
      unsigned cur_w = 0, max_w = 0, cur_gen = 0, max_gen = 0;
      nvmlReturn_t rc = call(api.device_get_curr_pcie_width, dev, &cur_w);
      if (rc == NVML_SUCCESS) rc = call(api.device_get_max_pcie_width, dev, &max_w);
      if (rc == NVML_SUCCESS) {
        Measurement& m = add_measurement(r, ctx, "pcie_link_width", cur_w, "lanes", g);
        default_threshold(m, Op::kGe, 1, max_w,
                          "built-in: width below the GPU's maximum warns (DCGM: width < max)");
        if (cur_w < max_w) ++below_max_width;
      } else if (is_not_supported(rc)) {
        v.not_supported(g, "PCIe link width");
      } else {
        v.query_failed(s, g, "nvmlDeviceGetCurr/MaxPcieLinkWidth", rc);
      }

      rc = call(api.device_get_curr_pcie_gen, dev, &cur_gen);
      if (rc == NVML_SUCCESS) rc = call(api.device_get_max_pcie_gen, dev, &max_gen);
      if (rc == NVML_SUCCESS) {
        Measurement& m = add_measurement(r, ctx, "pcie_link_gen", cur_gen, "gen", g);
        if (m.threshold && m.threshold->fail > 1) {
          // Gen below the SKU's figure can be idle power saving: at most warn.
          Threshold& t = *m.threshold;
          t.warn = std::max(t.fail, t.warn.value_or(t.fail));
          t.fail = 1;
          t.source += (t.source.empty() ? "" : "; ") +
                      std::string("demoted to warn-only: GPUs lower PCIe gen at idle");
        }
        if (cur_gen < max_gen) ++below_max_gen;
      } else if (is_not_supported(rc)) {
        v.not_supported(g, "PCIe link generation");
      } else {
        v.query_failed(s, g, "nvmlDeviceGetCurr/MaxPcieLinkGeneration", rc);
      }

      unsigned replays = 0;
      rc = call(api.device_get_pcie_replay_counter, dev, &replays);
      if (rc == NVML_SUCCESS) {
        replays_read = true;
        replay_total += replays;
        if (state.enabled()) {
          const auto delta = state.update(gpu_key(s, g) + "/pcie_replay", replays).delta;
          add_measurement(r, ctx, "pcie_replay_delta", delta ? static_cast<double>(*delta) : 0,
                          "count", g);
        }
      } else if (is_not_supported(rc)) {
        v.not_supported(g, "PCIe replay counter");
      } else {
        v.query_failed(s, g, "nvmlDeviceGetPcieReplayCounter", rc);
      }
    }

    std::string summary = std::to_string(s.count()) + " GPUs: PCIe width ok";
    if (below_max_width > 0) {
      summary += " (" + std::to_string(below_max_width) + " below their max width)";
    }
    if (below_max_gen > 0) {
      summary += ", " + std::to_string(below_max_gen) + " below max gen (idle power saving?)";
    }
    if (replays_read && !state.enabled()) {
      summary +=
          "; no state dir, replay deltas not measured (total " + std::to_string(replay_total) + ")";
    }
    if (state.enabled() && replays_read) {
      if (!state.load_problem().empty()) summary += "; " + state.load_problem();
      if (state.baselines() > 0) summary += "; baseline recorded";
      if (auto saved = state.save(); !saved) {
        summary += "; state not saved: " + saved.error().to_string();
      }
    }
    v.conclude(
        r,
        [](const Measurement& m, Status) {
          const std::string g = "gpu" + std::to_string(m.gpu.value_or(-1));
          const std::string bound =
              m.threshold ? figure(m.status() == Status::kFail ? m.threshold->fail
                                                               : m.threshold->warn.value_or(0))
                          : "?";
          if (m.name == "pcie_link_width") {
            return Described{g + " PCIe x" + figure(m.value) + " (<" + bound + ")",
                             "VIGIL-NVML-PCIE-WIDTH"};
          }
          if (m.name == "pcie_link_gen") {
            return Described{g + " PCIe gen" + figure(m.value) + " (<" + bound + ")",
                             "VIGIL-NVML-PCIE-GEN"};
          }
          return Described{g + " PCIe replays +" + figure(m.value), "VIGIL-NVML-PCIE-REPLAY"};
        },
        summary);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_pcie_check() { return std::make_unique<NvmlPcieCheck>(); }

}  // namespace vigil
