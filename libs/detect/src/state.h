#pragma once
// What the engine has learned: per unit a bounded ring of healthy figures, per (SKU, figure) one
// healthy figure per node, the unit string each figure uses, and when each node was last seen.
// Ordered containers only, so iteration (and therefore judging and snapshots) is deterministic.
#include <compare>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "stats.h"
#include "vigil/base/result.h"
#include "vigil/detect/detect.h"

namespace vigil::detect::detail {

// A figure of a SKU: the key of units and fleet entries.
struct KeyId {
  std::string sku;
  std::string check;
  std::string measurement;
  UnitKind kind = UnitKind::kNode;
  auto operator<=>(const KeyId&) const = default;
};

// One number per node, kept sorted as well for O(n) medians and spreads.
struct NodeTable {
  std::map<std::string, double> by_node;
  std::vector<double> sorted;

  void set(const std::string& node, double value);
  void erase(const std::string& node);
  // The sorted numbers of every node except `node`, without a copy.
  stats::SortedSkip others(const std::string& node) const;
};

// Per (SKU, figure): each node's latest healthy figure (the median of its units) and, for
// per-GPU/port figures, the relative spread of its units (1.4826 * MAD / median): the pooled
// estimate of how far healthy units of one node naturally differ.
struct FleetKey {
  NodeTable values;
  NodeTable unit_spreads;
};

struct NodeHistory {
  std::int64_t last_seen = 0;
  // Per figure, per unit id ("gpu3", "node" for a node's level): the ring of healthy
  // figures, oldest first, at most history_window values.
  std::map<KeyId, std::map<std::string, std::vector<double>>> history;
  std::set<KeyId> fleet_keys;
};

struct EngineState {
  std::map<KeyId, std::string> units;
  std::map<std::string, NodeHistory> nodes;
  std::set<std::pair<std::int64_t, std::string>> by_age;  // (last_seen, node)
  std::map<KeyId, FleetKey> fleet;

  // The node's history rings of `key` by unit id, or nullptr.
  const std::map<std::string, std::vector<double>>* rings(const std::string& node,
                                                          const KeyId& key) const;
  // Records that `node` reported at `now` (creates it).
  NodeHistory& touch(const std::string& node, std::int64_t now);
  // Drops nodes last seen before `cutoff`.
  void forget_before(std::int64_t cutoff);
  void erase_node(const std::string& node);
  void push_history(const std::string& node, const KeyId& key, const std::string& unit_id,
                    double value, std::size_t capacity);
  void set_fleet(const std::string& node, const KeyId& key, double value,
                 std::optional<double> unit_spread);
};

nlohmann::json to_json(const EngineState& s);
// Rejects anything malformed with the JSON pointer of the field. Rings longer than
// `history_window` keep their latest values.
Result<EngineState> state_from_json(const nlohmann::json& j, std::size_t history_window);

}  // namespace vigil::detect::detail
