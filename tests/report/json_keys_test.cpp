// vigil::unknown_keys (vigil/report/json_keys.h): the one unknown-key rule of the JSON readers.
#include "vigil/report/json_keys.h"

#include <gtest/gtest.h>

#include <set>

namespace vigil {
namespace {

TEST(JsonKeys, names_every_key_a_reader_does_not_know_in_the_objects_order) {
  const auto j = nlohmann::json::parse(R"({"name": 1, "valeu": 2, "unit": 3, "extra": 4})");
  EXPECT_EQ(unknown_keys(j, {"name", "value", "unit"}),
            (std::vector<std::string>{"extra", "valeu"}));  // nlohmann orders keys by name
  const std::set<std::string> known = {"name", "valeu", "unit", "extra"};
  EXPECT_TRUE(unknown_keys(j, known).empty());
  EXPECT_TRUE(unknown_keys(nlohmann::json::array({1, 2}), {"name"}).empty());  // not an object
}

}  // namespace
}  // namespace vigil
