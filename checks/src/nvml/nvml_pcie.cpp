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

// What the run saw over every GPU, for the summary.
struct Tally {
  int below_max_gen = 0;
  int below_max_width = 0;
  unsigned long long replay_total = 0;
  bool replays_read = false;
};

// Whether rc is NVML_SUCCESS; else GPU g's `what` is noted unsupported, or `failed_call` failed.
bool answered(nvmlReturn_t rc, const Session& s, int g, Verdict& v, const char* what,
              const char* failed_call) {
  if (rc == NVML_SUCCESS) return true;
  if (is_not_supported(rc)) {
    v.not_supported(g, what);
  } else {
    v.query_failed(s, g, failed_call, rc);
  }
  return false;
}

// GPU g's link width, generation and replay counter.
void inspect_gpu(const CheckContext& ctx, const Session& s, int g, CounterState& state,
                 CheckResult& r, Verdict& v, Tally& t) {
  const Api& api = s.api();
  nvmlDevice_t dev = s.gpus[g];
  unsigned cur_w = 0, max_w = 0, cur_gen = 0, max_gen = 0;
  nvmlReturn_t rc = call(api.device_get_curr_pcie_width, dev, &cur_w);
  if (rc == NVML_SUCCESS) rc = call(api.device_get_max_pcie_width, dev, &max_w);
  if (answered(rc, s, g, v, "PCIe link width", "nvmlDeviceGetCurr/MaxPcieLinkWidth")) {
    Measurement& m = add_measurement(r, ctx, "pcie_link_width", cur_w, "lanes", g);
    default_threshold(m, Op::kGe, 1, max_w,
                      "built-in: width below the GPU's maximum warns (DCGM: width < max)");
    if (cur_w < max_w) ++t.below_max_width;
  }

  rc = call(api.device_get_curr_pcie_gen, dev, &cur_gen);
  if (rc == NVML_SUCCESS) rc = call(api.device_get_max_pcie_gen, dev, &max_gen);
  if (answered(rc, s, g, v, "PCIe link generation", "nvmlDeviceGetCurr/MaxPcieLinkGeneration")) {
    Measurement& m = add_measurement(r, ctx, "pcie_link_gen", cur_gen, "gen", g);
    if (m.threshold && m.threshold->fail > 1) {
      // Gen below the SKU's figure can be idle power saving: at most warn.
      Threshold& th = *m.threshold;
      th.warn = std::max(th.fail, th.warn.value_or(th.fail));
      th.fail = 1;
      th.source += (th.source.empty() ? "" : "; ") +
                   std::string("demoted to warn-only: GPUs lower PCIe gen at idle");
    }
    if (cur_gen < max_gen) ++t.below_max_gen;
  }

  unsigned replays = 0;
  rc = call(api.device_get_pcie_replay_counter, dev, &replays);
  if (answered(rc, s, g, v, "PCIe replay counter", "nvmlDeviceGetPcieReplayCounter")) {
    t.replays_read = true;
    t.replay_total += replays;
    if (state.enabled()) {
      const auto delta = state.update(gpu_key(s, g) + "/pcie_replay", replays).delta;
      add_measurement(r, ctx, "pcie_replay_delta", delta ? static_cast<double>(*delta) : 0, "count",
                      g);
    }
  }
}

Described describe(const Measurement& m, Status) {
  const std::string g = "gpu" + std::to_string(m.gpu.value_or(-1));
  const std::string bound =
      m.threshold
          ? figure(m.status() == Status::kFail ? m.threshold->fail : m.threshold->warn.value_or(0))
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
}

class NvmlPcieCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_pcie"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    CounterState state(ctx.state_dir, name(), ctx.node);
    Tally t;
    for (int g = 0; g < s.count(); ++g)
      if (s.gpus[g]) inspect_gpu(ctx, s, g, state, r, v, t);

    std::string summary = std::to_string(s.count()) + " GPUs: PCIe width ok";
    if (t.below_max_width > 0) {
      summary += " (" + std::to_string(t.below_max_width) + " below their max width)";
    }
    if (t.below_max_gen > 0) {
      summary += ", " + std::to_string(t.below_max_gen) + " below max gen (idle power saving?)";
    }
    if (t.replays_read && !state.enabled()) {
      summary += "; no state dir, replay deltas not measured (total " +
                 std::to_string(t.replay_total) + ")";
    }
    if (state.enabled() && t.replays_read) {
      if (!state.load_problem().empty()) summary += "; " + state.load_problem();
      if (state.baselines() > 0) summary += "; baseline recorded";
      if (auto saved = state.save(); !saved) {
        summary += "; state not saved: " + saved.error().to_string();
      }
    }
    v.conclude(r, describe, summary);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_pcie_check() { return std::make_unique<NvmlPcieCheck>(); }

}  // namespace vigil
