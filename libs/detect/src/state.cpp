#include "state.h"

#include <algorithm>

namespace vigil::detect::detail {

void FleetKey::set(const std::string& node, double value) {
  auto [it, inserted] = by_node.try_emplace(node, value);
  if (!inserted) {
    auto old = std::lower_bound(sorted.begin(), sorted.end(), it->second);
    if (old != sorted.end()) sorted.erase(old);
    it->second = value;
  }
  sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), value), value);
}

void FleetKey::erase(const std::string& node) {
  auto it = by_node.find(node);
  if (it == by_node.end()) return;
  auto old = std::lower_bound(sorted.begin(), sorted.end(), it->second);
  if (old != sorted.end()) sorted.erase(old);
  by_node.erase(it);
}

std::vector<double> FleetKey::others(const std::string& node) const {
  auto it = by_node.find(node);
  if (it == by_node.end()) return sorted;
  std::vector<double> out;
  out.reserve(sorted.size());
  auto skip = std::lower_bound(sorted.begin(), sorted.end(), it->second);
  out.insert(out.end(), sorted.begin(), skip);
  if (skip != sorted.end()) out.insert(out.end(), skip + 1, sorted.end());
  return out;
}

const std::vector<double>* EngineState::history(const std::string& node,
                                                const UnitId& unit) const {
  auto n = nodes.find(node);
  if (n == nodes.end()) return nullptr;
  auto h = n->second.history.find(unit);
  return h == n->second.history.end() ? nullptr : &h->second;
}

NodeState& EngineState::touch(const std::string& node, std::int64_t now) {
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
    f->second.erase(node);
    if (f->second.by_node.empty()) fleet.erase(f);
  }
  by_age.erase({it->second.last_seen, node});
  nodes.erase(it);
}

void EngineState::push_history(const std::string& node, const UnitId& unit, double value,
                               std::size_t capacity) {
  std::vector<double>& ring = nodes[node].history[unit];
  while (ring.size() >= capacity) ring.erase(ring.begin());
  ring.push_back(value);
}

void EngineState::set_fleet(const std::string& node, const KeyId& key, double value) {
  fleet[key].set(node, value);
  nodes[node].fleet_keys.insert(key);
}

}  // namespace vigil::detect::detail
