// gpu_leftovers' judgement (review F16): teardown, residents, and ownership by cgroup rather than
// by SLURM_JOB_GPUS index.
#include "passive/leftovers.h"

#include <gtest/gtest.h>

#include <map>

namespace vigil::leftovers {
namespace {

nvml::GpuActivity gpu(int index, std::vector<std::pair<unsigned, std::string>> procs) {
  nvml::GpuActivity a;
  a.gpu = index;
  a.processes.emplace();
  for (auto& [pid, name] : procs) a.processes->push_back({pid, 40ull << 30, name});
  return a;
}

struct Cgroups {
  std::map<unsigned, std::string> files;
  std::optional<std::string> operator()(unsigned pid) const {
    auto it = files.find(pid);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace

TEST(Leftovers, job_of_cgroup_reads_slurms_v1_and_v2_layouts) {
  EXPECT_EQ(job_of_cgroup("0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n"), "77");
  EXPECT_EQ(job_of_cgroup("12:pids:/\n4:memory:/slurm/uid_1000/job_4242/step_batch\n"), "4242");
  EXPECT_EQ(job_of_cgroup("0::/system.slice/slurmstepd.scope/job_9\n"), "9");
  EXPECT_EQ(job_of_cgroup("0::/system.slice/nvidia-dcgm.service\n"), "");
  EXPECT_EQ(job_of_cgroup("0::/user.slice/job_x/\n"), "");  // not a job number
}

TEST(Leftovers, only_a_process_proven_this_jobs_by_its_cgroup_fails) {
  Rules rules{std::vector<int>{0, 1, 2, 3}, "77", {"nvidia-cuda-mps-server"}, {}};
  Cgroups cg{{{4242, "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n"},
              {5000, "0::/system.slice/slurmstepd.scope/job_78/step_0/user/task_0\n"},
              {6000, "0::/system.slice/nvidia-dcgm.service\n"}}};
  // The MPS server as /proc/PID/comm names it: cut to 15 characters by the kernel.
  const auto reads =
      std::vector<nvml::GpuActivity>{gpu(2, {{4242, "python"}}), gpu(3, {{5000, "python"}}),
                                     gpu(5, {{6000, "dcgm"}}), gpu(1, {{7000, "nvidia-cuda-mps"}})};
  const Verdict v = judge(reads, reads, rules, cg);
  ASSERT_EQ(v.ours.size(), 1u);
  EXPECT_EQ(v.ours[0], "gpu2 pid 4242 python 40 GiB");
  EXPECT_TRUE(v.unproven.empty());
  // Another job's process (a mismatched GRES index put it on "our" gpu3), a system service on
  // another GPU and the MPS server are reported, never blamed on this job.
  ASSERT_EQ(v.ignored.size(), 3u);
  EXPECT_NE(v.ignored[0].find("(job 78)"), std::string::npos) << v.ignored[0];
  EXPECT_NE(v.ignored[1].find("in no job's cgroup"), std::string::npos) << v.ignored[1];
  EXPECT_NE(v.ignored[2].find("resident"), std::string::npos) << v.ignored[2];
}

// A site whose proctrack plugin keeps no job cgroups (proctrack/linuxproc): a stuck process on
// a job GPU is not in any job's cgroup. Unproven: warned, never passed silently.
TEST(Leftovers, a_process_in_no_job_cgroup_on_a_job_gpu_warns) {
  Rules rules{std::vector<int>{0}, "77", {"nvidia-cuda-mps-server"}, {}};
  Cgroups cg{{{4242, "0::/user.slice/user-1000.slice/session-3.scope\n"}}};
  const auto reads = std::vector<nvml::GpuActivity>{gpu(0, {{4242, "python"}})};
  const Verdict v = judge(reads, reads, rules, cg);
  EXPECT_TRUE(v.ours.empty());
  ASSERT_EQ(v.unproven.size(), 1u);
  EXPECT_NE(v.unproven[0].find("in no job's cgroup"), std::string::npos) << v.unproven[0];
}

TEST(Leftovers, a_process_gone_by_the_second_read_was_tearing_down) {
  Rules rules{std::vector<int>{0}, "77", {}, {}};
  Cgroups cg{{{4242, "0::/slurm/job_77/step_0\n"}}};
  const Verdict v = judge({gpu(0, {{4242, "python"}})}, {gpu(0, {})}, rules, cg);
  EXPECT_TRUE(v.ours.empty());
  EXPECT_TRUE(v.unproven.empty());
  // A pid that appears only in the second read is new work, not a leftover either.
  const Verdict late = judge({gpu(0, {})}, {gpu(0, {{4242, "python"}})}, rules, cg);
  EXPECT_TRUE(late.ours.empty());
}

TEST(Leftovers, an_unreadable_owner_on_a_job_gpu_warns_and_elsewhere_is_ignored) {
  const auto reads = std::vector<nvml::GpuActivity>{gpu(2, {{4242, "python"}})};
  Cgroups none;
  Verdict mine = judge(reads, reads, Rules{std::vector<int>{2}, "77", {}, {}}, none);
  EXPECT_TRUE(mine.ours.empty());
  EXPECT_EQ(mine.unproven.size(), 1u);
  Verdict other = judge(reads, reads, Rules{std::vector<int>{4}, "77", {}, {}}, none);
  EXPECT_TRUE(other.unproven.empty());
  EXPECT_EQ(other.ignored.size(), 1u);
  // SLURM_JOB_ID unknown: a job cgroup proves nothing about *this* job.
  Cgroups cg{{{4242, "0::/slurm/job_77/step_0\n"}}};
  Verdict no_id = judge(reads, reads, Rules{std::vector<int>{2}, "", {}, {}}, cg);
  EXPECT_TRUE(no_id.ours.empty());
  EXPECT_EQ(no_id.unproven.size(), 1u);
  // This check's own pids never count.
  Verdict own = judge(reads, reads, Rules{std::nullopt, "77", {}, {4242}}, cg);
  EXPECT_TRUE(own.ours.empty() && own.unproven.empty() && own.ignored.empty());
}

}  // namespace vigil::leftovers
