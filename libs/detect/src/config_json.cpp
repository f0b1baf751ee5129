// DetectConfig <-> JSON. Every key optional (defaults fill the rest), unknown keys rejected,
// every problem reported at once as "field: message".
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "vigil/detect/config.h"
#include "vigil/report/json_keys.h"

namespace vigil::detect {

using nlohmann::json;

namespace {

// Collects "field: message" problems while reading; reads never throw.
struct Reader {
  std::vector<std::string> errors;

  void only_keys(const json& j, const std::string& at, const std::set<std::string>& allowed) {
    for (const std::string& k : unknown_keys(j, allowed))
      errors.push_back(at + k + ": unknown field");
  }
  bool object(const json& j, const std::string& field) {
    if (j.is_object()) return true;
    errors.push_back(field + ": must be an object");
    return false;
  }
  void number(const json& j, const std::string& key, const std::string& at, double& out) {
    if (!j.contains(key)) return;
    if (j[key].is_number()) {
      out = j[key].get<double>();
    } else {
      errors.push_back(at + key + ": must be a number");
    }
  }
  template <typename Int>
  void integer(const json& j, const std::string& key, const std::string& at, Int& out) {
    if (!j.contains(key)) return;
    if (j[key].is_number_integer()) {
      out = j[key].get<Int>();
    } else {
      errors.push_back(at + key + ": must be an integer");
    }
  }
  void boolean(const json& j, const std::string& key, const std::string& at, bool& out) {
    if (!j.contains(key)) return;
    if (j[key].is_boolean()) {
      out = j[key].get<bool>();
    } else {
      errors.push_back(at + key + ": must be true or false");
    }
  }
  void string(const json& j, const std::string& key, const std::string& at, std::string& out) {
    if (!j.contains(key)) return;
    if (j[key].is_string()) {
      out = j[key].get<std::string>();
    } else {
      errors.push_back(at + key + ": must be a string");
    }
  }
};

void read_margins(Reader& r, const json& j, DetectConfig& c) {
  if (!r.object(j, "margins")) return;
  for (const auto& [kind, m] : j.items()) {
    const std::string at = "margins." + kind;
    if (!r.object(m, at)) continue;
    r.only_keys(m, at + ".", {"warn", "fail"});
    Margins& out = c.margins[kind];  // merges over the default of that kind, if any
    r.number(m, "warn", at + ".", out.warn);
    r.number(m, "fail", at + ".", out.fail);
  }
}

void read_metrics(Reader& r, const json& j, DetectConfig& c) {
  if (!j.is_array()) {
    r.errors.push_back("metrics: must be an array");
    return;
  }
  c.metrics.clear();
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string at = "metrics[" + std::to_string(i) + "].";
    if (!r.object(j[i], at.substr(0, at.size() - 1))) continue;
    r.only_keys(j[i], at, {"check", "measurement", "unit", "kind", "direction"});
    MetricSpec m;
    r.string(j[i], "check", at, m.check);
    r.string(j[i], "measurement", at, m.measurement);
    r.string(j[i], "unit", at, m.unit);
    r.string(j[i], "kind", at, m.kind);
    std::string dir = "higher";
    r.string(j[i], "direction", at, dir);
    if (auto d = value_of(kDirectionNames, dir))
      m.direction = *d;
    else
      r.errors.push_back(at + "direction: '" + dir + "' must be \"higher\" or \"lower\"");
    c.metrics.push_back(std::move(m));
  }
}

}  // namespace

Result<DetectConfig> config_from_json(const json& j) {
  DetectConfig c = DetectConfig::defaults();
  Reader r;
  if (!r.object(j, "detection")) return Error{r.errors.front(), "detect::config_from_json"};
  r.only_keys(
      j, "",
      {"margins", "metrics", "baselines", "min_peers", "history_window", "min_history", "min_fleet",
       "cross_margin_scale", "peer_spread_k", "fleet_spread_k", "drift_tau", "forget_after_s"});
  if (j.contains("margins")) read_margins(r, j["margins"], c);
  if (j.contains("metrics")) read_metrics(r, j["metrics"], c);
  if (j.contains("baselines") && r.object(j["baselines"], "baselines")) {
    r.only_keys(j["baselines"], "baselines.", {"peers", "history", "fleet"});
    r.boolean(j["baselines"], "peers", "baselines.", c.use_peers);
    r.boolean(j["baselines"], "history", "baselines.", c.use_history);
    r.boolean(j["baselines"], "fleet", "baselines.", c.use_fleet);
  }
  r.integer(j, "min_peers", "", c.min_peers);
  r.integer(j, "history_window", "", c.history_window);
  r.integer(j, "min_history", "", c.min_history);
  r.integer(j, "min_fleet", "", c.min_fleet);
  r.number(j, "cross_margin_scale", "", c.cross_margin_scale);
  r.number(j, "peer_spread_k", "", c.peer_spread_k);
  r.number(j, "fleet_spread_k", "", c.fleet_spread_k);
  r.number(j, "drift_tau", "", c.drift_tau);
  r.integer(j, "forget_after_s", "", c.forget_after_s);
  if (r.errors.empty()) r.errors = c.validate();
  if (r.errors.empty()) return c;
  std::string all;
  for (const std::string& e : r.errors) all += (all.empty() ? "" : "; ") + e;
  return Error{all, "detect::config_from_json"};
}

Result<DetectConfig> load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read " + path, "detect::load_config_file"};
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{path + ": not valid JSON", "detect::load_config_file"};
  auto c = config_from_json(j);
  if (!c.ok()) return Error{path + ": " + c.error().message, "detect::load_config_file"};
  return c;
}

json to_json(const DetectConfig& c) {
  json margins = json::object();
  for (const auto& [kind, m] : c.margins) margins[kind] = {{"warn", m.warn}, {"fail", m.fail}};
  json metrics = json::array();
  for (const MetricSpec& m : c.metrics) {
    metrics.push_back({{"check", m.check},
                       {"measurement", m.measurement},
                       {"unit", m.unit},
                       {"kind", m.kind},
                       {"direction", std::string(to_string(m.direction))}});
  }
  return {
      {"margins", margins},
      {"metrics", metrics},
      {"baselines", {{"peers", c.use_peers}, {"history", c.use_history}, {"fleet", c.use_fleet}}},
      {"min_peers", c.min_peers},
      {"history_window", c.history_window},
      {"min_history", c.min_history},
      {"min_fleet", c.min_fleet},
      {"cross_margin_scale", c.cross_margin_scale},
      {"peer_spread_k", c.peer_spread_k},
      {"fleet_spread_k", c.fleet_spread_k},
      {"drift_tau", c.drift_tau},
      {"forget_after_s", c.forget_after_s}};
}

}  // namespace vigil::detect
