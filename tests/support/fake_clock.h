#pragma once
// A Clock that only moves when a test moves it.
#include <cstdint>

#include "fake_clock.h"
#include "vigil/base/clock.h"

namespace vigil::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t t = 1'800'000'000) : t_(t) {}
  int64_t now_unix() const override { return t_; }
  void set(int64_t t) { t_ = t; }
  void advance(int64_t s) { t_ += s; }

 private:
  int64_t t_;
};

}  // namespace vigil::testing
