// nvml_nvlink: NVLink state and error counters of every link of every GPU. A link that exists
// but is down fails under a SKU file (DCGM health watch) and warns without one (the board's
// link count is unknown: review F17). Replay, recovery and CRC flit/data
// counters are reported as their growth since the previous run (state in ctx.state_dir),
// summed per GPU; the message names the links that moved. Links NVML reports as not
// supported / invalid do not exist on this board and are not counted. Where the driver answers
// NVML_FI_DEV_NVLINK_LINK_COUNT, the count is reported (nvlink_link_count), so a SKU file can
// require every link of the board; every link index is still scanned.
#include <map>
#include <string>
#include <vector>

#include "check_factories.h"
#include "core/counter_state.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

struct Counter {
  int nvml_counter;
  const char* key;  // state key suffix
  const char* measurement;
  const char* text;
  const char* fault;
};

constexpr Counter kCounters[] = {
    {NVML_NVLINK_ERROR_DL_REPLAY, "replay", "nvlink_replay_delta", "replays",
     "VIGIL-NVML-NVLINK-REPLAY"},
    {NVML_NVLINK_ERROR_DL_RECOVERY, "recovery", "nvlink_recovery_delta", "recoveries",
     "VIGIL-NVML-NVLINK-RECOVERY"},
    {NVML_NVLINK_ERROR_DL_CRC_FLIT, "crc_flit", "nvlink_crc_flit_delta", "CRC flit errors",
     "VIGIL-NVML-NVLINK-CRC"},
    {NVML_NVLINK_ERROR_DL_CRC_DATA, "crc_data", "nvlink_crc_data_delta", "CRC data errors",
     "VIGIL-NVML-NVLINK-CRC"},
};

class NvmlNvlinkCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_nvlink"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    const Api& api = s.api();
    CounterState state(ctx.state_dir, name(), ctx.node);
    int links_up = 0;
    // (gpu, measurement) -> links whose counter moved, for the message
    std::map<std::pair<int, std::string>, std::string> moved_links;
    // gpu -> links that are down
    std::map<int, std::string> down_links;
    std::vector<int> mig_gpus;

    for (int g = 0; g < s.count(); ++g) {
      nvmlDevice_t dev = s.gpus[g];
      if (!dev) continue;
      // NVML reports every NVLink of a MIG-enabled GPU as inactive. DCGM works around it ("Bug
      // 200682374 - NVML reports links to MIG enabled GPUs as down. This causes health checks
      // to fail", dcgmlib/src/DcgmTopology.cpp) by treating them as disabled: so does Vigil
      // (review F02). Only the current mode counts: while MIG is merely pending the links
      // still report their real state.
      unsigned mig_current = 0, mig_pending = 0;
      if (call(api.device_get_mig_mode, dev, &mig_current, &mig_pending) == NVML_SUCCESS &&
          mig_current == kNvmlDeviceMigEnable) {
        mig_gpus.push_back(g);
        continue;
      }
      const std::string key = gpu_key(s, g);
      int present = 0, down = 0;
      // measurement -> sum over links, only for counters the driver answered: Blackwell drivers
      // answer NOT_SUPPORTED for the legacy DL counters (nvml.h: "unsupported for Blackwell+",
      // use the NVML_FI_DEV_NVLINK_COUNT_* fields), and an unanswered counter is no zero
      // (review F13).
      std::map<std::string, unsigned long long> deltas;
      bool failed = false, counters_failed = false;
      // Readings are kept until every link of the GPU was read: a failed query on link k must
      // not move the saved baselines of links 0..k-1, or their growth since the last run would
      // never be reported (the next run's delta starts from the reading of this failed run).
      struct Reading {
        std::string state_key, port;
        const Counter* counter;
        unsigned long long value;
      };
      std::vector<Reading> readings;
      // The links this GPU has as the driver counts them (NVML_FI_DEV_NVLINK_LINK_COUNT), where it
      // answers: a figure a SKU file may bound (nvlink_link_count: NVLink 5 GPUs have 18). It does
      // not bound the scan: a driver counting fewer links (one masked after a failed training)
      // must not hide a link that is down.
      if (const FieldRead count = read_field(s, g, kNvmlFieldNvLinkLinkCount);
          count.rc == NVML_SUCCESS && count.value && *count.value <= kNvmlNvLinkMaxLinks)
        add_measurement(r, ctx, "nvlink_link_count", static_cast<double>(*count.value), "count", g);
      for (unsigned link = 0; link < kNvmlNvLinkMaxLinks && !failed; ++link) {
        int link_state = NVML_FEATURE_DISABLED;
        nvmlReturn_t rc = call(api.device_get_nvlink_state, dev, link, &link_state);
        if (is_not_supported(rc) || rc == NVML_ERROR_INVALID_ARGUMENT) continue;  // no link
        if (rc != NVML_SUCCESS) {
          v.query_failed(s, g, "nvmlDeviceGetNvLinkState(link " + std::to_string(link) + ")", rc);
          failed = true;
          break;
        }
        ++present;
        const std::string port = "nvlink" + std::to_string(link);
        if (link_state != NVML_FEATURE_ENABLED) {
          ++down;
          down_links[g] += (down_links[g].empty() ? "" : ",") + port;
          continue;  // counters of a down link do not move
        }
        if (!state.enabled() || counters_failed) continue;
        for (const Counter& c : kCounters) {
          unsigned long long value = 0;
          rc = call(api.device_get_nvlink_error_counter, dev, link, c.nvml_counter, &value);
          if (is_not_supported(rc)) continue;
          if (rc != NVML_SUCCESS) {
            // The counters are then not reported for this GPU, but its link states still are:
            // a counter the driver cannot read must not hide a link that is down.
            v.query_failed(s, g, "nvmlDeviceGetNvLinkErrorCounter(" + port + ")", rc);
            counters_failed = true;
            break;
          }
          readings.push_back({key + "/" + port + "/" + c.key, port, &c, value});
        }
      }
      if (!failed && !counters_failed) {
        for (const Reading& rd : readings) {
          const auto delta = state.update(rd.state_key, rd.value).delta;
          deltas[rd.counter->measurement] += delta.value_or(0);
          if (delta.value_or(0) > 0) {
            std::string& links = moved_links[{g, rd.counter->measurement}];
            links += (links.empty() ? "" : ",") + rd.port;
          }
        }
      }
      if (present == 0) {
        if (!failed) v.not_supported(g, "NVLink");
        continue;
      }
      if (failed) continue;  // the query failure is reported; partial counts would mislead
      links_up += present - down;
      Measurement& m = add_measurement(r, ctx, "nvlink_links_down", down, "count", g);
      if (!m.threshold) {
        // Without a SKU bound Vigil does not know how many links this board wires: on PCIe
        // boards with NVLink bridge connectors (H100 PCIe, H100/H200 NVL) a missing or partial
        // bridge leaves links that NVML may report inactive, and DCGM only judges the links
        // NVML_FI_DEV_NVLINK_LINK_COUNT says exist (DcgmCacheManager InitializeNvLinkCount).
        // So an inactive link of an unknown board warns (review F17); the SKU files of the
        // NVSwitch boards (every link wired) fail it, as DCGM's health watch does.
        default_threshold(m, Op::kLe, 0, std::nullopt,
                          "built-in: NVLink down warns on a board without a SKU file (its link "
                          "count is unknown); SKU files fail it (DCGM health watch)");
        m.threshold->unconfirmed = true;
      }
      if (state.enabled() && !counters_failed) {
        for (const Counter& c : kCounters) {
          if (!deltas.count(c.measurement)) continue;  // not answered on any link
          add_measurement(r, ctx, c.measurement, static_cast<double>(deltas[c.measurement]),
                          "count", g);
        }
        if (deltas.size() < std::size(kCounters) && present > down) {
          v.not_supported(g, "some NVLink error counters");
        }
      }
    }

    std::string mig_note;
    if (!mig_gpus.empty()) {
      mig_note = "links of MIG-enabled ";
      for (size_t i = 0; i < mig_gpus.size(); ++i)
        mig_note += (i ? ",gpu" : "gpu") + std::to_string(mig_gpus[i]);
      mig_note += " not judged (NVML reports them inactive under MIG)";
      if (static_cast<int>(mig_gpus.size()) == s.count()) return skipped(name(), mig_note);
    }
    std::string summary = std::to_string(links_up) + " NVLinks up";
    if (!mig_note.empty()) summary += "; " + mig_note;
    if (!state.enabled()) {
      summary += "; no state dir, error counter deltas not measured";
    } else {
      if (!state.load_problem().empty()) summary += "; " + state.load_problem();
      if (state.baselines() > 0) summary += "; baseline recorded";
      if (auto saved = state.save(); !saved) {
        summary += "; state not saved: " + saved.error().to_string();
      }
    }
    v.conclude(
        r,
        [&](const Measurement& m, Status) {
          const int g = m.gpu.value_or(-1);
          const std::string gs = "gpu" + std::to_string(g);
          if (m.name == "nvlink_links_down") {
            return Described{gs + " " + down_links[g] + " down", "VIGIL-NVML-NVLINK-DOWN"};
          }
          if (m.name == "nvlink_link_count") {
            return Described{gs + " has " + figure(m.value) + " NVLinks",
                             "VIGIL-NVML-NVLINK-COUNT"};
          }
          for (const Counter& c : kCounters) {
            if (m.name == c.measurement) {
              return Described{
                  gs + " " + moved_links[{g, m.name}] + " " + c.text + " +" + figure(m.value),
                  c.fault};
            }
          }
          return Described{gs + " " + m.name + " " + figure(m.value), "VIGIL-NVML-NVLINK"};
        },
        summary);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_nvlink_check() { return std::make_unique<NvmlNvlinkCheck>(); }

}  // namespace vigil
