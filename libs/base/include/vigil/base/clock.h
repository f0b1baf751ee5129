#pragma once
// Time source for code that must be testable without sleeping: the drainer's policy and
// detection take a Clock; tests use tests/support/fake_clock.h.
#include <cstdint>

namespace vigil {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_unix() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t now_unix() const override;
};

}  // namespace vigil
