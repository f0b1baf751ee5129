// EngineState <-> JSON for the drainer's journal. Doubles are written with full precision
// (nlohmann dumps 17 significant digits), so restore(snapshot()) is exact.
#include <cmath>
#include <nlohmann/json.hpp>

#include "state.h"

namespace vigil::detect::detail {

using nlohmann::json;

namespace {

constexpr int kSnapshotVersion = 1;

json key_json(const KeyId& k) {
  return {{"sku", k.sku},
          {"check", k.check},
          {"measurement", k.measurement},
          {"unit_kind", std::string(to_string(k.kind))}};
}

// Thrown only inside this file, caught in state_from_json; carries the JSON pointer.
struct BadField {
  std::string path;
  std::string what;
};

// Pointers, not references: GCC 14's -Wdangling-reference takes a reference returned next to a
// temporary std::string argument (`at`) for one into that temporary.
const json* field(const json& j, const std::string& at, const char* key) {
  if (!j.is_object()) throw BadField{at, "must be an object"};
  auto it = j.find(key);
  if (it == j.end()) throw BadField{at + "/" + key, "missing"};
  return &*it;
}

std::string text(const json& j, const std::string& at, const char* key) {
  const json& v = *field(j, at, key);
  if (!v.is_string() || v.get<std::string>().empty()) {
    throw BadField{at + "/" + key, "must be a non-empty string"};
  }
  return v.get<std::string>();
}

double number(const json& v, const std::string& at) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    throw BadField{at, "must be a finite number >= 0"};
  }
  return v.get<double>();
}

KeyId read_key(const json& j, const std::string& at) {
  KeyId k{text(j, at, "sku"), text(j, at, "check"), text(j, at, "measurement"), UnitKind::kNode};
  const std::string kind = text(j, at, "unit_kind");
  auto u = value_of(kUnitKindNames, kind);
  if (!u) throw BadField{at + "/unit_kind", "must be gpu, port or node"};
  k.kind = *u;
  return k;
}

const json* array(const json& j, const std::string& at, const char* key) {
  const json* v = field(j, at, key);
  if (!v->is_array()) throw BadField{at + "/" + key, "must be an array"};
  return v;
}

void read_node(EngineState& s, const json& j, const std::string& at, std::size_t window) {
  const std::string node = text(j, at, "node");
  const json& seen = *field(j, at, "last_seen");
  if (!seen.is_number_integer()) throw BadField{at + "/last_seen", "must be an integer"};
  if (s.nodes.count(node)) throw BadField{at + "/node", "duplicate node " + node};
  s.touch(node, seen.get<std::int64_t>());
  const json& hist = *array(j, at, "history");
  for (std::size_t i = 0; i < hist.size(); ++i) {
    const std::string h_at = at + "/history/" + std::to_string(i);
    const KeyId key = read_key(hist[i], h_at);
    const std::string unit_id = text(hist[i], h_at, "unit_id");
    const json& values = *array(hist[i], h_at, "values");
    for (std::size_t v = 0; v < values.size(); ++v) {
      s.push_history(node, key, unit_id, number(values[v], h_at + "/values/" + std::to_string(v)),
                     window);
    }
  }
  const json& fleet = *array(j, at, "fleet");
  for (std::size_t i = 0; i < fleet.size(); ++i) {
    const std::string f_at = at + "/fleet/" + std::to_string(i);
    std::optional<double> spread;
    if (fleet[i].contains("unit_spread")) {
      spread = number(fleet[i]["unit_spread"], f_at + "/unit_spread");
    }
    s.set_fleet(node, read_key(fleet[i], f_at),
                number(*field(fleet[i], f_at, "value"), f_at + "/value"), spread);
  }
}

}  // namespace

json to_json(const EngineState& s) {
  json units = json::array();
  for (const auto& [key, unit] : s.units) {
    json u = key_json(key);
    u["unit"] = unit;
    units.push_back(std::move(u));
  }
  json nodes = json::array();
  for (const auto& [name, n] : s.nodes) {
    json hist = json::array();
    for (const auto& [key, units] : n.history) {
      for (const auto& [unit_id, values] : units) {
        json h = key_json(key);
        h["unit_id"] = unit_id;
        h["values"] = values;
        hist.push_back(std::move(h));
      }
    }
    json fleet = json::array();
    for (const KeyId& key : n.fleet_keys) {
      json f = key_json(key);
      const FleetKey& fk = s.fleet.at(key);
      f["value"] = fk.values.by_node.at(name);
      auto spread = fk.unit_spreads.by_node.find(name);
      if (spread != fk.unit_spreads.by_node.end()) f["unit_spread"] = spread->second;
      fleet.push_back(std::move(f));
    }
    nodes.push_back(
        {{"node", name}, {"last_seen", n.last_seen}, {"history", hist}, {"fleet", fleet}});
  }
  return {{"detect_snapshot_version", kSnapshotVersion}, {"units", units}, {"nodes", nodes}};
}

Result<EngineState> state_from_json(const json& j, std::size_t history_window) {
  EngineState s;
  try {
    const json& v = *field(j, "", "detect_snapshot_version");
    if (v != kSnapshotVersion) {
      throw BadField{"/detect_snapshot_version", "unsupported version " + v.dump() +
                                                     " (this build reads " +
                                                     std::to_string(kSnapshotVersion) + ")"};
    }
    const json& units = *array(j, "", "units");
    for (std::size_t i = 0; i < units.size(); ++i) {
      const std::string at = "/units/" + std::to_string(i);
      s.units[read_key(units[i], at)] = text(units[i], at, "unit");
    }
    const json& nodes = *array(j, "", "nodes");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      read_node(s, nodes[i], "/nodes/" + std::to_string(i), history_window);
    }
  } catch (const BadField& e) {
    return Error{e.path + ": " + e.what +
                     "; the snapshot is damaged: rebuild it by re-judging "
                     "the journaled reports",
                 "detect::Engine::restore"};
  }
  return s;
}

}  // namespace vigil::detect::detail
