// InfiniBand sysfs files (state, phys_state, rate, counters): the pure parsers never crash and
// never return a negative or non-finite rate.
#include <cmath>

#include "fuzz_support.h"
#include "ib/ib_sysfs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = vigil::fuzz::as_text(data, size);
  (void)vigil::ib::parse_numbered_state(text);
  (void)vigil::ib::parse_counter(text);
  if (auto r = vigil::ib::parse_rate_gbps(text); r && (!std::isfinite(*r) || *r < 0))
    vigil::fuzz::broken("rate " + std::to_string(*r));
  return 0;
}
