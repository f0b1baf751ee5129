#include "nvml_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "vigil/base/files.h"

namespace vigil::nvml {

// GPU core temperature: nvmlDeviceGetTemperatureV when the driver has it and it answers, else the
// deprecated nvmlDeviceGetTemperature (drivers before the V call, or a V call that refuses).
nvmlReturn_t gpu_temperature(const Api& api, nvmlDevice_t dev, unsigned* celsius) {
  if (api.device_get_temperature_v) {
    nvmlTemperature_t t{kNvmlTemperatureV1, NVML_TEMPERATURE_GPU, 0};
    if (api.device_get_temperature_v(dev, &t) == NVML_SUCCESS && t.temperature >= 0) {
      *celsius = static_cast<unsigned>(t.temperature);
      return NVML_SUCCESS;
    }
  }
  return call(api.device_get_temperature, dev, int{NVML_TEMPERATURE_GPU}, celsius);
}

Result<Session> open_session(const CheckContext& ctx) {
  auto lib = Library::open(ctx.nvml_library);
  if (!lib) return lib.error();
  Session s;
  s.lib = std::move(lib.value());
  unsigned n = 0;
  if (nvmlReturn_t rc = s.api().device_get_count(&n); rc != NVML_SUCCESS) {
    return Error{s.err(rc), "nvmlDeviceGetCount_v2"};
  }
  // One GPU without a handle must not blind every check to the others: each such
  // GPU becomes a finding of its own and the rest are inspected as usual.
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    nvmlReturn_t rc = s.api().device_get_handle_by_index(i, &dev);
    if (rc != NVML_SUCCESS) {
      s.no_handle.emplace_back(static_cast<int>(i), rc);
      if (handle_error_is_hardware(rc)) s.lost.push_back(static_cast<int>(i));
      dev = nullptr;
    }
    s.gpus.push_back(dev);
  }
  return s;
}

// nvml.h, nvmlDeviceGetHandleByIndex_v2's return codes: INSUFFICIENT_POWER "if any attached
// devices have improperly attached external power cables", IRQ_ISSUE "if NVIDIA kernel detected
// an interrupt issue with the attached GPUs", GPU_IS_LOST "if the target GPU has fallen off the
// bus or is otherwise inaccessible", UNKNOWN "on any unexpected error": the answer for a GPU in
// a bad state ("Unable to determine the device handle for GPU ...: Unknown Error" in nvidia-smi)
// while its neighbours answer. NO_PERMISSION and the rest describe the caller, not the GPU.
bool handle_error_is_hardware(nvmlReturn_t rc) {
  return rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_INSUFFICIENT_POWER ||
         rc == NVML_ERROR_IRQ_ISSUE || rc == NVML_ERROR_UNKNOWN;
}

CheckResult unavailable(std::string_view check, const Error& e) {
  std::string why = e.message;
  if (!e.where.empty() && e.where.rfind("dlopen", 0) != 0) why = e.where + ": " + why;
  return error(check, "NVML not available: " + why, kFaultUnavailable);
}

namespace {
std::string seen_gpus_file(const CheckContext& ctx) {
  return ctx.state_dir.empty() || ctx.node.empty() ? ""
                                                   : ctx.state_dir + "/gpus-" + ctx.node + ".json";
}
}  // namespace

std::map<std::string, SeenGpu> seen_gpus(const CheckContext& ctx) {
  std::map<std::string, SeenGpu> out;
  std::ifstream in(seen_gpus_file(ctx));
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return out;
  for (const auto& [bus, v] : j.items()) {
    if (!v.is_object()) continue;
    SeenGpu g;
    if (v.contains("index") && v["index"].is_number_integer()) g.index = v["index"].get<int>();
    if (v.contains("serial") && v["serial"].is_string()) g.serial = v["serial"].get<std::string>();
    if (v.contains("gone_since") && v["gone_since"].is_number_integer())
      g.gone_since = v["gone_since"].get<std::int64_t>();
    out[bus] = g;
  }
  return out;
}

void remember_seen_gpus(const CheckContext& ctx, const std::map<std::string, SeenGpu>& now) {
  remember_seen_gpus(ctx, now, seen_gpus(ctx));
}

void remember_seen_gpus(const CheckContext& ctx, const std::map<std::string, SeenGpu>& now,
                        std::map<std::string, SeenGpu> all, std::int64_t at, bool forget_gone) {
  const std::string path = seen_gpus_file(ctx);
  if (path.empty() || now.empty()) return;
  if (at == 0) at = static_cast<std::int64_t>(std::time(nullptr));
  bool changed = false;
  for (auto it = all.begin(); it != all.end();) {
    SeenGpu& g = it->second;
    if (now.count(it->first)) {
      ++it;
      continue;
    }
    // Gone now: its serial stays, its index may be another GPU's; a file from before the clock
    // was kept starts it now.
    if (g.index != -1 || g.gone_since == 0) {
      g.index = -1;
      g.gone_since = at;
      changed = true;
    }
    const bool forget = forget_gone && at - g.gone_since > kForgetGoneGpuAfterS;
    changed |= forget;
    it = forget ? all.erase(it) : std::next(it);
  }
  for (const auto& [bus, g] : now) {
    SeenGpu& kept = all[bus];
    const std::string serial = g.serial.empty() ? kept.serial : g.serial;
    if (kept.index == g.index && kept.serial == serial && kept.gone_since == 0) continue;
    kept = SeenGpu{g.index, serial, 0};
    changed = true;
  }
  if (!changed) return;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [bus, g] : all) {
    j[bus] = {{"index", g.index}, {"serial", g.serial}};
    if (g.gone_since != 0) j[bus]["gone_since"] = g.gone_since;
  }
  (void)replace_file_atomically(path, j.dump() + "\n");
}

std::string gpu_key(const Session& s, int gpu) {
  nvmlPciInfo_t pci{};
  if (s.gpus[gpu] && call(s.api().device_get_pci_info, s.gpus[gpu], &pci) == NVML_SUCCESS) {
    pci.busId[sizeof(pci.busId) - 1] = '\0';
    if (pci.busId[0]) return pci.busId;
  }
  return "gpu" + std::to_string(gpu);
}

void Verdict::add(Status s, std::string text, std::string fault_code) {
  findings_.add(s, std::move(text), std::move(fault_code));
}

void Verdict::not_supported(int gpu, std::string what) {
  unsupported_.emplace_back(gpu, std::move(what));
}

void Verdict::query_failed(const Session& s, int gpu, std::string_view call_name, nvmlReturn_t rc) {
  const std::string g = gpu < 0 ? "" : "gpu" + std::to_string(gpu) + " ";
  if (rc == NVML_ERROR_GPU_IS_LOST) {
    add(Status::kFail, (g.empty() ? "GPU " : g) + "lost (" + std::string(call_name) + ")",
        kFaultGpuLost);
  } else {
    add(Status::kError, g + std::string(call_name) + ": " + s.err(rc), kFaultQuery);
  }
}

void Verdict::gpus_lost(const Session& s) {
  std::vector<std::string> hidden;  // one finding for all of them, the hint said once
  for (const auto& [g, rc] : s.no_handle) {
    const std::string gs = "gpu" + std::to_string(g);
    if (rc == NVML_ERROR_NO_PERMISSION) {
      hidden.push_back(gs);
    } else if (!handle_error_is_hardware(rc)) {
      add(Status::kError, gs + " nvmlDeviceGetHandleByIndex_v2: " + s.err(rc), kFaultQuery);
    } else if (rc == NVML_ERROR_GPU_IS_LOST) {
      add(Status::kFail, gs + " lost (GPU is lost)", kFaultGpuLost);
    } else {
      add(Status::kFail, gs + " unusable (" + s.err(rc) + ")", kFaultGpuLost);
    }
  }
  if (!hidden.empty()) {
    add(Status::kError,
        short_list(hidden, 8, ",", " ") +
            " hidden from this process (nvmlDeviceGetHandleByIndex_v2: " +
            s.err(NVML_ERROR_NO_PERMISSION) +
            "): a Slurm step whose device cgroup does not hold them; run the check in an "
            "allocation of the node's GPUs",
        kFaultGpuHidden);
  }
}

void Verdict::conclude(CheckResult& r, const Describe& describe, std::string pass_message) const {
  Findings all = findings_;
  for (const Measurement& m : r.measurements) {
    const Status s = m.status();
    if (s == Status::kWarn || s == Status::kFail) {
      Described d = describe(m, s);
      all.add(s, std::move(d.text), std::move(d.fault_code));
    }
  }
  // "retired pages not supported on gpu0-7": group unsupported probes by what.
  std::map<std::string, std::vector<int>> unsupported;
  for (const auto& [gpu, what] : unsupported_) unsupported[what].push_back(gpu);
  std::vector<std::string> notes;
  for (const auto& [what, gpus] : unsupported) {
    std::string who =
        gpus.size() == 1 ? "gpu" + std::to_string(gpus[0]) : std::to_string(gpus.size()) + " GPUs";
    notes.push_back(what + " not supported on " + who);
  }
  if (!all.conclude(r, "VIGIL-NVML", 4, "; ")) return;
  r.fault_code.clear();
  if (r.measurements.empty()) {
    r.status = Status::kSkipped;
    r.message = notes.empty() ? "no GPUs visible to NVML" : short_list(notes, 3, "; ", "; ");
    return;
  }
  r.message = std::move(pass_message);
  if (!notes.empty())
    r.message += (r.message.empty() ? "" : "; ") + short_list(notes, 3, "; ", "; ");
}

CheckResult NvmlCheck::run(const CheckContext& ctx) {
  auto session = open_session(ctx);
  if (!session) return unavailable(name(), session.error());
  CheckResult r;
  r.check = std::string(name());
  Verdict v;
  v.gpus_lost(session.value());
  return inspect(ctx, session.value(), r, v);
}

std::optional<unsigned long long> field_value(const nvmlFieldValue_t& fv) {
  switch (fv.valueType) {
    case kNvmlValueTypeDouble: {
      const double d = fv.value.dVal;
      if (!(d >= 0) || d != std::floor(d) || d > 1e18) return std::nullopt;
      return static_cast<unsigned long long>(d);
    }
    case kNvmlValueTypeUnsignedInt:
      return fv.value.uiVal;
    case kNvmlValueTypeUnsignedLong:
      return fv.value.ulVal;
    case kNvmlValueTypeUnsignedLongLong:
      return fv.value.ullVal;
    case kNvmlValueTypeSignedLongLong:
      if (fv.value.sllVal < 0) return std::nullopt;
      return static_cast<unsigned long long>(fv.value.sllVal);
    case kNvmlValueTypeSignedInt:
      if (fv.value.siVal < 0) return std::nullopt;
      return static_cast<unsigned long long>(fv.value.siVal);
    case kNvmlValueTypeUnsignedShort:
      return fv.value.usVal;
    default:
      return std::nullopt;
  }
}

FieldRead read_field(const Session& s, int gpu, unsigned field_id) {
  nvmlFieldValue_t fv{};
  fv.fieldId = field_id;
  FieldRead fr;
  const nvmlReturn_t rc = call(s.api().device_get_field_values, s.gpus[gpu], 1, &fv);
  fr.rc = rc == NVML_SUCCESS ? fv.nvmlReturn : rc;
  fr.type = fv.valueType;
  if (fr.rc == NVML_SUCCESS) fr.value = field_value(fv);
  return fr;
}

}  // namespace vigil::nvml
