// vigil-drainer calibrate: the SKU file rewrite and the figures' JSON (calibrate.h).
#include "vigil/drainer/calibrate.h"

#include <optional>
#include <regex>
#include <sstream>

#include "vigil/base/strings.h"

namespace vigil::drainer {

namespace {

std::string kind_text(detect::UnitKind k) { return std::string(detect::to_string(k)); }

std::optional<detect::UnitKind> kind_of(const std::string& s) {
  for (auto k : {detect::UnitKind::kGpu, detect::UnitKind::kPort, detect::UnitKind::kNode})
    if (detect::to_string(k) == s) return k;
  return std::nullopt;
}

// The items of a YAML flow map body, `op: ">=", fail: 525, unit: GB/s`, split at commas outside
// quotes, as (key, raw value) pairs.
std::vector<std::pair<std::string, std::string>> flow_items(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string cur;
  bool quoted = false;
  auto flush = [&] {
    const auto colon = cur.find(':');
    if (colon != std::string::npos) {
      out.emplace_back(std::string(trim(cur.substr(0, colon), " ")),
                       std::string(trim(cur.substr(colon + 1), " ")));
    }
    cur.clear();
  };
  for (char c : body) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      flush();
      continue;
    }
    cur += c;
  }
  flush();
  return out;
}

std::string unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

nlohmann::json to_json(const detect::HealthyFigures& f) {
  return {{"check", f.check},   {"measurement", f.measurement},
          {"unit", f.unit},     {"kind", kind_text(f.kind)},
          {"nodes", f.nodes},   {"figures", f.runs},
          {"centre", f.centre}, {"spread", f.spread},
          {"lowest", f.lowest}};
}

Result<std::vector<detect::HealthyFigures>> healthy_figures_from_json(const nlohmann::json& j) {
  std::vector<detect::HealthyFigures> out;
  if (!j.is_object() || !j.contains("figures") || !j["figures"].is_array())
    return Error{"expected {\"figures\": [...]}", "calibration reply"};
  for (std::size_t i = 0; i < j["figures"].size(); ++i) {
    const auto& e = j["figures"][i];
    const std::string at = "/figures/" + std::to_string(i);
    try {
      detect::HealthyFigures f;
      f.check = e.at("check").get<std::string>();
      f.measurement = e.at("measurement").get<std::string>();
      f.unit = e.at("unit").get<std::string>();
      auto k = kind_of(e.at("kind").get<std::string>());
      if (!k) return Error{"unknown kind", at + "/kind"};
      f.kind = *k;
      f.nodes = e.at("nodes").get<std::size_t>();
      f.runs = e.at("figures").get<std::size_t>();
      f.centre = e.at("centre").get<double>();
      f.spread = e.at("spread").get<double>();
      f.lowest = e.at("lowest").get<double>();
      out.push_back(std::move(f));
    } catch (const nlohmann::json::exception& ex) {
      return Error{ex.what(), at};
    }
  }
  return out;
}

namespace {

// `text` as lines without their ends; crlf[i]: line i ended in \r\n.
std::vector<std::string> split_lines(const std::string& text, std::vector<bool>& crlf) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    crlf.push_back(!l.empty() && l.back() == '\r');
    if (crlf.back()) l.pop_back();
    lines.push_back(l);
  }
  return lines;
}

struct BoundFields {
  std::string op, unit, fail, warn, algorithm;
};

// The fields of one bound's flow mapping ("op: ">=", fail: 640, ...") that calibration reads.
BoundFields bound_fields(const std::string& flow) {
  BoundFields b;
  for (const auto& [k, v] : flow_items(flow)) {
    if (k == "nccl_algorithm") b.algorithm = unquote(v);  // the floor's mode stays with it
    if (k == "op") b.op = unquote(v);
    if (k == "unit") b.unit = unquote(v);
    if (k == "fail") b.fail = v;
    if (k == "warn") b.warn = v;
  }
  return b;
}

std::string unified_diff(const std::string& file, const std::vector<CalibrationLine>& changes) {
  std::string diff = "--- " + file + "\n+++ " + file + "\n";
  for (const auto& c : changes)
    diff += "@@ -" + std::to_string(c.line) + ",1 +" + std::to_string(c.line) + ",1 @@\n-" +
            c.before + "\n+" + c.after + "\n";
  return diff;
}

}  // namespace

Result<CalibrationPlan> plan_calibration(const std::string& sku_text, const std::string& file,
                                         const std::string& sku,
                                         const std::vector<detect::HealthyFigures>& figures,
                                         const detect::DetectConfig& cfg,
                                         const CalibrationOptions& opt) {
  static const std::regex kSku(R"re(^sku:\s*"?([^"#\s]+)"?\s*(#.*)?$)re");
  static const std::regex kCheck(R"re(^  ([A-Za-z0-9_]+):\s*(#.*)?$)re");
  static const std::regex kBound(R"re(^(    ([A-Za-z0-9_]+):\s*)\{([^}]*)\}\s*(#\s*(.*))?$)re");
  CalibrationPlan plan;
  std::vector<bool> crlf;  // a CRLF file keeps its line ends (std::regex's . stops at \r)
  std::vector<std::string> lines = split_lines(sku_text, crlf);
  std::string file_sku, check;
  bool in_thresholds = false, saw_thresholds = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (!l.empty() && l[0] != ' ' && l[0] != '#') {
      in_thresholds = l.rfind("thresholds:", 0) == 0;
      saw_thresholds = saw_thresholds || in_thresholds;
      check.clear();
      if (std::regex_match(l, m, kSku)) file_sku = m[1];
      continue;
    }
    if (!in_thresholds) continue;
    if (std::regex_match(l, m, kCheck)) {
      check = m[1];
      continue;
    }
    if (check.empty() || !std::regex_match(l, m, kBound)) continue;
    const std::string measurement = m[2];
    const auto [op, unit, fail, warn, algorithm] = bound_fields(m[3]);
    if (op != ">=") continue;  // floors only: counts and error bounds are not calibrated
    // Only the performance figures the detection engine judges (and learns) have healthy
    // figures; gpu_count, link widths and port counts are not calibrated.
    if (!cfg.find_metric(check, measurement, unit)) continue;
    const detect::HealthyFigures* f = nullptr;
    for (const auto& x : figures)
      if (x.check == check && x.measurement == measurement) f = &x;
    const std::string name = check + "." + measurement;
    if (!f) {
      plan.notes.push_back(name + ": no healthy figures in the drainer's history; unchanged");
      continue;
    }
    const detect::MetricSpec* spec = cfg.find_metric(check, measurement, unit);
    if (f->unit != unit) {
      plan.notes.push_back(name + ": the file's unit " + unit + " differs from the figures' " +
                           f->unit + "; unchanged");
      continue;
    }
    const detect::ProposedFloor p =
        detect::propose_floor(*f, cfg.margins_for(*spec), opt.min_nodes, opt.min_figures);
    const std::string data = std::to_string(f->nodes) + " nodes, " + std::to_string(f->runs) +
                             " figures, median " + significant(f->centre) + " " + unit +
                             ", spread " + significant(100 * f->spread / f->centre, 2) + "%";
    if (!p.refused.empty()) {
      plan.notes.push_back(name + ": " + p.refused + "; unchanged (" + data + ")");
      continue;
    }
    const std::string fail_text = significant(p.fail), warn_text = significant(p.warn);
    std::string after = std::string(m[1]) + "{op: \">=\", fail: " + fail_text +
                        ", warn: " + warn_text + ", unit: " + unit +
                        (algorithm.empty() ? "" : ", nccl_algorithm: " + algorithm) +
                        ", calibrated: \"" + opt.date + " from " + data + "\"}  # shipped: fail " +
                        fail + (warn.empty() ? "" : ", warn " + warn);
    if (m[5].matched && m[5].length() > 0) after += "; " + std::string(m[5]);
    plan.notes.push_back(name + ": fail " + fail + " -> " + fail_text + ", warn " +
                         (warn.empty() ? "-" : warn) + " -> " + warn_text + " (" + data + ")");
    plan.changes.push_back({check, measurement, static_cast<int>(i + 1), l, after});
    lines[i] = after;
  }
  if (file_sku != sku)
    return Error{"the file is for SKU '" + file_sku + "', not '" + sku + "'", file};
  if (!saw_thresholds) return Error{"no thresholds: section", file};
  for (std::size_t i = 0; i < lines.size(); ++i) plan.text += lines[i] + (crlf[i] ? "\r\n" : "\n");
  if (!plan.changes.empty()) plan.diff = unified_diff(file, plan.changes);
  return plan;
}

}  // namespace vigil::drainer
