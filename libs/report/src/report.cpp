#include "vigil/report/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "vigil/base/slurm_names.h"
#include "vigil/base/strings.h"
#include "vigil/report/json_keys.h"

namespace vigil {

using nlohmann::json;

Status Measurement::status() const {
  return threshold ? threshold->evaluate(value) : Status::kPass;
}

bool is_part_identifier(std::string_view s) {
  return !s.empty() && s.size() <= 96 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

Status NodeReport::overall() const {
  if (checks.empty()) return Status::kError;  // a run that checked nothing proves nothing
  Status s = checks.front().status;
  for (const auto& c : checks) s = combine(s, c.status);
  return s;
}

// ---------------------------------------------------------------- serialisation

static json threshold_json(const Threshold& t) {
  json j = {{"op", std::string(to_string(t.op))}, {"fail", t.fail}, {"unit", t.unit}};
  if (t.warn) j["warn"] = *t.warn;
  if (t.unconfirmed) j["unconfirmed"] = true;
  return j;
}

json to_json(const Measurement& m) {
  json j = {{"name", m.name}, {"value", m.value}, {"unit", m.unit}};
  if (m.gpu) j["gpu"] = *m.gpu;
  if (m.port) j["port"] = *m.port;
  if (m.threshold) j["threshold"] = threshold_json(*m.threshold);
  if (!m.repeats.empty()) j["repeats"] = m.repeats;
  return j;
}

json to_json(const CheckResult& r) {
  json ms = json::array();
  for (const auto& m : r.measurements) ms.push_back(to_json(m));
  json j = {{"check", r.check},           {"status", std::string(to_string(r.status))},
            {"measurements", ms},         {"message", r.message},
            {"fault_code", r.fault_code}, {"duration_s", r.duration_s}};
  if (!r.short_name.empty()) j["short_name"] = r.short_name;
  if (r.remedy) j["remedy"] = std::string(to_string(*r.remedy));
  if (r.evidence) j["evidence"] = *r.evidence;
  return j;
}

json to_json(const NodeReport& r) {
  json checks = json::array();
  for (const auto& c : r.checks) checks.push_back(to_json(c));
  json j = {{"schema_version", r.schema_version},
            {"node", r.node},
            {"sku", r.sku},
            {"run_id", r.run_id},
            {"start_time", r.start_time},
            {"end_time", r.end_time},
            {"checks", checks}};
  if (r.k8s_node) j["k8s_node"] = *r.k8s_node;
  if (r.job_id) j["job_id"] = *r.job_id;
  if (r.context) j["context"] = *r.context;
  if (r.suite) j["suite"] = *r.suite;
  if (!r.gpus.empty()) {
    json gpus = json::array();
    for (const auto& g : r.gpus) {
      json e = {{"index", g.index}};
      if (!g.serial.empty()) e["serial"] = g.serial;
      if (!g.uuid.empty()) e["uuid"] = g.uuid;
      if (!g.vbios.empty()) e["vbios"] = g.vbios;
      gpus.push_back(std::move(e));
    }
    j["gpus"] = std::move(gpus);
  }
  if (!r.driver.empty()) j["driver"] = r.driver;
  if (!r.nics.empty()) {
    json nics = json::array();
    for (const auto& n : r.nics) {
      json e = {{"device", n.device}};
      if (!n.firmware.empty()) e["firmware"] = n.firmware;
      if (!n.board_id.empty()) e["board_id"] = n.board_id;
      nics.push_back(std::move(e));
    }
    j["nics"] = std::move(nics);
  }
  return j;
}

// ---------------------------------------------------------------- strict parsing

namespace {

// Thrown only inside this file and caught at the parse_* boundary; carries the JSON pointer.
struct FieldError {
  std::string path;
  std::string what;
};

[[noreturn]] void fail_at(const std::string& path, const std::string& what) {
  throw FieldError{path.empty() ? "/" : path, what};
}

void only_keys(const json& j, const std::string& path, const std::set<std::string>& allowed) {
  if (!j.is_object()) fail_at(path, "must be an object");
  if (const auto stray = unknown_keys(j, allowed); !stray.empty())
    fail_at(path + "/" + stray.front(), "unknown field");
}

// A pointer, not a reference: GCC 14's -Wdangling-reference takes a reference returned next to a
// temporary std::string argument ("measurements") for one into that temporary.
const json* need(const json& j, const std::string& path, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end()) fail_at(path + "/" + key, "missing required field");
  return &*it;
}

std::string need_string(const json& j, const std::string& path, const std::string& key,
                        bool allow_empty = false) {
  const json& v = *need(j, path, key);
  if (!v.is_string()) fail_at(path + "/" + key, "must be a string");
  std::string s = v.get<std::string>();
  if (!allow_empty && s.empty()) fail_at(path + "/" + key, "must not be empty");
  return s;
}

std::optional<std::string> opt_string(const json& j, const std::string& path,
                                      const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail_at(path + "/" + key, "must be a string");
  return it->get<std::string>();
}

double need_number(const json& j, const std::string& path, const std::string& key) {
  const json& v = *need(j, path, key);
  // nlohmann parses NaN/Infinity literals as errors, but a caller may build json in code.
  if (!v.is_number()) fail_at(path + "/" + key, "must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d)) fail_at(path + "/" + key, "must be finite (no NaN or infinity)");
  return d;
}

bool name_chars_ok(std::string_view s, const char* extra) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    for (const char* e = extra; !ok && *e; ++e) ok = (c == *e);
    if (!ok) return false;
  }
  return true;
}

Threshold parse_threshold(const json& j, const std::string& path, const std::string& unit) {
  only_keys(j, path, {"op", "fail", "warn", "unit", "unconfirmed"});
  Threshold t;
  auto op = value_of(kOpNames, need_string(j, path, "op"));
  if (!op) fail_at(path + "/op", "must be \">=\" or \"<=\"");
  t.op = *op;
  t.fail = need_number(j, path, "fail");
  if (j.contains("warn")) t.warn = need_number(j, path, "warn");
  t.unit = need_string(j, path, "unit");
  if (auto it = j.find("unconfirmed"); it != j.end()) {
    if (!it->is_boolean()) fail_at(path + "/unconfirmed", "must be true or false");
    t.unconfirmed = it->get<bool>();
  }
  if (t.unit != unit)
    fail_at(path + "/unit", "'" + t.unit + "' differs from the measurement unit '" + unit + "'");
  if (std::string why = t.validate(); !why.empty()) fail_at(path, why);
  return t;
}

Measurement parse_measurement(const json& j, const std::string& path) {
  only_keys(j, path, {"name", "value", "unit", "gpu", "port", "threshold", "repeats"});
  Measurement m;
  m.name = need_string(j, path, "name");
  if (!name_chars_ok(m.name, "_")) fail_at(path + "/name", "must be snake_case [A-Za-z0-9_]");
  m.unit = need_string(j, path, "unit");
  if (!is_known_unit(m.unit)) fail_at(path + "/unit", "unknown unit '" + m.unit + "'");
  m.value = need_number(j, path, "value");
  if (is_non_negative_unit(m.unit) && m.value < 0) {
    fail_at(path + "/value", "must not be negative for unit " + m.unit);
  }
  if (auto it = j.find("gpu"); it != j.end()) {
    if (!it->is_number_integer() || it->get<long long>() < 0 || it->get<long long>() > 1024) {
      fail_at(path + "/gpu", "must be a GPU index (integer >= 0)");
    }
    m.gpu = it->get<int>();
  }
  m.port = opt_string(j, path, "port");
  if (auto it = j.find("threshold"); it != j.end() && !it->is_null()) {
    m.threshold = parse_threshold(*it, path + "/threshold", m.unit);
  }
  if (auto it = j.find("repeats"); it != j.end()) {
    if (!it->is_array() || it->size() > kMaxRepeats)
      fail_at(path + "/repeats",
              "must be an array of at most " + std::to_string(kMaxRepeats) + " numbers");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string at = path + "/repeats/" + std::to_string(i);
      const json& v = (*it)[i];
      if (!v.is_number() || !std::isfinite(v.get<double>())) fail_at(at, "must be a finite number");
      if (is_non_negative_unit(m.unit) && v.get<double>() < 0)
        fail_at(at, "must not be negative for unit " + m.unit);
      m.repeats.push_back(v.get<double>());
    }
  }
  return m;
}

CheckResult parse_check(const json& j, const std::string& path) {
  only_keys(j, path,
            {"check", "short_name", "status", "measurements", "message", "fault_code", "remedy",
             "evidence", "duration_s"});
  CheckResult r;
  r.check = need_string(j, path, "check");
  if (!name_chars_ok(r.check, "_")) fail_at(path + "/check", "must be snake_case [A-Za-z0-9_]");
  if (auto sn = opt_string(j, path, "short_name")) {
    if (sn->empty() || sn->size() > 16 || !name_chars_ok(*sn, "-_"))
      fail_at(path + "/short_name", "must be 1-16 characters [A-Za-z0-9_-]");
    r.short_name = *sn;
  }
  auto st = value_of(kStatusNames, need_string(j, path, "status"));
  if (!st) fail_at(path + "/status", "must be one of pass, warn, fail, error, skipped");
  r.status = *st;
  const json& ms = *need(j, path, "measurements");
  if (!ms.is_array()) fail_at(path + "/measurements", "must be an array");
  for (size_t i = 0; i < ms.size(); ++i) {
    r.measurements.push_back(parse_measurement(ms[i], path + "/measurements/" + std::to_string(i)));
  }
  r.message = need_string(j, path, "message", /*allow_empty=*/true);
  r.fault_code = opt_string(j, path, "fault_code").value_or("");
  if (auto ev = opt_string(j, path, "evidence")) {
    if (!is_evidence_path(*ev))
      fail_at(path + "/evidence", "must be an absolute path of 1 to 4096 printable characters");
    r.evidence = *ev;
  }
  if (auto rem = opt_string(j, path, "remedy")) {
    r.remedy = value_of(kRemedyNames, *rem);
    if (!r.remedy) fail_at(path + "/remedy", "must be one of reset_gpu, reboot, service");
  }
  if (j.contains("duration_s")) {
    r.duration_s = need_number(j, path, "duration_s");
    if (r.duration_s < 0) fail_at(path + "/duration_s", "must not be negative");
  }
  return r;
}

// "gpus": [{"index": 0, "serial": "1654922012345", "uuid": "GPU-...", "vbios": "96.00.89.00.01"}]:
// indices distinct and 0..1023; a serial, UUID or VBIOS version, when present, is_part_identifier.
void read_identifier(const json& e, const std::string& at, const char* key, std::string& field) {
  if (auto v = opt_string(e, at, key)) {
    if (!is_part_identifier(*v))
      fail_at(at + "/" + key, "must be 1..96 printable characters without blanks");
    field = *v;
  }
}

std::vector<GpuPart> parse_gpus(const json& g, const std::string& path) {
  if (!g.is_array()) fail_at(path, "must be an array");
  std::vector<GpuPart> out;
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string at = path + "/" + std::to_string(i);
    const json& e = g[i];
    if (!e.is_object()) fail_at(at, "must be an object");
    only_keys(e, at, {"index", "serial", "uuid", "vbios"});
    const json& idx = *need(e, at, "index");
    if (!idx.is_number_integer() || idx.get<long long>() < 0 || idx.get<long long>() > 1023)
      fail_at(at + "/index", "must be an integer 0..1023");
    GpuPart p;
    p.index = idx.get<int>();
    for (auto [key, field] :
         {std::pair{"serial", &p.serial}, std::pair{"uuid", &p.uuid}, std::pair{"vbios", &p.vbios}})
      read_identifier(e, at, key, *field);
    for (const auto& seen : out)
      if (seen.index == p.index) fail_at(at + "/index", "duplicate GPU index");
    out.push_back(std::move(p));
  }
  return out;
}

// "nics": [{"device": "mlx5_0", "firmware": "28.41.1000", "board_id": "MT_0000000838"}]: devices
// distinct; each field, when present, is_part_identifier.
std::vector<NicPart> parse_nics(const json& n, const std::string& path) {
  if (!n.is_array()) fail_at(path, "must be an array");
  std::vector<NicPart> out;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string at = path + "/" + std::to_string(i);
    const json& e = n[i];
    if (!e.is_object()) fail_at(at, "must be an object");
    only_keys(e, at, {"device", "firmware", "board_id"});
    NicPart p;
    read_identifier(e, at, "device", p.device);
    if (p.device.empty()) fail_at(at + "/device", "required");
    read_identifier(e, at, "firmware", p.firmware);
    read_identifier(e, at, "board_id", p.board_id);
    for (const auto& seen : out)
      if (seen.device == p.device) fail_at(at + "/device", "duplicate device");
    out.push_back(std::move(p));
  }
  return out;
}

NodeReport parse_report(const json& j, const std::string& path) {
  only_keys(j, path,
            {"schema_version", "node", "k8s_node", "sku", "job_id", "context", "suite", "run_id",
             "start_time", "end_time", "checks", "gpus", "driver", "nics"});
  NodeReport r;
  const json& v = *need(j, path, "schema_version");
  if (!v.is_number_integer()) fail_at(path + "/schema_version", "must be an integer");
  if (v.get<long long>() != kNodeReportSchemaVersion) {
    fail_at(path + "/schema_version", "unsupported version " + v.dump() + " (this build reads " +
                                          std::to_string(kNodeReportSchemaVersion) + ")");
  }
  r.node = need_string(j, path, "node");
  if (auto why = node_name_problem(r.node)) fail_at(path + "/node", *why);
  r.k8s_node = opt_string(j, path, "k8s_node");
  if (r.k8s_node && !name_chars_ok(*r.k8s_node, "._-"))
    fail_at(path + "/k8s_node", "not a valid node name");
  r.sku = need_string(j, path, "sku");
  r.job_id = opt_string(j, path, "job_id");
  r.context = opt_string(j, path, "context");
  if (r.context && !is_known_context(*r.context))
    fail_at(path + "/context",
            "unknown context '" + *r.context + "' (known: job, prolog, epilog, healthcheck)");
  r.suite = opt_string(j, path, "suite");
  if (r.suite && !is_known_suite(*r.suite))
    fail_at(path + "/suite", "unknown suite '" + *r.suite + "' (known: quick, full, qualify)");
  r.run_id = need_string(j, path, "run_id");
  if (!name_chars_ok(r.run_id, "._:-")) fail_at(path + "/run_id", "must match [A-Za-z0-9._:-]+");
  r.start_time = need_string(j, path, "start_time");
  r.end_time = need_string(j, path, "end_time");
  auto t0 = parse_rfc3339(r.start_time);
  if (!t0) fail_at(path + "/start_time", "not an RFC 3339 time");
  auto t1 = parse_rfc3339(r.end_time);
  if (!t1) fail_at(path + "/end_time", "not an RFC 3339 time");
  if (*t1 < *t0) fail_at(path + "/end_time", "is before start_time");
  const json& cs = *need(j, path, "checks");
  if (!cs.is_array()) fail_at(path + "/checks", "must be an array");
  for (size_t i = 0; i < cs.size(); ++i) {
    const std::string at = path + "/checks/" + std::to_string(i);
    r.checks.push_back(parse_check(cs[i], at));
    // One result per check: the drainer keeps per-check state and metric series.
    for (size_t k = 0; k + 1 < r.checks.size(); ++k) {
      if (r.checks[k].check == r.checks.back().check)
        fail_at(at + "/check", "duplicate check '" + r.checks.back().check + "' (also at " + path +
                                   "/checks/" + std::to_string(k) + ")");
    }
  }
  if (auto g = j.find("gpus"); g != j.end()) r.gpus = parse_gpus(*g, path + "/gpus");
  read_identifier(j, path, "driver", r.driver);
  if (auto n = j.find("nics"); n != j.end()) r.nics = parse_nics(*n, path + "/nics");
  return r;
}

std::string describe(const FieldError& e) { return e.path + ": " + e.what; }

}  // namespace

Parsed<NodeReport> parse_node_report(const json& j) {
  Parsed<NodeReport> out;
  try {
    out.value = parse_report(j, "");
  } catch (const FieldError& e) {
    out.error = describe(e);
  }
  return out;
}

Parsed<CheckResult> parse_check_result(const json& j) {
  Parsed<CheckResult> out;
  try {
    out.value = parse_check(j, "");
  } catch (const FieldError& e) {
    out.error = describe(e);
  }
  return out;
}

Parsed<NodeReport> parse_node_report(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return {std::nullopt, "/: not valid JSON"};
  return parse_node_report(j);
}

std::optional<std::string> node_name_problem(std::string_view name) {
  if (!name_chars_ok(name, "._-"))
    return "not a valid node name (1-253 characters of [A-Za-z0-9._-]; one node, no hostlist)";
  return slurm_name_problem(name);
}

Parsed<std::vector<NodeReport>> parse_node_reports(std::string_view text,
                                                   std::vector<nlohmann::json>* validated) {
  Parsed<std::vector<NodeReport>> out;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    out.error = "/: not valid JSON";
    return out;
  }
  try {
    std::vector<NodeReport> reports;
    if (j.is_array()) {
      if (j.empty()) fail_at("/", "empty batch");
      for (size_t i = 0; i < j.size(); ++i)
        reports.push_back(parse_report(j[i], "/" + std::to_string(i)));
    } else {
      reports.push_back(parse_report(j, ""));
    }
    if (validated) {
      validated->clear();
      if (j.is_array())
        for (auto& each : j) validated->push_back(std::move(each));
      else
        validated->push_back(std::move(j));
    }
    out.value = std::move(reports);
  } catch (const FieldError& e) {
    out.error = describe(e);
  }
  return out;
}

// ---------------------------------------------------------------- reasons

namespace {

// "gpu3 busbw 151<180GB/s": the value, the violated comparison and the bound.
std::string figure_of(const Measurement& m) {
  std::string out;
  if (m.gpu) out += "gpu" + std::to_string(*m.gpu) + " ";
  if (m.port) out += *m.port + " ";
  out += m.name + " " + format_figure(m.value, FigureStyle::kOneDecimal);
  const Threshold& t = *m.threshold;
  const bool below_floor = t.breaks_fail(m.value);
  double bound = below_floor ? t.fail : t.warn.value_or(t.fail);
  out += (t.op == Op::kGe ? "<" : ">") + format_figure(bound, FigureStyle::kOneDecimal);
  if (m.unit != "count" && m.unit != "bool") out += m.unit;
  if (below_floor && t.unconfirmed) out += " (unconfirmed floor)";
  return out;
}

}  // namespace

std::string measurement_figure(const Measurement& m) { return figure_of(m); }

std::string reason_detail(const CheckResult& r) {
  std::string detail;
  // The measurement that breaches its bound furthest decides the figures shown first.
  const Measurement* worst = nullptr;
  double worst_ratio = -1;
  for (const auto& m : r.measurements) {
    if (!m.threshold || m.status() != r.status || r.status == Status::kPass) continue;
    double bound = m.status() == Status::kFail ? m.threshold->fail
                                               : m.threshold->warn.value_or(m.threshold->fail);
    double ratio = std::fabs(m.value - bound) / (std::fabs(bound) + 1.0);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = &m;
    }
  }
  // Figures read best for continuous values ("busbw 151<180GB/s"); for counts and flags the
  // check's own message ("gpu5 nvlink4 down") says more than "nvlink_links_down 1>0".
  bool continuous = worst && worst->unit != "count" && worst->unit != "bool";
  if (worst && (continuous || r.message.empty())) {
    detail = figure_of(*worst);
  } else if (!r.message.empty()) {
    detail = r.message;
  } else {
    detail = std::string(to_string(r.status));
  }
  return detail;
}

bool is_known_context(std::string_view context) {
  return context == "job" || context == "prolog" || context == "epilog" || context == "healthcheck";
}

bool is_known_suite(std::string_view suite) {
  return suite == "quick" || suite == "full" || suite == "qualify";
}

bool suite_covers(std::string_view ran, std::string_view need) {
  auto rank = [](std::string_view s) {
    return s == "qualify" ? 3 : s == "full" ? 2 : s == "quick" ? 1 : 0;
  };
  return rank(need) > 0 && rank(ran) >= rank(need);
}

bool is_evidence_path(std::string_view s) {
  return !s.empty() && s.front() == '/' && s.size() <= 4096 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= 0x20 && c != 0x7f; });
}

}  // namespace vigil
