#include "vigil/base/strings.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(TailLines, keeps_the_last_lines) {
  EXPECT_EQ(tail_lines("a\nb\nc\nd\n", 2), "c\nd");
  EXPECT_EQ(tail_lines("only", 3), "only");
  EXPECT_EQ(tail_lines("", 3), "");
}

TEST(ShortList, names_what_was_left_out) {
  EXPECT_EQ(short_list({"a", "b", "c", "d", "e"}, 3), "a, b, c +2 more");
  EXPECT_EQ(short_list({"a", "b"}, 3), "a, b");
  EXPECT_EQ(short_list({"gpu1", "gpu2", "gpu3"}, 1, ",", ","), "gpu1,+2 more");
}

}  // namespace
}  // namespace vigil

TEST(Fixed, rounds_to_the_given_decimals) {
  EXPECT_EQ(vigil::fixed(14.9966, 2), "15.00");
  EXPECT_EQ(vigil::fixed(36.94, 1), "36.9");
  EXPECT_EQ(vigil::fixed(-0.25, 0), "-0");
  EXPECT_EQ(vigil::fixed(798, 1), "798.0");
}
