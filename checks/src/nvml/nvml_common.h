#pragma once
// Shared plumbing for the NVML checks: opening NVML for one run, built-in thresholds for
// absolute findings, and turning measurements + findings into one status and one short,
// reason-ready message ("gpu3 row remap pending (1)").
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvml_loader.h"
#include "vigil/checks/check.h"
#include "vigil/checks/findings.h"

namespace vigil::nvml {

// The GPUs runs of gpu_count saw on this node, by normalised bus id ("0:18:00.0",
// cuda_probe::normal_bus_id): NVML index and board serial. Kept in <state dir>/gpus-<node>.json;
// a GPU that leaves keeps its entry, so a missing GPU is named with its serial, and kmsg_xid
// names the GPU (NVML index) of an XID line's bus id. Empty without a state dir.
struct SeenGpu {
  int index = -1;
  std::string serial;
  std::int64_t gone_since = 0;  // Unix seconds since no run saw it; 0 while it is seen
};
// A GPU no run has seen for this long leaves the file, but only while the node has every GPU it
// should (a node still short of one keeps naming it, however long its RMA takes): a board
// replaced or renumbered by a firmware or BIOS change (other bus ids) is not named "seen before"
// for ever. 30 days: Vigil's choice (docs/checks-nvml.md, gpu_count).
inline constexpr std::int64_t kForgetGoneGpuAfterS = 30 * 86400;
std::map<std::string, SeenGpu> seen_gpus(const CheckContext& ctx);
// Merges `now` into what is kept (a fresh index or serial replaces the old one); a bus id not in
// `now` keeps its serial and loses its index (the indices after it shift), and, when
// `forget_gone` (the node sees all its GPUs), is dropped once gone for kForgetGoneGpuAfterS by
// `at` (Unix seconds; the wall clock by default).
void remember_seen_gpus(const CheckContext& ctx, const std::map<std::string, SeenGpu>& now);
// The same, over `kept` as seen_gpus read it (no second read).
void remember_seen_gpus(const CheckContext& ctx, const std::map<std::string, SeenGpu>& now,
                        std::map<std::string, SeenGpu> kept, std::int64_t at = 0,
                        bool forget_gone = true);

// Where `vigil-check reset` notes when it last reset this node's GPUs (seconds since the epoch,
// one line), in each state directory it is given; nvml_fabric counts its grace from it too.
inline std::string gpu_reset_marker(const std::string& state_dir, const std::string& node) {
  return state_dir + "/gpu-reset-" + node;
}

inline constexpr const char* kFaultUnavailable = "VIGIL-NVML-UNAVAILABLE";
inline constexpr const char* kFaultQuery = "VIGIL-NVML-QUERY";
inline constexpr const char* kFaultGpuLost = "VIGIL-NVML-GPU-LOST";
// A GPU NVML counts but will not give this process (NVML_ERROR_NO_PERMISSION): the caller may
// not open its device node, as in a Slurm step whose device cgroup does not hold it
// (ConstrainDevices=yes; an `srun -Z` step holds none). Vigil's setup, never the GPU's health.
inline constexpr const char* kFaultGpuHidden = "VIGIL-NVML-GPU-HIDDEN";

// NVML opened for one check run, with a handle per GPU index.
struct Session {
  std::unique_ptr<Library> lib;
  std::vector<nvmlDevice_t> gpus;  // by NVML index; nullptr where no handle was given
  std::vector<int> lost;           // indices whose handle failed with a hardware code (below)
  // Every index whose handle failed, with NVML's answer (nvmlDeviceGetHandleByIndex_v2).
  std::vector<std::pair<int, nvmlReturn_t>> no_handle;

  const Api& api() const { return lib->api(); }
  std::string err(nvmlReturn_t rc) const { return lib->error_string(rc); }
  int count() const { return static_cast<int>(gpus.size()); }
};

// Loads ctx.nvml_library, initialises NVML and gets every device handle.
Result<Session> open_session(const CheckContext& ctx);
// GPU core temperature: nvmlDeviceGetTemperatureV when the driver has it and it answers, else the
// deprecated nvmlDeviceGetTemperature (nvml_temperature, gpu_soak).
nvmlReturn_t gpu_temperature(const Api& api, nvmlDevice_t dev, unsigned* celsius);
// Whether a failed nvmlDeviceGetHandleByIndex_v2 says the GPU itself is faulty.
bool handle_error_is_hardware(nvmlReturn_t rc);

// The GPUs NVML reads with an NVLink fabric (a fabric info state other than NOT_SUPPORTED), and
// how many of them are registered (COMPLETED with a successful status): host_services' cross-check
// of a Fabric Manager that is down (nvml_fabric.cpp). Error: NVML could not be opened.
struct FabricTally {
  int gpus = 0, registered = 0;
};
Result<FabricTally> fabric_tally(const CheckContext& ctx);

// The error result for a missing library/driver: "NVML not available: <why>",
// fault VIGIL-NVML-UNAVAILABLE. Never fail: a node without a driver is a setup problem.
CheckResult unavailable(std::string_view check, const Error& e);

// "00000000:18:00.0" from nvmlDeviceGetPciInfo_v3, else "gpu<i>". Keys stored counter state,
// so a GPU that drops off the bus does not shift its neighbours' readings.
std::string gpu_key(const Session& s, int gpu);

// A field value as a whole number, whatever nvmlValueType_t member carries it (nvml.h
// NVML_VALUE_TYPE_*); nullopt for a negative or fractional one, or an unknown type.
std::optional<unsigned long long> field_value(const nvmlFieldValue_t& fv);

// One nvmlDeviceGetFieldValues field of GPU g. rc: the call's answer, else the field's own
// (nvmlFieldValue_t::nvmlReturn); value: set when rc is NVML_SUCCESS and field_value reads it;
// type: the nvmlValueType_t it arrived as, for the message when it cannot be read.
struct FieldRead {
  nvmlReturn_t rc = NVML_SUCCESS;
  std::optional<unsigned long long> value;
  int type = 0;
};
FieldRead read_field(const Session& s, int gpu, unsigned field_id);

// Integer figures print without decimals ("3"), others with 3 significant digits (the base's
// one formatter, vigil/base/strings.h).
inline std::string figure(double v) { return format_figure(v, FigureStyle::kThreeSignificant); }

struct Described {
  std::string text;        // "gpu2 volatile DBE 1"
  std::string fault_code;  // "VIGIL-NVML-DBE"
};
using Describe = std::function<Described(const Measurement&, Status)>;

// Collects what a check found besides threshold verdicts, then concludes the result.
class Verdict {
 public:
  void add(Status s, std::string text, std::string fault_code);
  // A probe this GPU/driver does not offer (NOT_SUPPORTED or symbol missing).
  void not_supported(int gpu, std::string what);
  // A failed NVML call: GPU_IS_LOST is a health failure (fail, VIGIL-NVML-GPU-LOST),
  // anything else means the check could not run (error, VIGIL-NVML-QUERY).
  void query_failed(const Session& s, int gpu, std::string_view call, nvmlReturn_t rc);
  // Findings for GPUs that gave no handle when the session opened: fail for the hardware
  // answers (lost, insufficient power, IRQ issue, unknown), error for the others.
  void gpus_lost(const Session& s);

  // Status = worst of measurement verdicts (SKU or built-in thresholds, described by
  // `describe`) and added findings, as Findings::conclude has it (at most 4 shown). Message =
  // the worst findings (reason-ready), or pass_message when all is well. When nothing could be
  // measured because every probe is unsupported, the result is skipped with that reason.
  void conclude(CheckResult& r, const Describe& describe, std::string pass_message) const;

 private:
  Findings findings_;
  std::vector<std::pair<int, std::string>> unsupported_;
};

// Base of the per-GPU NVML checks: opens NVML (error "NVML not available" when it cannot),
// starts the result with the GPUs lost at session open already judged, and hands over to
// inspect(). Every NVML check applies everywhere; NVML missing is an error at run time.
class NvmlCheck : public Check {
 public:
  Applies applies(const CheckContext&) const override { return {}; }
  CheckResult run(const CheckContext& ctx) final;

 protected:
  virtual CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                              Verdict& v) = 0;
};

}  // namespace vigil::nvml
