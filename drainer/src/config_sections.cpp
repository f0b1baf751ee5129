// The drainer configuration's detection and classes sections (config_reader.h).
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config_reader.h"
#include "vigil/drainer/classes.h"

namespace vigil::drainer::config_detail {
namespace {

// YAML -> JSON for the detection engine's own parser (config_from_json), scalars typed the way
// YAML 1.2's core schema reads them.
nlohmann::json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& e : n) j.push_back(yaml_to_json(e));
    return j;
  }
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  const std::string& v = n.Scalar();
  if (n.Tag() != "!") {  // unquoted
    if (v == "true" || v == "false") return v == "true";
    long long i = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), i);
    if (ec == std::errc() && p == v.data() + v.size()) return i;
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (!v.empty() && end == v.c_str() + v.size()) return d;
  }
  return v;
}

// The YAML node a detection error's field path ("margins.gemm.warn: ...") points at, for its
// line; the detection section itself when the path does not resolve.
YAML::Node node_at(const YAML::Node& root, const std::string& error) {
  YAML::Node cur = root;
  std::string path = error.substr(0, error.find(':'));
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '.')) {
    const auto bracket = part.find('[');
    const std::string key = part.substr(0, bracket);
    if (!cur.IsMap() || !cur[key].IsDefined()) return cur;
    cur = cur[key];
    if (bracket != std::string::npos && cur.IsSequence()) {
      const size_t idx = std::strtoul(part.c_str() + bracket + 1, nullptr, 10);
      if (idx >= cur.size()) return cur;
      cur = cur[idx];
    }
  }
  return cur;
}

}  // namespace

void read_detection(const Reader& rd, const YAML::Node& n, DetectionSettings& d) {
  rd.only_keys(n, "detection",
               {"enabled", "confirmed_drain_after", "unconfirmed_drain_after", "reset_on_resume",
                "engine", "engine_file"});
  rd.get(n, "enabled", "detection.enabled", d.enabled);
  rd.get(n, "confirmed_drain_after", "detection.confirmed_drain_after", d.confirmed_drain_after);
  rd.get(n, "unconfirmed_drain_after", "detection.unconfirmed_drain_after",
         d.unconfirmed_drain_after);
  rd.get(n, "reset_on_resume", "detection.reset_on_resume", d.reset_on_resume);
  if (d.confirmed_drain_after < 1)
    rd.fail(n["confirmed_drain_after"], "detection.confirmed_drain_after", "must be >= 1");
  if (d.unconfirmed_drain_after < d.confirmed_drain_after)
    rd.fail(n["unconfirmed_drain_after"], "detection.unconfirmed_drain_after",
            "must be >= confirmed_drain_after");
  if (const YAML::Node e = n["engine"]; e.IsDefined() && !e.IsNull()) {
    if (!e.IsMap()) rd.fail(e, "detection.engine", "must be a mapping");
    auto parsed = detect::config_from_json(yaml_to_json(e));
    if (!parsed.ok()) {
      const std::string& msg = parsed.error().message;
      const std::string first = msg.substr(0, msg.find("; "));
      rd.fail(node_at(e, first), "detection.engine." + first.substr(0, first.find(':')),
              first.find(": ") == std::string::npos ? first : first.substr(first.find(": ") + 2));
    }
    d.engine = std::move(parsed).value();
  }
  // The file vigil-check plans its repeats with (detection.json beside the thresholds): one
  // configuration for both sides (docs/detection.md).
  if (const YAML::Node f = n["engine_file"]; f.IsDefined()) {
    if (n["engine"].IsDefined())
      rd.fail(f, "detection.engine_file", "give engine or engine_file, not both");
    std::string path;
    rd.get(n, "engine_file", "detection.engine_file", path);
    auto c = detect::load_config_file(path);
    if (!c.ok()) rd.fail(f, "detection.engine_file", c.error().message);
    d.engine = std::move(c).value();
  }
}
namespace {

void read_declared(const Reader& rd, const YAML::Node& d, ClassSettings& c) {
  if (!d.IsMap()) rd.fail(d, "classes.declared", "must be a mapping of class name to its figures");
  for (const auto& kv : d) {
    if (!kv.first.IsScalar()) rd.fail(kv.first, "classes.declared", "a class name must be text");
    const std::string name = kv.first.Scalar();
    const std::string field = "classes.declared." + name;
    if (name.empty()) rd.fail(kv.first, "classes.declared", "a class name must not be empty");
    if (!kv.second.IsMap())
      rd.fail(kv.second, field, "must be a mapping of figure to value (as GET /v1/classes shows)");
    auto& out = c.declared[name];
    for (const auto& f : kv.second) {
      if (!f.first.IsScalar()) rd.fail(f.first, field, "a figure's name must be text");
      const std::string figure = f.first.Scalar();
      const std::string at = field + "." + figure;
      if (!f.second.IsDefined() || f.second.IsNull()) rd.fail(f.second, at, "needs a value");
      if (is_inventory_figure(figure)) {
        double v = 0;
        rd.get(kv.second, figure.c_str(), at, v);
        if (!(v >= 0)) rd.fail(f.second, at, "must be a number >= 0");
        out.figures[figure] = v;
      } else if (is_version_figure(figure)) {
        std::string v;
        rd.get(kv.second, figure.c_str(), at, v);
        if (!is_part_identifier(v))
          rd.fail(f.second, at, "must be a version: 1..96 printable characters without blanks");
        out.versions[figure] = v;
      } else {
        std::string known;
        for (const auto& i : kInventoryFigures)
          known += std::string(i.check) + "/" + std::string(i.measurement) + ", ";
        rd.fail(f.first, at,
                "unknown figure (known: " + known + "driver, vbios, nic_firmware <board_id>)");
      }
    }
  }
}

}  // namespace

void read_classes(const Reader& rd, const YAML::Node& n, ClassSettings& c) {
  rd.only_keys(n, "classes", {"enabled", "min_nodes", "min_share", "declared"});
  rd.get(n, "enabled", "classes.enabled", c.enabled);
  rd.get(n, "min_nodes", "classes.min_nodes", c.min_nodes);
  rd.get(n, "min_share", "classes.min_share", c.min_share);
  if (c.min_nodes < 3) rd.fail(n["min_nodes"], "classes.min_nodes", "must be >= 3");
  if (!(c.min_share > 0.5 && c.min_share <= 1))
    rd.fail(n["min_share"], "classes.min_share", "must be in (0.5, 1]");
  if (const YAML::Node d = n["declared"]; d.IsDefined() && !d.IsNull()) read_declared(rd, d, c);
}

}  // namespace vigil::drainer::config_detail
