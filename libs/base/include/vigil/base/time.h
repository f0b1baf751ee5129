#pragma once
// The one RFC 3339 implementation: reports, Kubernetes conditions and benchmark output all use
// it. UTC, second precision on output; offsets and fractions accepted on input.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

// "2026-11-21T10:00:00Z".
std::string rfc3339_utc(std::int64_t unix_seconds);
// rfc3339_utc of the system clock's now.
std::string rfc3339_now();
// "20261121T100000Z": the same instant in the compact form used in run ids and file names.
std::string compact_utc(std::int64_t unix_seconds);
// YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) -> Unix seconds; nullopt when malformed.
std::optional<std::int64_t> parse_rfc3339(std::string_view s);

}  // namespace vigil
