// dashboards/: alert rules pass `promtool check rules` and their firing tests
// (tests/dashboards/alerts_test.yaml), and a broken rule makes those tests fail; every dashboard
// is valid JSON with a stable unique uid, a templated Prometheus datasource on every panel, and
// only metric names the drainer exports (its table in drainer/src/metrics.cpp).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "run_command.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using vigil::testing::run_command;

namespace {

const std::string kSrc = VIGIL_SOURCE_DIR;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> drainer_metric_names() {
  const std::string table = read(kSrc + "/drainer/src/metrics.cpp");
  std::set<std::string> names;
  const std::regex re(R"re(\{"(vigil_[a-z_]+)", "(gauge|counter|histogram))re");
  for (std::sregex_iterator it(table.begin(), table.end(), re), end; it != end; ++it)
    names.insert((*it)[1].str());
  return names;
}

// A histogram's series name (its _bucket, _sum or _count) as the metric it belongs to.
std::string metric_of(std::string series, const std::set<std::string>& known) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string sfx(suffix);
    if (series.size() > sfx.size() && series.ends_with(sfx) &&
        known.count(series.substr(0, series.size() - sfx.size())))
      return series.substr(0, series.size() - sfx.size());
  }
  return series;
}

TEST(AlertRules, pass_promtool_check_rules) {
  const auto r = run_command({VIGIL_PROMTOOL, "check", "rules", kSrc + "/dashboards/alerts.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("SUCCESS: 9 rules found"), std::string::npos) << r.out;
}

TEST(AlertRules, fire_in_their_scenarios_and_stay_silent_otherwise) {
  const auto r =
      run_command({VIGIL_PROMTOOL, "test", "rules", kSrc + "/tests/dashboards/alerts_test.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
}

TEST(AlertRules, the_firing_tests_catch_a_broken_rule) {
  char tmpl[] = "/tmp/vigil-rules-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  fs::create_directories(dir + "/dashboards");
  fs::create_directories(dir + "/tests/dashboards");
  fs::copy_file(kSrc + "/tests/dashboards/alerts_test.yaml",
                dir + "/tests/dashboards/alerts_test.yaml");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"[1h])) > 5", "[1h])) > 50"},                       // spike threshold off by 10x
           {"== 1\n        for: 1m", "== 2\n        for: 1m"},  // breaker never matches
           {"(vigil_fabric_switch_suspect) == 1", "(vigil_fabric_switch_suspect) == 0"}}) {
    std::string rules = read(kSrc + "/dashboards/alerts.yaml");
    ASSERT_NE(rules.find(from), std::string::npos) << from;
    rules.replace(rules.find(from), from.size(), to);
    std::ofstream(dir + "/dashboards/alerts.yaml") << rules;
    const auto r =
        run_command({VIGIL_PROMTOOL, "test", "rules", dir + "/tests/dashboards/alerts_test.yaml"});
    EXPECT_NE(r.exit_code, 0) << "mutation not caught: " << to << "\n" << r.describe();
  }
  fs::remove_all(dir);
}

TEST(Dashboards, are_valid_json_with_stable_uids_templated_datasource_and_known_metrics) {
  const auto known = drainer_metric_names();
  ASSERT_GE(known.size(), 9u) << "metric table not found in drainer/src/metrics.cpp";
  const std::map<std::string, std::string> expected_uids = {{"vigil-fleet.json", "vigil-fleet"},
                                                            {"vigil-node.json", "vigil-node"},
                                                            {"vigil-fabric.json", "vigil-fabric"}};
  std::set<std::string> used;
  for (const auto& [file, uid] : expected_uids) {
    json d;
    ASSERT_NO_THROW(d = json::parse(read(kSrc + "/dashboards/" + file))) << file;
    EXPECT_EQ(d["uid"], uid) << file;
    bool has_ds_var = false;
    for (const auto& v : d["templating"]["list"])
      if (v["type"] == "datasource" && v["query"] == "prometheus") has_ds_var = true;
    EXPECT_TRUE(has_ds_var) << file;
    ASSERT_FALSE(d["panels"].empty()) << file;
    for (const auto& p : d["panels"]) {
      EXPECT_EQ(p["datasource"]["uid"], "${datasource}") << file << " " << p["title"];
      ASSERT_FALSE(p["targets"].empty()) << file << " " << p["title"];
      for (const auto& t : p["targets"]) {
        const std::string expr = t["expr"];
        const std::regex metric(R"(\b(vigil_[a-z_]+)\b)");
        for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
          const std::string name = metric_of((*it)[1].str(), known);
          used.insert(name);
          EXPECT_TRUE(known.count(name)) << file << " / " << p["title"] << " uses " << name
                                         << ", which the drainer does not export";
        }
      }
    }
  }
  // Alert rules use only exported names too.
  const std::string rules = read(kSrc + "/dashboards/alerts.yaml");
  const std::regex metric(R"(\b(vigil_[a-z_]+)\b)");
  for (std::sregex_iterator it(rules.begin(), rules.end(), metric), end; it != end; ++it) {
    EXPECT_TRUE(known.count(metric_of((*it)[1].str(), known)))
        << "alerts.yaml uses " << (*it)[1].str();
  }
  // Every exported metric is on some dashboard.
  for (const auto& m : known) EXPECT_TRUE(used.count(m)) << m << " is on no dashboard";
}

}  // namespace
