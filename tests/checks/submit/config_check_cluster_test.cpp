// vigil-submit --check-config against the real local cluster (docs/deploy.md "Checking a
// cluster's Slurm"): on the production profile with a RebootProgram, Slurm's default
// ResumeTimeout, a HealthCheckProgram that is not executable and never runs, and a partition
// that does not exist, each is a PROBLEM with its fix and the exit code is 1; on the bare
// profile the nodes without GPU GRES are named. Nothing is submitted either way.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "local_slurm_cluster.h"
#include "temp_dir.h"

namespace {

using vigil::testing::LocalSlurmCluster;
using vigil::testing::TempDir;

// The table row of SETTING (it starts the line), or "".
std::string row(const std::string& table, const std::string& setting) {
  size_t at = 0;
  while ((at = table.find(setting, at)) != std::string::npos) {
    if (at == 0 || table[at - 1] == '\n') return table.substr(at, table.find('\n', at) - at);
    at += setting.size();
  }
  return "";
}

TEST(ConfigCheckOnCluster, finds_each_misconfiguration_on_a_production_cluster) {
  if (auto why = LocalSlurmCluster::production_unavailable()) GTEST_SKIP() << *why;
  TempDir scratch;
  const std::string hook = scratch.path() + "/vigil-healthcheck.sh";
  std::ofstream(hook) << "#!/bin/sh\nexit 0\n";
  ::chmod(hook.c_str(), 0644);  // not executable: slurmd would fail it
  LocalSlurmCluster::Options o;
  o.nodes = 2;
  o.extra_conf = "RebootProgram=" + std::string(VIGIL_SOURCE_DIR) +
                 "/scripts/lib/local-reboot.sh\nHealthCheckProgram=" + hook +
                 "\nHealthCheckInterval=0\n";
  LocalSlurmCluster cluster(o);
  const auto r = cluster.run({VIGIL_SUBMIT_BINARY, "--check-config", "--partition=nosuch"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  for (const char* problem :
       {"ResumeTimeout", "HealthCheckProgram", "HealthCheckInterval", "--partition"}) {
    EXPECT_NE(row(r.out, problem).find("PROBLEM"), std::string::npos) << problem << "\n" << r.out;
  }
  EXPECT_NE(row(r.out, "ResumeTimeout").find("fix: ResumeTimeout=780"), std::string::npos) << r.out;
  EXPECT_NE(row(r.out, "HealthCheckProgram").find("chmod 0755 " + hook), std::string::npos)
      << r.out;
  EXPECT_NE(row(r.out, "Prolog").find("warn"), std::string::npos) << r.out;
  EXPECT_NE(row(r.out, "TaskPlugin").find("device-constrained"), std::string::npos) << r.out;
  // With the partition that exists, the GPUs of both nodes are known to Slurm.
  const auto ok = cluster.run({VIGIL_SUBMIT_BINARY, "--check-config", "--partition=vigil"});
  EXPECT_NE(row(ok.out, "Gres").find("gpu on 2 nodes"), std::string::npos) << ok.out;
  EXPECT_EQ(cluster.run({"squeue", "-h"}).out, "") << "--check-config submitted something";
}

TEST(ConfigCheckOnCluster, names_the_nodes_slurm_knows_no_gpus_of) {
  LocalSlurmCluster::Options o;
  o.nodes = 2;
  o.bare_because = "the bare profile is what this test checks: a Slurm without GPU GRES";
  LocalSlurmCluster cluster(o);
  const auto r = cluster.run({VIGIL_SUBMIT_BINARY, "--check-config"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();  // warnings only
  const std::string gres = row(r.out, "GresTypes, Gres");
  EXPECT_NE(gres.find("warn"), std::string::npos) << r.out;
  EXPECT_NE(gres.find("gpu-0"), std::string::npos) << r.out;
  EXPECT_NE(gres.find("fix: GresTypes=gpu"), std::string::npos) << r.out;
}

}  // namespace
