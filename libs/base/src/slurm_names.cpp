// Slurm's one-node name rules; see slurm_names.h.
#include "vigil/base/slurm_names.h"

#include <cctype>

namespace vigil {

std::optional<std::string> slurm_name_problem(std::string_view name) {
  size_t digits = 0;
  auto digit_at = [&](size_t k) {
    return std::isdigit(static_cast<unsigned char>(name[name.size() - 1 - k])) != 0;
  };
  while (digits < name.size() && digit_at(digits)) ++digits;
  if (digits > 18) return "numeric suffix of more than 18 digits (Slurm's hostlist cannot hold it)";
  auto is = [&](std::string_view word) {
    if (name.size() != word.size()) return false;
    for (size_t i = 0; i < name.size(); ++i)
      if (std::toupper(static_cast<unsigned char>(name[i])) != word[i]) return false;
    return true;
  };
  if (is("ALL") || is("DEFAULT"))
    return "'" + std::string(name) + "' is a Slurm keyword (selects " +
           (is("ALL") ? "every node" : "node defaults") + "), not a node name";
  return std::nullopt;
}

}  // namespace vigil
