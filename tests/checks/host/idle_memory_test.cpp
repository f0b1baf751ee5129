// host_idle_memory: /proc/meminfo as Linux 6.18 printed it at rest, with 6 GiB left in /dev/shm
// and with hugepages reserved (tests/fixtures/meminfo), and Slurm's job cgroup trees (v1 and v2,
// as slurm.schedmd.com/cgroups.html and cgroup_v2.html lay them out) built in a temporary root.
#include "host/idle_memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "check_factories.h"
#include "temp_dir.h"
#include "vigil/base/files.h"
#include "vigil/checks/sku.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string capture(const std::string& name) {
  return read_whole_file(std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/meminfo/" + name).value();
}

TEST(IdleMemoryParse, the_captures_give_what_neither_free_nor_reclaimable) {
  const auto idle = idle_memory::parse_meminfo(capture("idle-6.18.txt"));
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->total_kib, 24683792u);
  EXPECT_EQ(idle->available_kib, 24172412u);
  EXPECT_EQ(idle->hugetlb_kib, 0u);
  EXPECT_NEAR(idle_memory::used_percent(*idle), 2.07, 0.01);

  const auto shm = idle_memory::parse_meminfo(capture("shm-left-6.18.txt"));
  ASSERT_TRUE(shm);
  EXPECT_EQ(shm->shmem_kib, 6301212u);
  EXPECT_NEAR(idle_memory::used_percent(*shm), 27.53, 0.01);

  // Reserved hugepages are configuration: out of both the used and the total.
  const auto huge = idle_memory::parse_meminfo(capture("hugepages-6.18.txt"));
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->hugetlb_kib, 524288u);
  EXPECT_NEAR(idle_memory::used_percent(*huge),
              100.0 * (24683792 - 23127840 - 524288) / (24683792 - 524288), 1e-9);
  // Before Linux 4.16 there is no Hugetlb line: HugePages_Total x Hugepagesize.
  const auto old = idle_memory::parse_meminfo(
      std::regex_replace(capture("hugepages-6.18.txt"), std::regex("Hugetlb:[^\n]*\n"), ""));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->hugetlb_kib, 256u * 2048u);

  // Before Linux 3.14 (no MemAvailable), or not meminfo at all: nothing to judge.
  EXPECT_FALSE(idle_memory::parse_meminfo(
      std::regex_replace(capture("idle-6.18.txt"), std::regex("MemAvailable:[^\n]*\n"), "")));
  EXPECT_FALSE(idle_memory::parse_meminfo("cpu  1 2 3\n"));
}

class IdleMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.sysfs_root = dir_.path();
    ctx_.proc_root = dir_.path() + "/proc";
    fs::create_directories(ctx_.proc_root);
    meminfo("idle-6.18.txt");
  }
  void meminfo(const std::string& name) {
    std::ofstream(ctx_.proc_root + "/meminfo") << capture(name);
  }
  // A job's cgroup directory below /sys/fs/cgroup.
  void cgroup(const std::string& rel) {
    fs::create_directories(dir_.path() + "/sys/fs/cgroup/" + rel);
  }
  CheckResult run() { return make_host_idle_memory_check()->run(ctx_); }

  TempDir dir_;
  CheckContext ctx_;
};

TEST_F(IdleMemory, slurms_job_cgroups_say_which_jobs_run_in_v1_and_v2) {
  const std::string root = dir_.path() + "/sys/fs/cgroup";
  EXPECT_FALSE(idle_memory::slurm_jobs(root));     // no Slurm tree: cannot tell
  cgroup("system.slice/slurmstepd.scope/system");  // slurmd's own, at start (no job)
  ASSERT_TRUE(idle_memory::slurm_jobs(root));
  EXPECT_TRUE(idle_memory::slurm_jobs(root)->empty());
  cgroup("system.slice/slurmstepd.scope/job_77/step_extern");
  cgroup("system.slice/slurmstepd.scope/job_77/step_0");
  cgroup("system.slice/gpu-3_slurmstepd.scope/job_78/step_0");  // --enable-multiple-slurmd
  // v1: every hierarchy has the job; counted once.
  cgroup("memory/slurm/uid_1000/job_5/step_batch");
  cgroup("freezer/slurm/uid_1000/job_5/step_batch");
  cgroup("devices/slurm_gpu-3/uid_0/job_6");
  cgroup("memory/slurm/uid_1000/job_x");  // not a job id
  cgroup("memory/user.slice/job_9");      // not Slurm's
  EXPECT_EQ(*idle_memory::slurm_jobs(root), (std::vector<std::string>{"5", "6", "77", "78"}));
}

TEST_F(IdleMemory, an_idle_node_holding_shm_a_job_left_fails_and_names_it) {
  cgroup("memory/slurm");  // task/cgroup on v1, no job
  const CheckResult at_rest = run();
  EXPECT_EQ(at_rest.status, Status::kPass) << at_rest.message;
  EXPECT_NE(at_rest.message.find("idle node holds 0.488 GiB of 23.5 GiB (2.07%)"),
            std::string::npos)
      << at_rest.message;

  meminfo("shm-left-6.18.txt");
  const CheckResult left = run();
  EXPECT_EQ(left.status, Status::kFail) << left.message;
  EXPECT_EQ(left.fault_code, "VIGIL-IDLE-MEMORY-USED-PERCENT");
  EXPECT_NE(left.message.find("shmem 6.01 GiB"), std::string::npos) << left.message;
  ASSERT_EQ(left.measurements.size(), 1u);
  EXPECT_EQ(left.measurements[0].name, "idle_memory_used_percent");
  ASSERT_TRUE(left.measurements[0].threshold);

  // A SKU file's bound wins over the built-in one.
  SkuConfig sku;
  sku.thresholds["host_idle_memory"]["idle_memory_used_percent"] =
      Threshold{Op::kLe, 40, {}, "percent", {}, false, {}};
  ctx_.sku = &sku;
  EXPECT_EQ(run().status, Status::kPass);
}

TEST_F(IdleMemory, a_busy_node_or_one_without_job_cgroups_is_skipped_never_judged) {
  meminfo("shm-left-6.18.txt");  // would fail on an idle node
  const CheckResult blind = run();
  EXPECT_EQ(blind.status, Status::kSkipped) << blind.message;
  EXPECT_NE(blind.message.find("cannot tell whether the node is idle"), std::string::npos);

  cgroup("system.slice/slurmstepd.scope/job_41/step_0");
  const CheckResult busy = run();
  EXPECT_EQ(busy.status, Status::kSkipped) << busy.message;
  EXPECT_NE(busy.message.find("job 41 runs on it"), std::string::npos) << busy.message;

  // The job the check runs for (the epilog's, or `vigil-check run`'s own) does not count.
  ctx_.host.own_job = "41";
  EXPECT_EQ(run().status, Status::kFail);
}

TEST_F(IdleMemory, an_unreadable_or_foreign_meminfo_is_an_error) {
  cgroup("memory/slurm");
  fs::remove(ctx_.proc_root + "/meminfo");
  const CheckResult gone = run();
  EXPECT_EQ(gone.status, Status::kError) << gone.message;
  EXPECT_EQ(gone.fault_code, "VIGIL-MEM-QUERY");
  std::ofstream(ctx_.proc_root + "/meminfo") << "MemTotal: 100 kB\n";
  EXPECT_EQ(run().status, Status::kError);
}

}  // namespace
}  // namespace vigil
