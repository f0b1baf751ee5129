#include "vigil/ncclbench/bench_result.h"

#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

namespace vigil::ncclbench {
namespace {

template <typename T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json point_json(const BenchPoint& p) {
  nlohmann::json j;
  j["time_us"] = p.time_us;
  j["algbw_gb_s"] = p.algbw_gb_s;
  j["busbw_gb_s"] = p.busbw_gb_s;
  put_optional(j, "wrong", p.wrong);
  if (p.max_error) j["max_error"] = *p.max_error;
  if (p.time_us_min) j["time_us_min"] = *p.time_us_min;
  if (p.time_us_avg) j["time_us_avg"] = *p.time_us_avg;
  return j;
}

// Typed readers that name the field on error.
struct Reader {
  const nlohmann::json& j;
  std::string path;
  std::string err;

  template <typename T>
  std::optional<T> opt(const char* key) {
    if (!err.empty() || !j.contains(key) || j.at(key).is_null()) return std::nullopt;
    try {
      return j.at(key).get<T>();
    } catch (const nlohmann::json::exception& e) {
      err = path + "/" + key + ": " + e.what();
      return std::nullopt;
    }
  }
  template <typename T>
  T req(const char* key) {
    if (!err.empty()) return T{};
    if (!j.contains(key)) {
      err = path + "/" + key + ": missing";
      return T{};
    }
    auto v = opt<T>(key);
    return v ? *v : T{};
  }
  // True when a field was bad; its message then goes to `out`.
  bool failed(std::string& out) const {
    if (err.empty()) return false;
    out = err;
    return true;
  }
};

// False, with `err` set, when the value at `path` is not a JSON object.
bool is_object_at(const nlohmann::json& j, const std::string& path, std::string& err) {
  if (j.is_object()) return true;
  err = path + ": not an object";
  return false;
}

// Each section reader returns nullopt with `err` set, naming the field, on the first bad value.
std::optional<BenchPoint> point_from_json(const nlohmann::json& j, const std::string& path,
                                          std::string& err) {
  if (!is_object_at(j, path, err)) return std::nullopt;
  Reader r{j, path, {}};
  BenchPoint p;
  p.time_us = r.req<double>("time_us");
  p.algbw_gb_s = r.req<double>("algbw_gb_s");
  p.busbw_gb_s = r.req<double>("busbw_gb_s");
  p.wrong = r.opt<std::int64_t>("wrong");
  p.max_error = r.opt<double>("max_error");
  p.time_us_min = r.opt<double>("time_us_min");
  p.time_us_avg = r.opt<double>("time_us_avg");
  if (r.failed(err)) return std::nullopt;
  return p;
}

std::optional<AlgoChoice> algo_from_json(const nlohmann::json& j, const std::string& path,
                                         std::string& err) {
  if (!is_object_at(j, path, err)) return std::nullopt;
  Reader r{j, path, {}};
  AlgoChoice c;
  c.size_bytes = r.req<std::uint64_t>("size_bytes");
  c.algorithm = r.req<std::string>("algorithm");
  c.protocol = r.req<std::string>("protocol");
  if (r.failed(err)) return std::nullopt;
  return c;
}

std::optional<TransportUse> transport_from_json(const nlohmann::json& j, const std::string& path,
                                                std::string& err) {
  if (!is_object_at(j, path, err)) return std::nullopt;
  Reader r{j, path, {}};
  TransportUse t;
  t.network = r.req<std::string>("network");
  t.paths = r.req<std::vector<std::string>>("paths");
  t.net_connections = r.req<int>("net_connections");
  t.gdr_connections = r.req<int>("gdr_connections");
  t.nvls = r.req<bool>("nvls");
  if (r.failed(err)) return std::nullopt;
  return t;
}

std::optional<BenchRow> row_from_json(const nlohmann::json& j, const std::string& path,
                                      std::string& err) {
  if (!is_object_at(j, path, err)) return std::nullopt;
  Reader r{j, path, {}};
  BenchRow row;
  row.size_bytes = r.req<std::uint64_t>("size_bytes");
  row.count = r.req<std::uint64_t>("count");
  row.type = r.opt<std::string>("type").value_or("");
  row.redop = r.opt<std::string>("redop").value_or("");
  row.root = r.opt<int>("root");
  if (r.failed(err)) return std::nullopt;
  for (const char* key : {"out_of_place", "in_place"}) {
    if (!j.contains(key)) {
      err = path + "/" + key + ": missing";
      return std::nullopt;
    }
    auto p = point_from_json(j.at(key), path + "/" + key, err);
    if (!p) return std::nullopt;
    (std::string_view(key) == "in_place" ? row.in_place : row.out_of_place) = *p;
  }
  return row;
}

}  // namespace

int exit_code_for(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return kExitOk;
    case Outcome::kWrongResults:
      return kExitWrongResults;
    case Outcome::kBelowMinBusbw:
      return kExitBelowMinBusbw;
    case Outcome::kSetupError:
      return kExitSetupError;
    case Outcome::kRuntimeError:
      return kExitRuntimeError;
    case Outcome::kTimeout:
      return kExitTimeout;
  }
  return kExitRuntimeError;
}

double allreduce_busbw_factor(int nranks) {
  if (nranks <= 0) return 0;
  return 2.0 * (nranks - 1) / nranks;
}

double algbw_gb_s(std::uint64_t bytes, double seconds) {
  if (seconds <= 0) return 0;
  return static_cast<double>(bytes) / 1e9 / seconds;
}

double BenchRun::mean_busbw() const {
  if (rows.empty()) return 0;
  double sum = 0;
  for (const auto& r : rows) sum += r.out_of_place.busbw_gb_s + r.in_place.busbw_gb_s;
  return sum / (2.0 * static_cast<double>(rows.size()));
}

double BenchRun::summary_busbw() const { return avg_busbw_gb_s ? *avg_busbw_gb_s : mean_busbw(); }

std::int64_t BenchRun::total_wrong() const {
  // Saturating: the counts come from a log (nccl-tests' #wrong column), which may hold anything
  // a 64-bit number can (found by fuzz_nccl_tests, 2026-12-02).
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t n = 0;
  for (const auto& r : rows)
    for (const std::int64_t w : {r.out_of_place.wrong.value_or(0), r.in_place.wrong.value_or(0)})
      if (__builtin_add_overflow(n, w, &n))
        n = w > 0 ? kMax : std::numeric_limits<std::int64_t>::min();
  return n;
}

nlohmann::json to_json(const BenchRun& run) {
  nlohmann::json j;
  j["schema_version"] = run.schema_version;
  j["tool"] = run.tool;
  j["tool_version"] = run.tool_version;
  j["collective"] = run.collective;
  j["result"] = std::string(to_string(run.outcome));
  j["message"] = run.message;
  j["backend"] = run.backend;
  j["transport"] = run.transport;
  put_optional(j, "ranks", run.ranks);
  put_optional(j, "nodes", run.nodes);
  j["hostnames"] = run.hostnames;
  j["nccl_version"] = run.nccl_version;
  j["mpi_version"] = run.mpi_version;
  j["nccl_env"] = run.nccl_env;
  if (!run.nccl_env_removed.empty()) j["nccl_env_removed"] = run.nccl_env_removed;
  if (!run.nccl_conf_tuning.empty()) j["nccl_conf_tuning"] = run.nccl_conf_tuning;
  if (!run.nccl_algorithms.empty()) {
    nlohmann::json algos = nlohmann::json::array();
    for (const AlgoChoice& c : run.nccl_algorithms)
      algos.push_back(
          {{"size_bytes", c.size_bytes}, {"algorithm", c.algorithm}, {"protocol", c.protocol}});
    j["nccl_algorithms"] = std::move(algos);
  }
  if (run.nccl_transport) {
    const TransportUse& t = *run.nccl_transport;
    j["nccl_transport"] = {{"network", t.network},
                           {"paths", t.paths},
                           {"net_connections", t.net_connections},
                           {"gdr_connections", t.gdr_connections},
                           {"nvls", t.nvls}};
  }
  put_optional(j, "warmup_iters", run.warmup_iters);
  put_optional(j, "iters", run.iters);
  put_optional(j, "check", run.check);
  put_optional(j, "min_busbw_gb_s", run.min_busbw_gb_s);
  put_optional(j, "timeout_s", run.timeout_s);
  j["timing"] = "slowest_rank";  // time_us/algbw/busbw use the max time over ranks
  j["start_time"] = run.start_time;
  put_optional(j, "duration_s", run.duration_s);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : run.rows) {
    nlohmann::json row;
    row["size_bytes"] = r.size_bytes;
    row["count"] = r.count;
    row["type"] = r.type;
    row["redop"] = r.redop;
    put_optional(row, "root", r.root);
    row["out_of_place"] = point_json(r.out_of_place);
    row["in_place"] = point_json(r.in_place);
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  put_optional(j, "out_of_bounds", run.out_of_bounds);
  put_optional(j, "out_of_bounds_ok", run.out_of_bounds_ok);
  put_optional(j, "avg_busbw_gb_s", run.avg_busbw_gb_s);
  return j;
}

Result<BenchRun> bench_run_from_json(const nlohmann::json& j) {
  auto fail = [](std::string msg) -> Result<BenchRun> {
    return Error{std::move(msg), "bench_run_from_json"};
  };
  if (!j.is_object()) return fail("top level: not a JSON object");
  Reader r{j, "", {}};
  BenchRun run;
  run.schema_version = r.req<int>("schema_version");
  if (r.err.empty() && run.schema_version != kBenchJsonSchemaVersion)
    return fail("/schema_version: " + std::to_string(run.schema_version) + " not supported (want " +
                std::to_string(kBenchJsonSchemaVersion) + ")");
  run.tool = r.opt<std::string>("tool").value_or("");
  run.tool_version = r.opt<std::string>("tool_version").value_or("");
  run.collective = r.opt<std::string>("collective").value_or("");
  auto result = r.req<std::string>("result");
  if (r.err.empty()) {
    auto o = value_of(kOutcomeNames, result);
    if (!o) return fail("/result: unknown value \"" + result + "\"");
    run.outcome = *o;
  }
  run.message = r.opt<std::string>("message").value_or("");
  run.backend = r.opt<std::string>("backend").value_or("");
  run.transport = r.opt<std::string>("transport").value_or("");
  run.ranks = r.opt<int>("ranks");
  run.nodes = r.opt<int>("nodes");
  run.hostnames = r.opt<std::vector<std::string>>("hostnames").value_or(std::vector<std::string>{});
  run.nccl_version = r.opt<std::string>("nccl_version").value_or("");
  run.mpi_version = r.opt<std::string>("mpi_version").value_or("");
  run.nccl_env = r.opt<std::map<std::string, std::string>>("nccl_env")
                     .value_or(std::map<std::string, std::string>{});
  run.nccl_env_removed =
      r.opt<std::vector<std::string>>("nccl_env_removed").value_or(std::vector<std::string>{});
  run.nccl_conf_tuning =
      r.opt<std::vector<std::string>>("nccl_conf_tuning").value_or(std::vector<std::string>{});
  run.warmup_iters = r.opt<int>("warmup_iters");
  run.iters = r.opt<int>("iters");
  run.check = r.opt<bool>("check");
  run.min_busbw_gb_s = r.opt<double>("min_busbw_gb_s");
  run.timeout_s = r.opt<double>("timeout_s");
  run.start_time = r.opt<std::string>("start_time").value_or("");
  run.duration_s = r.opt<double>("duration_s");
  run.out_of_bounds = r.opt<std::int64_t>("out_of_bounds");
  run.out_of_bounds_ok = r.opt<bool>("out_of_bounds_ok");
  run.avg_busbw_gb_s = r.opt<double>("avg_busbw_gb_s");
  if (!r.err.empty()) return fail(r.err);
  if (!j.contains("rows") || !j.at("rows").is_array())
    return fail("/rows: missing or not an array");
  std::string err;
  if (j.contains("nccl_algorithms")) {
    const auto& algos = j.at("nccl_algorithms");
    if (!algos.is_array()) return fail("/nccl_algorithms: not an array");
    for (std::size_t i = 0; i < algos.size(); ++i) {
      auto c = algo_from_json(algos[i], "/nccl_algorithms/" + std::to_string(i), err);
      if (!c) return fail(err);
      run.nccl_algorithms.push_back(std::move(*c));
    }
  }
  if (j.contains("nccl_transport")) {
    auto t = transport_from_json(j.at("nccl_transport"), "/nccl_transport", err);
    if (!t) return fail(err);
    run.nccl_transport = std::move(*t);
  }
  const auto& rows = j.at("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto row = row_from_json(rows[i], "/rows/" + std::to_string(i), err);
    if (!row) return fail(err);
    run.rows.push_back(std::move(*row));
  }
  return run;
}

Result<BenchRun> parse_bench_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{"not valid JSON", "parse_bench_json"};
  return bench_run_from_json(j);
}

}  // namespace vigil::ncclbench
