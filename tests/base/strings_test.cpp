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

TEST(Significant, keeps_three_digits_at_any_scale_without_an_exponent) {
  EXPECT_EQ(vigil::significant(712.4), "712");
  EXPECT_EQ(vigil::significant(31.24), "31.2");
  EXPECT_EQ(vigil::significant(0.04871), "0.0487");
  EXPECT_EQ(vigil::significant(1234567.0), "1234567");
  EXPECT_EQ(vigil::significant(0.0), "0.00");
  EXPECT_EQ(vigil::significant(1e-9), "0.000000");  // at most 6 decimals
  EXPECT_EQ(vigil::significant(-2.5, 2), "-2.5");
}

namespace vigil {
namespace {

// The one formatter of figures: whole numbers bare where the style says so, then the style's
// decimals (the NVML messages, the Slurm reasons, the detection messages).
TEST(FormatFigure, each_style_writes_what_its_readers_expect) {
  EXPECT_EQ(format_figure(3, FigureStyle::kThreeSignificant), "3");
  EXPECT_EQ(format_figure(1e6, FigureStyle::kThreeSignificant), "1000000");
  EXPECT_EQ(format_figure(0.01234, FigureStyle::kThreeSignificant), "0.0123");
  EXPECT_EQ(format_figure(151.46, FigureStyle::kThreeSignificant), "151");
  EXPECT_EQ(format_figure(180, FigureStyle::kOneDecimal), "180");
  EXPECT_EQ(format_figure(151.46, FigureStyle::kOneDecimal), "151.5");
  EXPECT_EQ(format_figure(712.4, FigureStyle::kByMagnitude), "712");
  EXPECT_EQ(format_figure(31.24, FigureStyle::kByMagnitude), "31.2");
  EXPECT_EQ(format_figure(3, FigureStyle::kByMagnitude), "3.00");  // measured, not counted
  EXPECT_EQ(format_figure(-0.5, FigureStyle::kByMagnitude), "-0.50");
}

TEST(Trim, drops_leading_and_trailing_characters_of_the_set_only) {
  EXPECT_EQ(trim("  4: ACTIVE\n"), "4: ACTIVE");
  EXPECT_EQ(trim("\t\r\n "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("a b"), "a b");
  EXPECT_EQ(trim(" key : value ", " "), "key : value");
  EXPECT_EQ(trim(std::string_view("python3\n\0", 9), std::string_view(" \n\0", 3)), "python3");
}

}  // namespace
}  // namespace vigil
