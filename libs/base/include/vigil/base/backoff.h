#pragma once
// The one retry backoff: the first wait after a failure, doubled after each further one up to a
// cap. The report client, the Kubernetes client and the drainer's sink lanes all wait by it.
#include <algorithm>
#include <cstdint>

namespace vigil {

// The wait after `current` (0: none yet, so `initial`); never more than `cap`.
constexpr std::int64_t next_backoff(std::int64_t current, std::int64_t initial, std::int64_t cap) {
  return std::min(cap, current > 0 ? current * 2 : initial);
}

}  // namespace vigil
