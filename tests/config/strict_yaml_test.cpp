// The one strict YAML reader (vigil/config/strict_yaml.h): what each scalar rule takes and
// refuses, and how a problem names its file, line and field.
#include "vigil/config/strict_yaml.h"

#include <gtest/gtest.h>

using vigil::YamlReader;

namespace {

std::string only_error(const YamlReader& r) {
  EXPECT_EQ(r.errors.size(), 1u);
  return r.errors.empty() ? "" : r.errors[0].to_string();
}

}  // namespace

TEST(StrictYaml, a_boolean_is_only_the_words_true_and_false) {
  const YAML::Node doc = YAML::Load("a: true\nb: false\nc: yes\nd: 1\ne: \"true\"\nf: On\n");
  YamlReader r("x.yaml");
  EXPECT_EQ(r.boolean(doc["a"], "a"), true);
  EXPECT_EQ(r.boolean(doc["b"], "b"), false);
  EXPECT_TRUE(r.errors.empty());
  for (const char* key : {"c", "d", "e", "f"}) {
    YamlReader bad("x.yaml");
    EXPECT_FALSE(bad.boolean(doc[key], key)) << key;
    EXPECT_NE(only_error(bad).find(std::string(key) + ": must be true or false"),
              std::string::npos);
  }
}

TEST(StrictYaml, an_integer_is_decimal_or_hex_within_its_range) {
  const YAML::Node doc =
      YAML::Load("a: 42\nb: 0x2A\nc: -7\nd: 4.5\ne: 12abc\nf: 300\ng: 99999999999999999999\n");
  YamlReader r("x.yaml");
  EXPECT_EQ(r.integer(doc["a"], "a"), 42);
  EXPECT_EQ(r.integer(doc["b"], "b"), 42);
  EXPECT_EQ(r.integer(doc["c"], "c"), -7);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_FALSE(r.integer(doc["d"], "d"));
  EXPECT_FALSE(r.integer(doc["e"], "e"));
  EXPECT_FALSE(r.integer(doc["f"], "f", 0, 255));
  EXPECT_FALSE(r.integer(doc["g"], "g"));
  EXPECT_FALSE(r.integer(doc["c"], "c", 0));
  ASSERT_EQ(r.errors.size(), 5u);
  EXPECT_EQ(r.errors[0].to_string(), "x.yaml:4: d: must be an integer, got '4.5'");
  EXPECT_EQ(r.errors[2].to_string(), "x.yaml:6: f: must be <= 255");
  EXPECT_EQ(r.errors[4].to_string(), "x.yaml:3: c: must be >= 0");
}

TEST(StrictYaml, a_number_is_finite_with_nothing_after_it) {
  const YAML::Node doc = YAML::Load("a: 1.5e3\nb: .inf\nc: 3 GB\nd: [1]\n");
  YamlReader r("x.yaml");
  EXPECT_EQ(r.number(doc["a"], "a"), 1500.0);
  EXPECT_FALSE(r.number(doc["b"], "b"));
  EXPECT_FALSE(r.number(doc["c"], "c"));
  EXPECT_FALSE(r.number(doc["d"], "d"));
  EXPECT_EQ(r.errors.size(), 3u);
}

TEST(StrictYaml, an_unknown_key_names_itself_its_line_and_the_known_ones) {
  const YAML::Node doc = YAML::Load("policy:\n  staleness_s: 5\n  stalenes: 6\n");
  YamlReader r("c.yaml");
  EXPECT_FALSE(r.only_keys(doc["policy"], "policy", {"staleness_s", "checks"}));
  EXPECT_EQ(only_error(r),
            "c.yaml:3: policy.stalenes: unknown key (expected one of: checks, staleness_s)");
  YamlReader list("c.yaml");
  EXPECT_FALSE(list.only_keys(YAML::Load("[1, 2]"), "policy", {"checks"}));
  EXPECT_EQ(only_error(list), "c.yaml:1: policy: must be a mapping");
}

TEST(StrictYaml, strings_and_text) {
  const YAML::Node doc = YAML::Load("a: ''\nb: [x]\nc: word\n");
  YamlReader r("x.yaml");
  EXPECT_EQ(r.scalar(doc["a"], "a"), "");
  EXPECT_EQ(r.text(doc["c"], "c"), "word");
  EXPECT_FALSE(r.text(doc["a"], "a"));
  EXPECT_FALSE(r.scalar(doc["b"], "b"));
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].to_string(), "x.yaml:1: a: must be a non-empty string");
}
