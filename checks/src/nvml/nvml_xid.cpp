// nvml_xid: critical XID events raised while the check listens (ctx.xid_wait). NVML only
// delivers events that happen after registration, so this sees faults of the current moment,
// not the kernel log's history: XIDs raised before the check started are covered by the hook
// mode's kernel-log reader ("XIDs since last run", /dev/kmsg), not here.
// Each XID is judged by the XID catalogue (vigil/checks/xid_catalogue.h, docs/xid.md) from its
// number alone (an NVML event carries no text, so XID 154 and 144-150 are watched here and
// judged by kmsg_xid from the kernel log's line):
//   reset_gpu / reboot / service -> xid_fatal_events, fails without a SKU, with that remedy;
//   watch -> xid_other_events, status warn; none -> xid_other_events, reported only.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "check_factories.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

// (gpu, xid) -> how often, in arrival order of first sight
using Seen = std::map<std::pair<int, unsigned long long>, int>;

// Registers every GPU for critical XID events; how many are registered.
int register_gpus(const Session& s, nvmlEventSet_t set, Verdict& v) {
  int registered = 0;
  for (int g = 0; g < s.count(); ++g) {
    if (!s.gpus[g]) continue;
    const nvmlReturn_t rc =
        s.api().device_register_events(s.gpus[g], kNvmlEventTypeXidCriticalError, set);
    if (rc == NVML_SUCCESS) {
      ++registered;
    } else if (is_not_supported(rc)) {
      v.not_supported(g, "XID events");
    } else {
      v.query_failed(s, g, "nvmlDeviceRegisterEvents", rc);
    }
  }
  return registered;
}

// The critical XIDs the set delivers until ctx.xid_wait has passed.
Seen wait_for_xids(const CheckContext& ctx, const Session& s, nvmlEventSet_t set, Verdict& v) {
  Seen seen;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + ctx.xid_wait;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    nvmlEventData_t data{};
    const nvmlReturn_t rc = s.api().event_set_wait(
        set, &data, static_cast<unsigned>(std::max<long long>(0, left.count())));
    if (rc == NVML_ERROR_TIMEOUT) break;
    if (rc != NVML_SUCCESS) {
      v.query_failed(s, -1, "nvmlEventSetWait_v2", rc);
      break;
    }
    if (data.eventType & kNvmlEventTypeXidCriticalError) {
      const auto it = std::find(s.gpus.begin(), s.gpus.end(), data.device);
      const int g = it == s.gpus.end() ? -1 : static_cast<int>(it - s.gpus.begin());
      ++seen[{g, data.eventData}];
    }
    if (Clock::now() >= deadline) break;
  }
  return seen;
}

// The XIDs seen, judged by the catalogue.
struct Judged {
  int fatal = 0, other = 0;
  std::map<int, int> per_gpu;  // GPU -> its events whose action drains
  std::string fatal_list, other_list;
  std::optional<XidAction> worst;
};

// Each distinct (GPU, XID) judged once; the counts follow from `seen`. An XID to watch is a
// warning finding.
Judged judge(const Seen& seen, const XidCatalogue& catalogue, Verdict& v) {
  Judged j;
  for (const auto& [key, n] : seen) {
    const auto& [g, xid] = key;
    const XidAction action = catalogue.judge(xid).action;
    std::string item = "XID " + std::to_string(xid) + " gpu" + std::to_string(g);
    if (action != XidAction::kNone) item += " (" + std::string(to_string(action)) + ")";
    if (n > 1) item += " x" + std::to_string(n);
    (drains(action) ? j.fatal : j.other) += n;
    if (drains(action) && g >= 0) j.per_gpu[g] += n;
    if (drains(action)) {
      j.fatal_list += (j.fatal_list.empty() ? "" : ", ") + item;
      if (!j.worst || action > *j.worst) j.worst = action;
    } else {
      j.other_list += (j.other_list.empty() ? "" : ", ") + item;
      if (action == XidAction::kWatch) v.add(Status::kWarn, item, "VIGIL-NVML-XID");
    }
  }
  return j;
}

class NvmlXidCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_xid"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    const Api& api = s.api();
    if (!api.event_set_create || !api.device_register_events || !api.event_set_wait ||
        !api.event_set_free) {
      return skipped(name(), "XID events not supported by this NVML library");
    }
    nvmlEventSet_t set = nullptr;
    if (nvmlReturn_t rc = api.event_set_create(&set); rc != NVML_SUCCESS) {
      return error(name(), "nvmlEventSetCreate: " + s.err(rc), kFaultQuery);
    }
    const int registered = register_gpus(s, set, v);
    const XidCatalogue& catalogue = ctx.xid_catalogue();
    if (!catalogue.valid()) {
      api.event_set_free(set);
      return error(name(), catalogue.version(), "VIGIL-XID-CATALOGUE");
    }
    const Seen seen = registered > 0 ? wait_for_xids(ctx, s, set, v) : Seen{};
    api.event_set_free(set);

    if (registered == 0) {  // nothing to listen to: skipped (unsupported) or error (failed)
      v.conclude(
          r,
          [](const Measurement& m, Status) {
            return Described{m.name, ""};
          },
          "");
      return r;
    }
    const Judged j = judge(seen, catalogue, v);
    Measurement& f = add_measurement(r, ctx, "xid_fatal_events", j.fatal, "count");
    default_threshold(f, Op::kLe, 0, std::nullopt,
                      "XID catalogue " + catalogue.version() +
                          ": an XID whose action is reset_gpu, reboot or service");
    // Per GPU too: the drainer's part history charges a drain to the GPUs whose figures fail
    // (review W7).
    for (const auto& [g, n] : j.per_gpu) {
      Measurement& m = add_measurement(r, ctx, "xid_gpu_fatal", n, "count", g);
      default_threshold(m, Op::kLe, 0, std::nullopt,
                        "XID catalogue " + catalogue.version() + ": this GPU's XIDs");
    }
    add_measurement(r, ctx, "xid_other_events", j.other, "count");
    const std::string fatal_code = j.worst ? xid_fault_code("NVML", *j.worst) : "";
    const double waited_s = std::chrono::duration<double>(ctx.xid_wait).count();
    std::string summary =
        "no critical XID in " + figure(waited_s) + "s on " + std::to_string(registered) + " GPUs";
    if (!j.other_list.empty()) summary = j.other_list + " (not health-critical)";
    v.conclude(
        r,
        [&](const Measurement& m, Status) {
          if (m.name == "xid_fatal_events" || m.name == "xid_gpu_fatal")
            return Described{j.fatal_list, fatal_code};
          return Described{j.other_list, "VIGIL-NVML-XID"};
        },
        summary);
    if (r.status == Status::kFail && j.worst) r.remedy = remedy_of(*j.worst);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_xid_check() { return std::make_unique<NvmlXidCheck>(); }

}  // namespace vigil
