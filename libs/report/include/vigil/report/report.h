#pragma once
// NodeReport: what one vigil-check run on one node found. Versioned JSON contract,
// documented in docs/node-report.md. Parsing is strict: any problem is an error naming the
// field (JSON pointer style, e.g. "/checks/2/measurements/0/value"); never a partial report.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/base/time.h"
#include "vigil/report/status.h"
#include "vigil/report/threshold.h"

namespace vigil {

inline constexpr int kNodeReportSchemaVersion = 1;
inline constexpr size_t kMaxRepeats = 8;  // per measurement

struct Measurement {
  std::string name;  // snake_case, e.g. "busbw", "volatile_uncorrected_ecc"
  double value = 0;
  std::string unit;  // one of is_known_unit()
  std::optional<int> gpu;
  std::optional<std::string> port;  // IB "mlx5_0/1", NVLink "nvlink3"
  std::optional<Threshold> threshold;
  // Re-measurements of the same figure in the same run (vigil-check repeats a probe whose
  // first figure looked slow against its peers), in the same unit; empty when not repeated.
  std::vector<double> repeats;
  // Status of this measurement alone (evaluate against threshold; pass when none).
  Status status() const;
};

// What clears a failed check's fault, when the check knows it from the hardware's own
// documentation (kmsg_xid / nvml_xid / nvml_recovery: NVIDIA's Xid catalogue and the driver's
// recovery action): the repair ladder's first step. docs/node-report.md.
enum class Remedy { kResetGpu, kReboot, kService };
inline constexpr EnumName<Remedy> kRemedyNames[] = {
    {Remedy::kResetGpu, "reset_gpu"}, {Remedy::kReboot, "reboot"}, {Remedy::kService, "service"}};
inline std::string_view to_string(Remedy r) { return name_of(kRemedyNames, r, "service"); }

struct CheckResult {
  std::string check;       // registry name, e.g. "nvml_row_remap"
  std::string short_name;  // the check's own short name for Slurm reasons ("remap"); optional
  Status status = Status::kPass;
  std::vector<Measurement> measurements;
  std::string message;           // one human line; for fail/warn: what is wrong, with figures
  std::string fault_code;        // stable code, e.g. "VIGIL-NVML-REMAP-PENDING"; empty on pass
  std::optional<Remedy> remedy;  // on fail, when the check knows what clears the fault
  // A file the check kept on the node for people, by its absolute path there: the driver's
  // nvidia-bug-report.sh output kept before a GPU reset (docs/repair.md). Optional.
  std::optional<std::string> evidence;
  double duration_s = 0;
};

// Which part sits in a GPU slot when the report was made (docs/node-report.md "gpus"): the NVML
// index, the board serial (nvmlDeviceGetSerial: "matches the serial number tag that is
// physically attached to the board") and the GPU UUID; empty where the driver does not say.
// What an RMA needs, and what tells a swapped part from a repeat offender (docs/repair.md).
struct GpuPart {
  int index = 0;
  std::string serial;
  std::string uuid;
  // nvmlDeviceGetVbiosVersion ("96.00.89.00.01"): which firmware the board runs, judged against
  // its node's other GPUs and its class (docs/thresholds.md "Classes").
  std::string vbios;
  bool operator==(const GpuPart&) const = default;
};

// A NIC's firmware (docs/node-report.md "nics"): an RDMA device under /sys/class/infiniband with
// its fw_ver ("28.41.1000") and board_id (the PSID, "MT_0000000838"), as the kernel's
// Documentation/ABI/stable/sysfs-class-infiniband names them. Empty strings where sysfs has none.
struct NicPart {
  std::string device;  // "mlx5_0"
  std::string firmware;
  std::string board_id;
  bool operator==(const NicPart&) const = default;
};

// A check result's `evidence` as the codec takes it: an absolute path of 1-4096 printable
// characters (it reaches events, the audit log and a Kubernetes annotation as it is).
bool is_evidence_path(std::string_view s);

// A serial or UUID as `gpus` takes it: 1..96 printable ASCII characters without blanks (96:
// NVML_DEVICE_UUID_V2_BUFFER_SIZE, the larger of the two buffers). The checker drops an
// identifier that is not, the reader refuses it.
bool is_part_identifier(std::string_view s);

struct NodeReport {
  int schema_version = kNodeReportSchemaVersion;
  std::string node;                     // Slurm node name
  std::optional<std::string> k8s_node;  // Kubernetes Node name, if known
  std::string sku;                      // detected or forced SKU, "unknown" if none matched
  std::optional<std::string> job_id;    // Slurm job id
  // Where the checks ran: "job" (an sbatch check job), "prolog", "epilog", "healthcheck" (the
  // Slurm hooks, `vigil-check hook`). Optional; absent in reports from older checkers.
  std::optional<std::string> context;
  // The suite of a `vigil-check run` ("quick", "full", "qualify"; --exclude may leave out checks
  // the site's nodes cannot run); absent when checks were picked by hand (--only), from the
  // hooks, fabric jobs and older checkers. The
  // drainer's qualify gate counts only a report of its suite (docs/qualify.md "The gate").
  std::optional<std::string> suite;
  std::string run_id;      // unique per run; (node, run_id) identifies a report
  std::string start_time;  // RFC 3339 UTC
  std::string end_time;    // RFC 3339 UTC
  std::vector<CheckResult> checks;
  // The node's GPUs, in NVML order; absent from the Slurm hooks' reports and older checkers'.
  std::vector<GpuPart> gpus;
  // The GPU driver (nvmlSystemGetDriverVersion, "580.95.05") and the node's RDMA devices, from
  // `vigil-check run`; empty when not read (the hooks, older checkers, no driver, no RDMA).
  std::string driver;
  std::vector<NicPart> nics;

  Status overall() const;
};

// Parse result: exactly one of value / error is set.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;  // "<field>: <what is wrong>"
  explicit operator bool() const { return value.has_value(); }
};

nlohmann::json to_json(const Measurement& m);
nlohmann::json to_json(const CheckResult& r);
nlohmann::json to_json(const NodeReport& r);

Parsed<NodeReport> parse_node_report(const nlohmann::json& j);
Parsed<NodeReport> parse_node_report(std::string_view text);
Parsed<CheckResult> parse_check_result(const nlohmann::json& j);
// A POST body may hold one report or an array of reports. With `validated`, each report's own
// JSON object, checked by the same strict reading, is moved there in the same order: the drainer
// journals it as received instead of building it again from the struct (drainer ingest bench,
// docs/benchmarks.md "Drainer ingest").
Parsed<std::vector<NodeReport>> parse_node_reports(
    std::string_view text, std::vector<nlohmann::json>* validated = nullptr);

// Why `name` cannot name exactly one Slurm node, or nullopt when it can: 1-253 characters of
// [A-Za-z0-9._-] (no hostlist brackets, commas or spaces, which Slurm expands) and none of
// Slurm's own readings of a name (vigil/base/slurm_names.h: "ALL", "DEFAULT", long suffixes).
std::optional<std::string> node_name_problem(std::string_view name);

// "gpu3 busbw 151<180GB/s": a measurement against the bound it breaks (needs a threshold).
std::string measurement_figure(const Measurement& m);

// What a failing result says after "vigil: <short name> " in a Slurm reason: the figure of the
// measurement that breaks its bound furthest ("busbw 151<180GB/s"), or for counts and flags the
// check's own message ("gpu5 nvlink4 down"). Not sanitized; vigil/slurm/reason.h does that.
std::string reason_detail(const CheckResult& r);

// The name a Slurm reason shows for r: its short_name, or the check name from a report that
// carries none (older checkers, site tools).
// The values `context` may take.
bool is_known_context(std::string_view context);
bool is_known_suite(std::string_view suite);
// Whether a run of suite `ran` holds every check of suite `need`: qualify holds full, full quick.
bool suite_covers(std::string_view ran, std::string_view need);

inline const std::string& reason_name(const CheckResult& r) {
  return r.short_name.empty() ? r.check : r.short_name;
}

}  // namespace vigil
