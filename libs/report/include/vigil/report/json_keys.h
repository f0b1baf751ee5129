#pragma once
// The one unknown-key rule of Vigil's strict JSON readers (reports, detection settings, journal
// records): a key a reader does not know is an error naming it, never silently ignored (a typo in
// a setting, or a field a newer writer added, must not change meaning without a word).
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace vigil {

// The keys of object `j` that are not in `known`, in the object's order; empty for a non-object.
template <class Known>
std::vector<std::string> unknown_keys(const nlohmann::json& j, const Known& known) {
  std::vector<std::string> out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    bool ok = false;
    for (const auto& n : known) ok = ok || std::string_view(n) == k;
    if (!ok) out.push_back(k);
  }
  return out;
}

inline std::vector<std::string> unknown_keys(const nlohmann::json& j,
                                             std::initializer_list<std::string_view> known) {
  return unknown_keys<std::initializer_list<std::string_view>>(j, known);
}

}  // namespace vigil
