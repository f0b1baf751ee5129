#pragma once
// The data model shared by vigil-allreduce's output, its JSON file, and the text parser that
// also reads genuine nccl-tests `*_perf` output. Method as nccl-tests (anchors.md section 2):
// algbw = bytes / 1e9 / seconds, all_reduce busbw = algbw * 2(n-1)/n.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"

namespace vigil::ncclbench {

inline constexpr int kBenchJsonSchemaVersion = 1;

// Exit codes of vigil-allreduce (documented in docs/nccl-bench.md). mpirun passes them on.
inline constexpr int kExitOk = 0;
inline constexpr int kExitWrongResults = 1;   // data check found wrong values (#wrong > 0)
inline constexpr int kExitBelowMinBusbw = 2;  // summary busbw < --min-busbw
inline constexpr int kExitSetupError = 3;     // bad options, no GPU, NCCL init failure, OOM
inline constexpr int kExitRuntimeError = 4;   // a collective or MPI/CUDA call failed mid-run
inline constexpr int kExitTimeout = 5;        // --timeout watchdog fired (hung collective)

// How a run ended; "result" in the JSON.
enum class Outcome { kOk, kWrongResults, kBelowMinBusbw, kSetupError, kRuntimeError, kTimeout };
inline constexpr EnumName<Outcome> kOutcomeNames[] = {{Outcome::kOk, "ok"},
                                                      {Outcome::kWrongResults, "wrong_results"},
                                                      {Outcome::kBelowMinBusbw, "below_min_busbw"},
                                                      {Outcome::kSetupError, "setup_error"},
                                                      {Outcome::kRuntimeError, "runtime_error"},
                                                      {Outcome::kTimeout, "timeout"}};
inline std::string_view to_string(Outcome o) { return name_of(kOutcomeNames, o, "unknown"); }
int exit_code_for(Outcome o);

// busbw factor per collective (nccl-tests PERFORMANCE.md).
double allreduce_busbw_factor(int nranks);  // 2(n-1)/n; 1 rank: 0 -> we report algbw*0 = 0
double algbw_gb_s(std::uint64_t bytes, double seconds);

// One timing of one size in one placement (out-of-place or in-place).
struct BenchPoint {
  double time_us = 0;     // per operation; the slowest rank's time for our own runs
  double algbw_gb_s = 0;  // GB/s, 1e9 bytes
  double busbw_gb_s = 0;
  std::optional<std::int64_t> wrong;  // #wrong; empty: not checked (-c 0, "N/A") or old format
  std::optional<double> max_error;    // old nccl-tests format "error" column (e.g. 2e-07)
  // Spread across ranks (our runs only; empty when parsed from text).
  std::optional<double> time_us_min;
  std::optional<double> time_us_avg;
  bool operator==(const BenchPoint&) const = default;
};

struct BenchRow {
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;  // elements
  std::string type;         // "float", "bfloat16", ...
  std::string redop;        // "sum"; empty when the format has no redop column (all_gather)
  std::optional<int> root;  // -1 for rootless collectives in the 2.x format
  BenchPoint out_of_place;
  BenchPoint in_place;
  bool operator==(const BenchRow&) const = default;
};

// What NCCL chose for one message size: the algorithm (NCCL's ncclAlgoStr: Tree, Ring,
// CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT) and the protocol (LL, LL128, Simple).
struct AlgoChoice {
  std::uint64_t size_bytes = 0;
  std::string algorithm;
  std::string protocol;
  bool operator==(const AlgoChoice&) const = default;
};

// The transports NCCL connected this rank's channels over, from its own INIT/NET log
// (options.h parse_transport_log): what proves an IB test crossed the HCA with GPUDirect RDMA.
struct TransportUse {
  std::string network;             // "Using network X": "IB", "Socket", "IBext_v8", ...; "" unknown
  std::vector<std::string> paths;  // distinct, as first seen: "P2P/CUMEM", "SHM", "NET/IB", ...
  int net_connections = 0;         // "via NET/..." connections
  int gdr_connections = 0;         // ... of them with GPUDirect RDMA ("/GDRDMA")
  bool nvls = false;               // NVLink SHARP set up ("NVLS multicast support is available")
  bool empty() const { return network.empty() && paths.empty() && !nvls; }
  bool operator==(const TransportUse&) const = default;
};

// A whole run: metadata, rows, footer. Fields a text log does not carry stay empty.
struct BenchRun {
  int schema_version = kBenchJsonSchemaVersion;
  std::string tool;          // "vigil-allreduce" or "nccl-tests"
  std::string tool_version;  // ours, or "2.18.2" from a nccl-tests header
  std::string collective;    // "all_reduce" (from our header or the "Collective test" line)
  Outcome outcome = Outcome::kOk;
  std::string message;    // human summary, e.g. "timeout after 30 s"
  std::string backend;    // "nccl" | "host"
  std::string transport;  // "nvlink" | "ib"
  std::optional<int> ranks;
  std::optional<int> nodes;
  std::vector<std::string> hostnames;  // per rank
  std::string nccl_version;            // "2.28.9"; empty for the host backend / unknown
  std::string mpi_version;
  std::map<std::string, std::string> nccl_env;  // NCCL_* variables seen at init
  // Inherited tuning settings vigil-allreduce removed ("NCCL_ALGO=Ring"), and those a NCCL
  // configuration file still applies ("NCCL_ALGO=Ring (/etc/nccl.conf)"): options.h.
  std::vector<std::string> nccl_env_removed;
  std::vector<std::string> nccl_conf_tuning;
  // What NCCL chose per size, from its TUNING log (options.h parse_tuning_log); empty when not
  // known (host backend, a nccl-tests log, or a job that set NCCL_DEBUG itself).
  std::vector<AlgoChoice> nccl_algorithms;
  // What rank 0's channels connected over (its log); unset when not known, as nccl_algorithms.
  std::optional<TransportUse> nccl_transport;
  std::optional<int> warmup_iters;
  std::optional<int> iters;
  std::optional<bool> check;
  std::optional<double> min_busbw_gb_s;  // --min-busbw
  std::optional<double> timeout_s;       // --timeout (0 = off)
  std::string start_time;                // RFC 3339 UTC
  std::optional<double> duration_s;
  std::vector<BenchRow> rows;
  std::optional<std::int64_t> out_of_bounds;  // footer "# Out of bounds values : N OK|FAILED"
  std::optional<bool> out_of_bounds_ok;
  std::optional<double> avg_busbw_gb_s;  // footer "# Avg bus bandwidth : X"

  // Mean busbw over every row, out-of-place and in-place (what nccl-tests prints as
  // "Avg bus bandwidth"); 0 with no rows.
  double mean_busbw() const;
  // The figure Vigil compares with thresholds: the footer value when present, else mean_busbw().
  double summary_busbw() const;
  // Sum of #wrong over rows (0 when nothing was checked).
  std::int64_t total_wrong() const;
};

nlohmann::json to_json(const BenchRun& run);
Result<BenchRun> bench_run_from_json(const nlohmann::json& j);
Result<BenchRun> parse_bench_json(std::string_view text);

}  // namespace vigil::ncclbench
