#include "state.h"

#include <algorithm>

namespace vigil::detect::detail {

void NodeTable::set(const std::string& node, double value) {
  auto [it, inserted] = by_node.try_emplace(node, value);
  if (!inserted) {
    auto old = std::lower_bound(sorted.begin(), sorted.end(), it->second);
    if (old != sorted.end()) sorted.erase(old);
    it->second = value;
  }
  sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), value), value);
}

void NodeTable::erase(const std::string& node) {
  auto it = by_node.find(node);
  if (it == by_node.end()) return;
  auto old = std::lower_bound(sorted.begin(), sorted.end(), it->second);
  if (old != sorted.end()) sorted.erase(old);
  by_node.erase(it);
}

stats::SortedSkip NodeTable::others(const std::string& node) const {
  auto it = by_node.find(node);
  if (it == by_node.end()) return {sorted};
  auto at = std::lower_bound(sorted.begin(), sorted.end(), it->second);
  return {sorted, static_cast<std::size_t>(at - sorted.begin())};
}

const std::map<std::string, std::vector<double>>* EngineState::rings(const std::string& node,
                                                                     const KeyId& key) const {
  auto n = nodes.find(node);
  if (n == nodes.end()) return nullptr;
  auto h = n->second.history.find(key);
  return h == n->second.history.end() ? nullptr : &h->second;
}

NodeHistory& EngineState::touch(const std::string& node, std::int64_t now) {
  auto [it, inserted] = nodes.try_emplace(node);
  if (!inserted) by_age.erase({it->second.last_seen, node});
  it->second.last_seen = std::max(now, inserted ? now : it->second.last_seen);
  by_age.insert({it->second.last_seen, node});
  return it->second;
}

void EngineState::forget_before(std::int64_t cutoff) {
  while (!by_age.empty() && by_age.begin()->first < cutoff) {
    const std::string node = by_age.begin()->second;
    erase_node(node);
  }
}

void EngineState::erase_node(const std::string& node) {
  auto it = nodes.find(node);
  if (it == nodes.end()) return;
  for (const KeyId& key : it->second.fleet_keys) {
    auto f = fleet.find(key);
    if (f == fleet.end()) continue;
    f->second.values.erase(node);
    f->second.unit_spreads.erase(node);
    if (f->second.values.by_node.empty()) fleet.erase(f);
  }
  by_age.erase({it->second.last_seen, node});
  nodes.erase(it);
}

void EngineState::push_history(const std::string& node, const KeyId& key,
                               const std::string& unit_id, double value, std::size_t capacity) {
  std::vector<double>& ring = nodes[node].history[key][unit_id];
  while (ring.size() >= capacity) ring.erase(ring.begin());
  ring.push_back(value);
}

void EngineState::set_fleet(const std::string& node, const KeyId& key, double value,
                            std::optional<double> unit_spread) {
  FleetKey& f = fleet[key];
  f.values.set(node, value);
  if (unit_spread) {
    f.unit_spreads.set(node, *unit_spread);
  } else {
    f.unit_spreads.erase(node);
  }
  nodes[node].fleet_keys.insert(key);
}

}  // namespace vigil::detect::detail
