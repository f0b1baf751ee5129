#include "vigil/base/backoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace vigil {
namespace {

TEST(Backoff, starts_at_the_first_wait_and_doubles_up_to_the_cap) {
  std::int64_t wait = 0;
  std::vector<std::int64_t> seen;
  for (int i = 0; i < 6; ++i) seen.push_back(wait = next_backoff(wait, 500, 3000));
  EXPECT_EQ(seen, (std::vector<std::int64_t>{500, 1000, 2000, 3000, 3000, 3000}));
}

TEST(Backoff, a_first_wait_over_the_cap_is_the_cap) {
  EXPECT_EQ(next_backoff(0, 5000, 2000), 2000);
}

}  // namespace
}  // namespace vigil
