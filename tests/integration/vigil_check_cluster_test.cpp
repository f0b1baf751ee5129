// Issue 2, end to end: on a fresh local Slurm cluster, one ordinary sbatch job per node runs
// `vigil-check run` (tests/integration/node-check-job.sh; fake hardware by node name).
// The reports must show exactly gpu-2 failing, with nvml_row_remap and a reason that says why;
// gpu-0, gpu-1 and gpu-3 pass.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "local_slurm_cluster.h"
#include "temp_dir.h"
#include "vigil/report/report.h"
#include "vigil/report/status.h"

namespace {

using vigil::Status;
using vigil::testing::CommandOptions;
using vigil::testing::LocalSlurmCluster;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

using vigil::testing::TempDir;

std::vector<std::string> checks_with_status(const vigil::NodeReport& report, Status status) {
  std::vector<std::string> names;
  for (const auto& c : report.checks) {
    if (c.status == status) names.push_back(c.check);
  }
  return names;
}

const vigil::CheckResult* find_check(const vigil::NodeReport& report, const std::string& name) {
  for (const auto& c : report.checks) {
    if (c.check == name) return &c;
  }
  return nullptr;
}

TEST(VigilCheckOnCluster, sbatch_on_every_node_reports_only_gpu2_failing_with_row_remap) {
  TempDir run;
  ASSERT_FALSE(run.path().empty());
  LocalSlurmCluster cluster({.nodes = 4});

  CommandOptions job_env;
  job_env.env = {{"VIGIL_RUN_DIR", run.path()},
                 {"VIGIL_SOURCE_DIR", VIGIL_SOURCE_DIR},
                 {"VIGIL_BUILD_DIR", VIGIL_BINARY_DIR},
                 {"VIGIL_CHECK", VIGIL_CHECK_BINARY},
                 {"VIGIL_NVML_LIBRARY", VIGIL_FAKE_NVML_LIBRARY},
                 {"VIGIL_ALLREDUCE", VIGIL_ALLREDUCE_BINARY}};
  std::map<std::string, long> job_of;
  std::vector<long> ids;
  for (const auto& node : cluster.node_names()) {
    std::string failure;
    const auto id =
        // --exclusive, as vigil-submit's node job: on the production profile a job that holds
        // no GPU may open none (ConstrainDevices=yes), and the NVML checks would be `error`.
        cluster.submit({"--nodelist=" + node, "--exclusive", "--job-name=vigil-check-" + node,
                        "--output=" + run.path() + "/" + node + ".log",
                        std::string(VIGIL_SOURCE_DIR) + "/tests/integration/node-check-job.sh"},
                       job_env, &failure);
    ASSERT_TRUE(id) << failure;
    job_of[node] = *id;
    ids.push_back(*id);
  }
  ASSERT_TRUE(cluster.wait_for_jobs(ids, std::chrono::seconds(600)))
      << "jobs still queued or running after 600 s:\n"
      << cluster.run({"squeue"}).out;

  for (const auto& node : cluster.node_names()) {
    SCOPED_TRACE(node);
    const std::string job_log = read_file(run.path() + "/" + node + ".log");
    const auto text = read_file(run.path() + "/" + node + ".json");
    ASSERT_FALSE(text.empty()) << "no report from " << node << "; job output:\n" << job_log;
    const auto parsed = vigil::parse_node_report(std::string_view(text));
    ASSERT_TRUE(parsed) << parsed.error << "\n" << text;
    const vigil::NodeReport& report = *parsed.value;
    EXPECT_EQ(report.node, node);
    EXPECT_EQ(report.job_id.value_or(""), std::to_string(job_of[node]));
    EXPECT_TRUE(checks_with_status(report, Status::kError).empty())
        << "checks that could not run: "
        << ::testing::PrintToString(checks_with_status(report, Status::kError)) << "\n"
        << job_log;

    // The fake NVML fixture was really loaded: the row-remap check ran and measured.
    const auto* remap = find_check(report, "nvml_row_remap");
    ASSERT_NE(remap, nullptr) << text;
    EXPECT_FALSE(remap->measurements.empty()) << text;

    if (node == "gpu-2") {
      EXPECT_EQ(report.overall(), Status::kFail) << text;
      EXPECT_EQ(checks_with_status(report, Status::kFail),
                std::vector<std::string>{"nvml_row_remap"})
          << text;
      EXPECT_NE(remap->message.find("remap"), std::string::npos) << remap->message;
      EXPECT_EQ(remap->fault_code.rfind("VIGIL-NVML-", 0), 0u) << remap->fault_code;
      EXPECT_EQ(remap->short_name, "remap") << text;
      EXPECT_EQ(cluster.job_field(job_of[node], "ExitCode"), "1:0");
    } else {
      EXPECT_EQ(report.overall(), Status::kPass) << text;
      EXPECT_EQ(remap->status, Status::kPass) << text;
      EXPECT_EQ(cluster.job_field(job_of[node], "ExitCode"), "0:0");
    }
  }
}

}  // namespace
