// The configuration's detection and classes sections (config_sections.cpp), read through
// parse_config as the program reads them; errors name file, line and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "vigil/drainer/config_file.h"

namespace vigil::drainer {
namespace {

TEST(Config, detection_errors_name_file_line_and_field) {
  struct Case {
    std::string yaml, want;
  };
  const Case cases[] = {
      {"auth: disabled\ndetection:\n  engine:\n    min_peers: 2\n",
       "d.yaml:4: detection.engine.min_peers:"},
      {"auth: disabled\ndetection:\n  engine:\n    margins:\n      gemm: {warn: 0.2, fail: 0.1}\n",
       "d.yaml:5: detection.engine.margins.gemm:"},
      {"auth: disabled\ndetection:\n  engine: {typo: 1}\n", "detection.engine.typo: unknown"},
      {"auth: disabled\ndetection:\n  confirmed_drain_after: 0\n",
       "d.yaml:3: detection.confirmed_drain_after: must be >= 1"},
      {"auth: disabled\ndetection: {enable: true}\n", "detection.enable: unknown key"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.yaml, "d.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos)
        << "want '" << c.want << "' in: " << r.error().message;
  }
}

TEST(Config, classes_are_on_by_default_and_their_errors_name_file_line_and_field) {
  auto c = parse_config("auth: disabled\n", "d.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->classes.enabled);
  EXPECT_EQ(c->classes.min_nodes, 5);
  EXPECT_DOUBLE_EQ(c->classes.min_share, 0.8);
  auto custom =
      parse_config("auth: disabled\nclasses: {min_nodes: 10, min_share: 0.9}\n", "d.yaml");
  ASSERT_TRUE(custom.ok()) << custom.error().to_string();
  EXPECT_EQ(custom->classes.min_nodes, 10);
  EXPECT_DOUBLE_EQ(custom->classes.min_share, 0.9);
  struct Case {
    std::string yaml, want;
  };
  const Case cases[] = {
      {"auth: disabled\nclasses:\n  min_nodes: 2\n", "d.yaml:3: classes.min_nodes: must be >= 3"},
      {"auth: disabled\nclasses:\n  min_share: 0.5\n", "d.yaml:3: classes.min_share: must be in"},
      {"auth: disabled\nclasses: {enable: false}\n", "classes.enable: unknown key"},
  };
  for (const auto& k : cases) {
    auto r = parse_config(k.yaml, "d.yaml");
    ASSERT_FALSE(r.ok()) << k.yaml;
    EXPECT_NE(r.error().message.find(k.want), std::string::npos)
        << "want '" << k.want << "' in: " << r.error().message;
  }
}

// classes.declared: what the site confirms a class has, in the names GET /v1/classes shows
// (JSON pasted from it is YAML too).
TEST(Config, declared_classes_take_figures_and_versions_and_refuse_the_unknown) {
  auto c = parse_config(
      "auth: disabled\n"
      "classes:\n"
      "  declared:\n"
      "    \"H100-SXM5-80GB gpu:h100:8 [ib,ndr]\":\n"
      "      ib_port/active_ports: 8\n"
      "      ib_port/port_rate: 400\n"
      "      vbios: \"96.00.89.00.01\"\n"
      "      nic_firmware MT_0000000838: \"28.41.1000\"\n"
      "    \"H100-SXM5-80GB gpu:h100:4 [roce]\": {\"gpu_count/gpu_count\": 4, \"driver\": "
      "\"550.54.15\"}\n",
      "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  const auto& ib = c->classes.declared.at("H100-SXM5-80GB gpu:h100:8 [ib,ndr]");
  EXPECT_EQ(ib.figures.at("ib_port/active_ports"), 8);
  EXPECT_EQ(ib.figures.at("ib_port/port_rate"), 400);
  EXPECT_EQ(ib.versions.at("vbios"), "96.00.89.00.01");
  EXPECT_EQ(ib.versions.at("nic_firmware MT_0000000838"), "28.41.1000");
  const auto& roce = c->classes.declared.at("H100-SXM5-80GB gpu:h100:4 [roce]");
  EXPECT_EQ(roce.figures.at("gpu_count/gpu_count"), 4);
  EXPECT_EQ(roce.versions.at("driver"), "550.54.15");
  struct Case {
    std::string yaml, want;
  };
  const std::string head = "auth: disabled\nclasses:\n  declared:\n    c1:\n";
  const Case cases[] = {
      {head + "      ib_port/ports: 8\n",
       "d.yaml:5: classes.declared.c1.ib_port/ports: unknown figure"},
      {head + "      ib_port/active_ports: many\n", "classes.declared.c1.ib_port/active_ports"},
      {head + "      ib_port/active_ports: -1\n", "must be a number >= 0"},
      {head + "      vbios: \"96 00\"\n", "classes.declared.c1.vbios: must be a version"},
      {"auth: disabled\nclasses:\n  declared: [a]\n", "classes.declared: must be a mapping"},
      {"auth: disabled\nclasses:\n  declared: {c1: 8}\n", "classes.declared.c1: must be a mapping"},
  };
  for (const auto& k : cases) {
    auto r = parse_config(k.yaml, "d.yaml");
    ASSERT_FALSE(r.ok()) << k.yaml;
    EXPECT_NE(r.error().message.find(k.want), std::string::npos)
        << "want '" << k.want << "' in: " << r.error().message;
  }
}

// detection.engine_file: the detection.json vigil-check reads beside its thresholds.
TEST(Config, detection_engine_file_is_the_file_the_checks_read) {
  char dir[] = "/tmp/vigil-cfg-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string f = std::string(dir) + "/detection.json";
  std::ofstream(f) << R"({"min_peers": 6})";
  auto c = parse_config("auth: disabled\ndetection:\n  engine_file: " + f + "\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->detection.engine.min_peers, 6);
  auto both = parse_config(
      "auth: disabled\ndetection:\n  engine: {min_peers: 4}\n  engine_file: " + f + "\n", "c.yaml");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("c.yaml:4: detection.engine_file: give engine or "
                                      "engine_file, not both"),
            std::string::npos)
      << both.error().message;
  std::ofstream(f, std::ios::trunc) << R"({"min_peer": 6})";
  auto bad = parse_config("auth: disabled\ndetection:\n  engine_file: " + f + "\n", "c.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("c.yaml:3: detection.engine_file: " + f), std::string::npos)
      << bad.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vigil::drainer
