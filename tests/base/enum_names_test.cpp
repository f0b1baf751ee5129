#include "vigil/base/enum_names.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

enum class Colour { kRed, kGreen, kBlue };
constexpr EnumName<Colour> kColourNames[] = {
    {Colour::kRed, "red"}, {Colour::kGreen, "green"}, {Colour::kBlue, "blue"}};

TEST(EnumNames, each_value_reads_both_ways_through_its_one_table) {
  for (auto [c, name] : kColourNames) {
    EXPECT_EQ(name_of(kColourNames, c), name);
    EXPECT_EQ(value_of(kColourNames, name), c);
  }
  static_assert(name_of(kColourNames, Colour::kGreen) == "green");
  static_assert(value_of(kColourNames, "blue") == Colour::kBlue);
}

TEST(EnumNames, an_unknown_spelling_is_no_value_and_case_counts) {
  EXPECT_FALSE(value_of(kColourNames, "Red"));
  EXPECT_FALSE(value_of(kColourNames, ""));
  EXPECT_FALSE(value_of(kColourNames, "red "));
}

TEST(EnumNames, a_value_missing_from_a_table_spells_as_the_fallback) {
  constexpr EnumName<Colour> kPartial[] = {{Colour::kRed, "red"}};
  EXPECT_EQ(name_of(kPartial, Colour::kBlue), "");
  EXPECT_EQ(name_of(kPartial, Colour::kBlue, "unknown"), "unknown");
}

TEST(EnumNames, joined_names_lists_every_spelling_in_table_order) {
  EXPECT_EQ(joined_names(kColourNames), "red, green, blue");
}

}  // namespace
}  // namespace vigil
