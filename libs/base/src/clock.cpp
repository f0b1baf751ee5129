#include "vigil/base/clock.h"

#include <chrono>

namespace vigil {

int64_t SystemClock::now_unix() const {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace vigil
