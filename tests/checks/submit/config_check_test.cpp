// vigil-submit --check-config's rules on genuine `scontrol show config` and `scontrol show node`
// output of Slurm 22.05.8, 24.11.5 and 26.05.5 (tests/fixtures/scontrol/SOURCES.md).
#include "vigil/submit/config_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "vigil/slurm/scontrol.h"

namespace vigil::submit {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/scontrol/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

std::vector<slurm::SlurmNodeInfo> nodes(const std::string& name) {
  auto parsed = slurm::nodes_from_scontrol(fixture(name));
  EXPECT_TRUE(parsed.ok()) << name;
  return parsed.ok() ? *parsed : std::vector<slurm::SlurmNodeInfo>{};
}

const ConfigFinding* find(const std::vector<ConfigFinding>& f, const std::string& setting) {
  auto it = std::find_if(f.begin(), f.end(), [&](const auto& x) { return x.setting == setting; });
  return it == f.end() ? nullptr : &*it;
}

ConfigLevel level_of(const std::vector<ConfigFinding>& f, const std::string& setting) {
  const ConfigFinding* x = find(f, setting);
  EXPECT_NE(x, nullptr) << setting << "\n" << config_table(f);
  return x ? x->level : ConfigLevel::kOk;
}

TEST(ConfigCheck, parses_show_config_of_every_release_including_numbered_scripts) {
  auto c = slurm::config_from_scontrol(fixture("show-config-22.05.8-production.txt"));
  EXPECT_EQ(c["ResumeTimeout"], "60 sec");
  EXPECT_EQ(c["ConstrainDevices"], "yes");  // cgroup.conf's part of the output
  EXPECT_EQ(c["Prolog"], "");               // "(null)"
  EXPECT_EQ(c["TaskPlugin"], "task/cgroup,task/affinity");
  c = slurm::config_from_scontrol(fixture("show-config-24.11.5-production-hooks.txt"));
  EXPECT_EQ(c["Prolog"], "/usr/bin/vigil-hook");  // printed as Prolog[0]
  EXPECT_EQ(c["RebootProgram"], "/usr/bin/vigil-reboot /usr/sbin/reboot");
  c = slurm::config_from_scontrol(fixture("show-config-26.05.5-production-hooks.txt"));
  EXPECT_EQ(c["Epilog"], "/usr/bin/vigil-hook");
  EXPECT_EQ(c["ResumeTimeout"], "1800 sec");
}

// The local cluster's production profile as it starts: every node's GPUs in Gres, but none of
// Vigil's hooks and Slurm's default ResumeTimeout (60 s) without a RebootProgram.
TEST(ConfigCheck, a_fresh_production_cluster_warns_about_hooks_and_reboots_only) {
  ConfigCheckInput in;
  in.config = slurm::config_from_scontrol(fixture("show-config-22.05.8-production.txt"));
  in.nodes = nodes("show-node-22.05.8-production.txt");
  const auto f = check_config(in);
  EXPECT_EQ(level_of(f, "Gres"), ConfigLevel::kOk);
  EXPECT_NE(find(f, "TaskPlugin, ConstrainDevices")->what.find("device-constrained"),
            std::string::npos);
  EXPECT_EQ(level_of(f, "RebootProgram"), ConfigLevel::kWarn);
  // Too short, but without a RebootProgram Vigil cannot reboot anyway: a warning.
  EXPECT_EQ(level_of(f, "ResumeTimeout"), ConfigLevel::kWarn);
  for (const char* hook : {"Prolog", "Epilog", "HealthCheckProgram"})
    EXPECT_EQ(level_of(f, hook), ConfigLevel::kWarn) << hook;
  EXPECT_TRUE(std::none_of(f.begin(), f.end(), [](const auto& x) {
    return x.level == ConfigLevel::kProblem;
  })) << config_table(f);
}

// The bare profile: no GRES at all; nodes whose GPUs Slurm does not know are named.
TEST(ConfigCheck, nodes_without_gpu_gres_are_named_with_the_fix) {
  ConfigCheckInput in;
  in.config = slurm::config_from_scontrol(fixture("show-config-22.05.8-bare.txt"));
  in.nodes = nodes("show-node-22.05.txt");
  const auto f = check_config(in);
  const ConfigFinding* g = find(f, "GresTypes, Gres");
  ASSERT_NE(g, nullptr) << config_table(f);
  EXPECT_EQ(g->level, ConfigLevel::kWarn);
  EXPECT_NE(g->value.find("gpu-0"), std::string::npos) << g->value;
  EXPECT_NE(g->fix.find("GresTypes=gpu"), std::string::npos);
  EXPECT_NE(find(f, "TaskPlugin, ConstrainDevices")->what.find("not constrained"),
            std::string::npos);
}

// 24.11 and 26.05 with Vigil's hooks and reboot wrapper: fine as captured; then each
// misconfiguration an admin makes is a problem with its fix.
TEST(ConfigCheck, finds_each_misconfiguration_with_its_fix) {
  for (const char* release : {"24.11.5", "26.05.5"}) {
    SCOPED_TRACE(release);
    ConfigCheckInput in;
    in.config = slurm::config_from_scontrol(
        fixture(std::string("show-config-") + release + "-production-hooks.txt"));
    in.nodes = nodes(std::string("show-node-") + release + "-production.txt");
    in.file_state = [](const std::string&) { return 0; };
    auto f = check_config(in);
    EXPECT_TRUE(std::none_of(f.begin(), f.end(), [](const auto& x) {
      return x.level != ConfigLevel::kOk;
    })) << config_table(f);
    // The hook is not executable on this host.
    in.file_state = [](const std::string& p) { return p == "/usr/bin/vigil-hook" ? 1 : 0; };
    f = check_config(in);
    EXPECT_EQ(level_of(f, "Prolog"), ConfigLevel::kProblem);
    EXPECT_EQ(find(f, "Prolog")->fix, "chmod 0755 /usr/bin/vigil-hook");
    // Slurm's default ResumeTimeout with a RebootProgram: reboots end DOWN (review W2).
    in.file_state = [](const std::string&) { return 2; };
    in.config["ResumeTimeout"] = "60 sec";
    in.config["HealthCheckInterval"] = "0 sec";
    in.config["PrologFlags"] = "Contain";
    in.partition = "vigil";
    in.partition_found = false;
    in.reservation = "maint";
    in.reservation_found = false;
    f = check_config(in);
    EXPECT_EQ(level_of(f, "ResumeTimeout"), ConfigLevel::kProblem);
    EXPECT_EQ(find(f, "ResumeTimeout")->fix,
              "ResumeTimeout=780 or more (or keep repair.reboot off)");
    EXPECT_EQ(level_of(f, "HealthCheckInterval"), ConfigLevel::kProblem);
    EXPECT_EQ(level_of(f, "PrologFlags"), ConfigLevel::kWarn);
    EXPECT_EQ(level_of(f, "--partition"), ConfigLevel::kProblem);
    EXPECT_EQ(level_of(f, "--reservation"), ConfigLevel::kProblem);
    EXPECT_EQ(level_of(f, "Prolog"), ConfigLevel::kOk);  // only not visible from here
  }
}

}  // namespace
}  // namespace vigil::submit
