// Issue 42 on the production profile of the local cluster (docs/local-cluster.md "Profiles"):
// task/cgroup, proctrack/cgroup, ConstrainDevices=yes and 8 GRES GPUs per node over device nodes
// the cluster made (NVIDIA's major 195). Which Slurm steps can talk to which GPU, seen the way
// vigil-check sees it: through the fake NVML, whose nvmlDeviceGetHandleByIndex_v2 opens each GPU's
// device node and answers NVML_ERROR_NO_PERMISSION where the step's device cgroup denies it, as
// the real library does (nvml.h). This is the table of the wave-4 review's W1 ("Verified after
// the review", docs/recheck.md), now a test that fails if Slurm or the fake stop behaving so:
//   batch step of an --exclusive job (vigil-submit's node job)     every GPU
//   srun --gres=gpu:N (a user job)                                  its N GPUs only
//   a plain srun step inside the --exclusive job (mpirun's ranks)   none
//   srun --gres=gpu:8 inside that job                               every GPU
//   a plain srun step of an --exclusive --gres=gpu:8 job (fabric      every GPU
//   jobs, held re-checks)
//   srun -Z (vigil-submit's re-check and reset today)               none: VIGIL-NVML-GPU-HIDDEN
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "local_slurm_cluster.h"
#include "temp_dir.h"
#include "vigil/report/report.h"
#include "vigil/report/status.h"

namespace {

using vigil::Status;
using vigil::testing::CommandOptions;
using vigil::testing::LocalSlurmCluster;
using vigil::testing::TempDir;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What one step saw: the nvml_ecc check's status, fault code and how many GPUs it measured.
struct Seen {
  Status status = Status::kError;
  std::string fault_code;
  int gpus = -1;
  std::string text;
};

class ProductionSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = LocalSlurmCluster::production_unavailable()) GTEST_SKIP() << *why;
    ASSERT_FALSE(run_.path().empty());
    cluster_ = std::make_unique<LocalSlurmCluster>(LocalSlurmCluster::Options{.nodes = 2});
    // vigil-check's nvml_ecc on the node it runs on, against an 8-GPU fixture, the node's GPUs
    // at DIR/dev/<node> (what tests/support/fake-node-check.sh sets for every cluster test).
    script_ = run_.path() + "/see-gpus.sh";
    std::ofstream(script_) << "#!/bin/bash\n"
                              "label=$1 node=${SLURMD_NODENAME:?}\n"
                              "export VIGIL_FAKE_NVML_FIXTURE=" VIGIL_SOURCE_DIR
                              "/tests/fixtures/nvml/healthy_8x_h100.json\n"
                              "export VIGIL_FAKE_GPU_DEV_DIR=" +
                                  cluster_->dir() +
                                  "/dev/$node\n"
                                  "mkdir -p " +
                                  run_.path() +
                                  "/state-$label-$node\n" VIGIL_CHECK_BINARY
                                  " run --only nvml_ecc --nvml-library " VIGIL_FAKE_NVML_LIBRARY
                                  " --node $node --thresholds " VIGIL_SOURCE_DIR
                                  "/checks/thresholds --state-dir " +
                                  run_.path() + "/state-$label-$node --format json --output " +
                                  run_.path() +
                                  "/$label-$node.json\n"
                                  "exit 0  # the verdict is in the report\n";
    std::filesystem::permissions(script_, std::filesystem::perms::owner_all);
  }

  Seen seen(const std::string& label, const std::string& node) const {
    Seen s;
    s.text = read_file(run_.path() + "/" + label + "-" + node + ".json");
    const auto parsed = vigil::parse_node_report(std::string_view(s.text));
    if (!parsed) {
      s.text += "\n(unparsable: " + parsed.error + ")";
      return s;
    }
    for (const auto& c : parsed.value->checks) {
      if (c.check != "nvml_ecc") continue;
      s.status = c.status;
      s.fault_code = c.fault_code;
      s.gpus = 0;
      for (const auto& m : c.measurements) s.gpus += m.name == "volatile_uncorrected_ecc";
    }
    return s;
  }

  long submit(const std::vector<std::string>& args) const {
    std::string failure;
    const auto id = cluster_->submit(args, {}, &failure);
    EXPECT_TRUE(id) << failure;
    return id.value_or(-1);
  }

  TempDir run_;
  std::unique_ptr<LocalSlurmCluster> cluster_;
  std::string script_;
};

TEST_F(ProductionSlurm, each_step_sees_exactly_the_gpus_its_allocation_holds) {
  const std::string out = "--output=" + run_.path() + "/%j.out";
  // vigil-submit's node job: an --exclusive batch job without a GPU request. Its batch step holds
  // the whole node; a plain srun step inside it holds no GRES; one with --gres=gpu:8 holds all.
  const long node_job = submit(
      {"--nodelist=gpu-0", "--exclusive", out, "--wrap",
       script_ + " batch; srun " + script_ + " step; srun --gres=gpu:8 " + script_ + " step-gres"});
  // vigil-submit's fabric job, and the hold of a re-check: --exclusive and --gres=gpu:8 on the
  // allocation. A plain step inside it (how mpirun starts its daemon on another node, or the
  // held re-check's step) gets every GPU the job asked for (srun(1), --gres: a step gets all the
  // job's GRES by default, except those --exclusive alone gave it).
  const long gres_job = submit({"--nodelist=gpu-0", "--exclusive", "--gres=gpu:8", out, "--wrap",
                                "srun " + script_ + " gres-job-step"});
  // A user job that holds 2 of gpu-1's GPUs.
  const long user_job =
      submit({"--nodelist=gpu-1", "--gres=gpu:2", out, "--wrap", script_ + " user"});
  ASSERT_TRUE(cluster_->wait_for_jobs({node_job, gres_job, user_job}, std::chrono::seconds(300)));
  // srun -Z: no allocation, so no GRES, so every GPU denied (Slurm: a faked credential without
  // GRES; gres_g_get_devices(NULL) denies every GRES file).
  const auto z =
      cluster_->run({"srun", "-Z", "--nodelist=gpu-1", "-N1", "-n1", script_, "noalloc"});
  ASSERT_EQ(z.exit_code, 0) << z.describe();

  const Seen batch = seen("batch", "gpu-0");
  EXPECT_EQ(batch.status, Status::kPass) << batch.text;
  EXPECT_EQ(batch.gpus, 8) << batch.text;
  const Seen step_gres = seen("step-gres", "gpu-0");
  EXPECT_EQ(step_gres.status, Status::kPass) << step_gres.text;
  EXPECT_EQ(step_gres.gpus, 8) << step_gres.text;
  const Seen gres_job_step = seen("gres-job-step", "gpu-0");
  EXPECT_EQ(gres_job_step.status, Status::kPass) << gres_job_step.text;
  EXPECT_EQ(gres_job_step.gpus, 8) << gres_job_step.text;
  for (const auto& [label, node] : {std::pair{"step", "gpu-0"}, std::pair{"noalloc", "gpu-1"}}) {
    SCOPED_TRACE(label);
    const Seen s = seen(label, node);
    EXPECT_EQ(s.status, Status::kError)
        << "hidden GPUs are Vigil's setup, never a fail: " << s.text;
    EXPECT_EQ(s.fault_code, "VIGIL-NVML-GPU-HIDDEN") << s.text;
    EXPECT_EQ(s.gpus, 0) << s.text;
  }
  // The user job sees its own 2 GPUs and none of the others.
  const Seen user = seen("user", "gpu-1");
  EXPECT_EQ(user.status, Status::kError) << user.text;
  EXPECT_EQ(user.fault_code, "VIGIL-NVML-GPU-HIDDEN") << user.text;
  EXPECT_EQ(user.gpus, 2) << user.text;
}

// A job of two nodes places one step on each simulated node; each node's cgroup tree is its
// own, so gpu-1's part of the step sees gpu-1's GPUs and is not killed when gpu-0's part ends
// first (several slurmd sharing one tree would share one freezer cgroup).
TEST_F(ProductionSlurm, a_two_node_step_holds_the_gpus_of_each_node) {
  const auto r = cluster_->run(
      {"srun", "-N2", "--ntasks-per-node=1", "--gres=gpu:8", "bash", "-c",
       "if [ $SLURMD_NODENAME = gpu-0 ]; then exit 0; fi; sleep 2; " + script_ + " twonode"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const Seen s = seen("twonode", "gpu-1");
  EXPECT_EQ(s.status, Status::kPass) << s.text;
  EXPECT_EQ(s.gpus, 8) << s.text;
}

// host_idle_memory (docs/checks-host.md) on Slurm's own job cgroups: this cluster's nodes run
// Slurm's cgroup v1 plugin in a tree of their own, named slurm_<node> as Slurm names it for
// several slurmd on one host. A step alone on its node is the job the check runs for, so the
// node counts as idle and is judged (pass, warn or fail: this machine's real memory); told it
// runs for another job, the check finds the step's own job cgroup and skips the busy node.
TEST_F(ProductionSlurm, idle_memory_tells_an_idle_node_from_a_busy_one_by_slurms_job_cgroups) {
  auto idle_memory = [&](const std::string& job_id) {
    std::vector<std::string> argv = {"srun",
                                     "--nodelist=gpu-0",
                                     "-N1",
                                     "-n1",
                                     VIGIL_CHECK_BINARY,
                                     "run",
                                     "--only",
                                     "host_idle_memory",
                                     "--state-dir",
                                     run_.path() + "/state-idle",
                                     "--quiet",
                                     "--format",
                                     "json"};
    if (!job_id.empty()) argv.insert(argv.end(), {"--job-id", job_id});
    const auto r = cluster_->run(argv);
    const auto parsed = vigil::parse_node_report(std::string_view(r.out));
    EXPECT_TRUE(parsed) << r.describe();
    return parsed && parsed.value->checks.size() == 1 ? parsed.value->checks[0]
                                                      : vigil::CheckResult{};
  };
  const vigil::CheckResult alone = idle_memory("");
  EXPECT_NE(alone.status, Status::kSkipped) << alone.message;
  EXPECT_NE(alone.status, Status::kError) << alone.message;
  EXPECT_TRUE(alone.message.starts_with("idle node holds")) << alone.message;
  const vigil::CheckResult busy = idle_memory("999999");
  EXPECT_EQ(busy.status, Status::kSkipped) << busy.message;
  EXPECT_TRUE(busy.message.starts_with("the node is not idle: job ")) << busy.message;
}

}  // namespace
