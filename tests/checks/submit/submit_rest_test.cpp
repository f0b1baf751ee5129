// vigil-submit reading Slurm over slurmrestd (--slurm-backend rest, JWT) against the real local
// cluster (gpu-[0-3], scripts/local-cluster.sh --rest): a dry run plans exactly what the libslurm
// run plans, from the same node states and job queue. On Slurm 22.05 (v0.0.38, no node updates)
// the REST backend is refused with what to use instead, as the drainer's is.
#include <gtest/gtest.h>
#include <slurm/slurm_version.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "slurm_test_cluster.h"
#include "vigil/base/process.h"

namespace vigil::submit {
namespace {

using vigil::testing::SlurmTestCluster;

constexpr bool kRestCanUpdate = SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0);

LaunchResult run_submit(const SlurmTestCluster& c, std::vector<std::string> args) {
  std::vector<std::string> argv = {VIGIL_SUBMIT_BINARY,
                                   "--job-script",
                                   std::string(VIGIL_SOURCE_DIR) + "/cronjobs/vigil-check.sbatch",
                                   "--run-id",
                                   "rest-test",
                                   "--seed",
                                   "7",
                                   "--dry-run",
                                   "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  LaunchOptions o;
  o.env = {{"SLURM_CONF", c.conf()}};
  o.unset_env = {"SLURM_JWT"};
  auto r = run_command(argv, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? r.value() : LaunchResult{};
}

// --dry-run prints the commands, one a line, before the --json document.
nlohmann::json json_part(const std::string& out) {
  const size_t at = out.rfind("\n{");
  return nlohmann::json::parse(at == std::string::npos ? out : out.substr(at + 1), nullptr, false);
}

std::vector<std::string> rest_args(const SlurmTestCluster& c) {
  return {"--slurm-backend",         "rest",
          "--slurm-rest-url",        c.local().rest_url(),
          "--slurm-rest-token-file", c.local().jwt_token_file()};
}

TEST(SubmitRest, a_dry_run_over_slurmrestd_plans_what_the_libslurm_run_plans) {
  if (!kRestCanUpdate) GTEST_SKIP() << "slurmrestd of this release is refused (below)";
  SlurmTestCluster* cluster = SlurmTestCluster::get(/*rest=*/true);
  ASSERT_NE(cluster, nullptr);
  ASSERT_TRUE(cluster->reset_nodes());
  // Something to tell apart: an admin drain, a vigil drain (re-checked), a held vigil job.
  cluster->run("scontrol update nodename=gpu-1 state=drain reason='admin: cable'");
  cluster->run("scontrol update nodename=gpu-2 state=drain reason='vigil: gpu_gemm slow'");
  std::string failure;
  auto job = cluster->local().submit(
      {"--hold", "--nodelist=gpu-3", "--job-name=vigil-check", "--wrap=true"}, {}, &failure);
  ASSERT_TRUE(job.has_value()) << failure;

  const LaunchResult lib = run_submit(*cluster, {});
  const LaunchResult rest = run_submit(*cluster, rest_args(*cluster));
  cluster->run("scancel " + std::to_string(*job));
  ASSERT_EQ(lib.exit_code, 0) << lib.err;
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  const auto lj = json_part(lib.out);
  const auto rj = json_part(rest.out);
  ASSERT_FALSE(rj.is_discarded()) << rest.out;
  ASSERT_FALSE(lj.is_discarded()) << lib.out;
  EXPECT_EQ(rj["nodes"], lj["nodes"]);
  EXPECT_EQ(rj["commands"].size(), lj["commands"].size());
  // The plan is the real one, not an empty table read as "no nodes".
  ASSERT_EQ(rj["nodes"].size(), 4u) << rj.dump(2);
  EXPECT_NE(rj["nodes"][1]["why"].get<std::string>().find("admin: cable"), std::string::npos)
      << rj.dump(2);
  EXPECT_EQ(rj["nodes"][2]["action"], "recheck") << rj.dump(2);
  EXPECT_NE(rj["nodes"][3]["why"].get<std::string>().find("vigil job"), std::string::npos)
      << rj.dump(2);
  EXPECT_EQ(rj["nodes"][0]["action"], "submit") << rj.dump(2);
}

TEST(SubmitRest, a_bad_token_and_a_missing_url_are_errors_that_submit_nothing) {
  SlurmTestCluster* cluster = SlurmTestCluster::get(/*rest=*/true);
  ASSERT_NE(cluster, nullptr);
  const LaunchResult no_url = run_submit(*cluster, {"--slurm-backend", "rest"});
  EXPECT_EQ(no_url.exit_code, 2);
  EXPECT_NE(no_url.err.find("--slurm-rest-url"), std::string::npos) << no_url.err;
  auto args = rest_args(*cluster);
  args.back() = "/nonexistent/jwt";
  const LaunchResult bad = run_submit(*cluster, args);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("/nonexistent/jwt"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out.find("sbatch"), std::string::npos) << bad.out;
}

TEST(SubmitRest, slurmrestd_22_05_is_refused_with_what_to_use_instead) {
  if (kRestCanUpdate) GTEST_SKIP() << "this build's Slurm serves v0.0.40+";
  SlurmTestCluster* cluster = SlurmTestCluster::get(/*rest=*/true);
  ASSERT_NE(cluster, nullptr);
  const LaunchResult r = run_submit(*cluster, rest_args(*cluster));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("slurm.backend: libslurm"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace vigil::submit
