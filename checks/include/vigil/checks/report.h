#pragma once
// NodeReport: what one vigil-check run on one node found. Versioned JSON contract,
// documented in docs/node-report.md. Parsing is strict: any problem is an error naming the
// field (JSON pointer style, e.g. "/checks/2/measurements/0/value"); never a partial report.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "vigil/checks/status.h"
#include "vigil/checks/threshold.h"

namespace vigil {

inline constexpr int kNodeReportSchemaVersion = 1;

struct Measurement {
  std::string name;  // snake_case, e.g. "busbw", "volatile_uncorrected_ecc"
  double value = 0;
  std::string unit;  // one of is_known_unit()
  std::optional<int> gpu;
  std::optional<std::string> port;  // IB "mlx5_0/1", NVLink "nvlink3"
  std::optional<Threshold> threshold;
  // Status of this measurement alone (evaluate against threshold; pass when none).
  Status status() const;
};

struct CheckResult {
  std::string check;  // registry name, e.g. "nvml_row_remap"
  Status status = Status::kPass;
  std::vector<Measurement> measurements;
  std::string message;     // one human line; for fail/warn: what is wrong, with figures
  std::string fault_code;  // stable code, e.g. "VIGIL-NVML-REMAP-PENDING"; empty on pass
  double duration_s = 0;
};

struct NodeReport {
  int schema_version = kNodeReportSchemaVersion;
  std::string node;                     // Slurm node name
  std::optional<std::string> k8s_node;  // Kubernetes Node name, if known
  std::string sku;                      // detected or forced SKU, "unknown" if none matched
  std::optional<std::string> job_id;    // Slurm job id
  std::string run_id;                   // unique per run; (node, run_id) identifies a report
  std::string start_time;               // RFC 3339 UTC
  std::string end_time;                 // RFC 3339 UTC
  std::vector<CheckResult> checks;

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
// A POST body may hold one report or an array of reports.
Parsed<std::vector<NodeReport>> parse_node_reports(std::string_view text);

// Short name of a check used in Slurm reasons, e.g. "nccl_allreduce_ib" -> "nccl-ib".
std::string check_short_name(std::string_view check);

// Slurm drain reason for a failing result: "vigil: <short> <figures>", e.g.
// "vigil: nccl-ib busbw 151<180GB/s", "vigil: remap gpu3 pending 1>0count".
// Sanitized (printable ASCII, no newlines), at most max_len characters.
std::string slurm_reason(const CheckResult& r, size_t max_len = 200);

inline constexpr std::string_view kReasonPrefix = "vigil:";

// RFC 3339 UTC timestamp with second precision, e.g. "2026-11-21T10:00:00Z".
std::string rfc3339_utc(std::int64_t unix_seconds);
std::optional<std::int64_t> parse_rfc3339(std::string_view s);

}  // namespace vigil
