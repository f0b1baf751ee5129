#pragma once
// One name table per enum: each value with its one spelling (journal, JSON, metric labels, CLI).
// The table is the only place a spelling is written; name_of and value_of read it both ways, and
// a loop over the table is the list of every value. An enum's header declares its table beside
// the enum and a one-line to_string over it.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// The spelling of `v`; `fallback` for a value missing from the table (tests hold every table
// complete).
template <typename E, std::size_t N>
constexpr std::string_view name_of(const EnumName<E> (&names)[N], E v,
                                   std::string_view fallback = {}) {
  for (const EnumName<E>& n : names)
    if (n.value == v) return n.name;
  return fallback;
}

// The value spelt `s`, or nullopt for a spelling this build does not know.
template <typename E, std::size_t N>
constexpr std::optional<E> value_of(const EnumName<E> (&names)[N], std::string_view s) {
  for (const EnumName<E>& n : names)
    if (n.name == s) return n.value;
  return std::nullopt;
}

// Every spelling, comma-separated, for an error that says what this build knows.
template <typename E, std::size_t N>
std::string joined_names(const EnumName<E> (&names)[N]) {
  std::string out;
  for (const EnumName<E>& n : names) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

}  // namespace vigil
