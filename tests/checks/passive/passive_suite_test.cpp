// The passive suite of the Slurm hooks in its one child, against the fake NVML library: SKU
// detection in the child, results in registry order, and the time box turning a hung NVML call
// into `error` for the checks it stopped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scoped_env.h"
#include "temp_dir.h"
#include "vigil/checks/passive.h"
#include "vigil/checks/registry.h"

namespace vigil {

using testing::ScopedEnv;
using testing::TempDir;

namespace {

const std::string kNodes = std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nodes";

class PassiveSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    skus_ = load_sku_dir(std::string(VIGIL_SOURCE_DIR) + "/checks/thresholds", known_check_names());
    ASSERT_TRUE(skus_);
    ctx_.node = "gpu-0";
    ctx_.nvml_library = VIGIL_FAKE_NVML_LIBRARY;
    ctx_.sysfs_root = kNodes + "/gpu-0/sysfs";
    ctx_.kmsg_path = dir_.write("kmsg", "6,1,100,-;quiet\n");
    ctx_.proc_root = dir_.str();
    std::filesystem::create_directories(dir_.file("sys/kernel/random"));
    dir_.write("sys/kernel/random/boot_id", "0b5a1c9e-4f6e-4c41-9d1e-2f0a7b3c8d11\n");
    ctx_.state_dir = dir_.file("state");
  }
  // The gpu-0 fixture with `patch` merged over it.
  std::string fixture(const nlohmann::json& patch) {
    std::ifstream in(kNodes + "/gpu-0/nvml.json");
    nlohmann::json j = nlohmann::json::parse(in);
    j.merge_patch(patch);
    return dir_.write("nvml.json", j.dump());
  }
  PassiveRun run(const std::string& fixture_path, PassiveSelection selection,
                 std::chrono::milliseconds box) {
    ScopedEnv env("VIGIL_FAKE_NVML_FIXTURE", fixture_path);
    return run_passive_suite(ctx_, &*skus_.value, selection, std::chrono::steady_clock::now() + box,
                             nullptr);
  }
  static const CheckResult* find(const PassiveRun& r, std::string_view check) {
    for (const auto& c : r.results)
      if (c.check == check) return &c;
    return nullptr;
  }

  TempDir dir_;
  Loaded<SkuSet> skus_;
  CheckContext ctx_;
};

}  // namespace

TEST_F(PassiveSuite, healthy_node_detects_its_sku_in_the_child_and_reports_every_check_in_order) {
  auto r = run(kNodes + "/gpu-0/nvml.json", {}, std::chrono::seconds(30));
  ASSERT_NE(r.sku, nullptr) << r.sku_note;
  EXPECT_EQ(r.sku->name, "H100-SXM5-80GB");
  auto expected = passive_checks({});
  ASSERT_EQ(r.results.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.results[i].check, expected[i]->name());
    EXPECT_NE(r.results[i].status, Status::kFail)
        << r.results[i].check << ": " << r.results[i].message;
    EXPECT_NE(r.results[i].status, Status::kError)
        << r.results[i].check << ": " << r.results[i].message;
  }
  EXPECT_EQ(find(r, "gpu_leftovers"), nullptr);  // epilog only
  auto epilog = run(kNodes + "/gpu-0/nvml.json", {.after_job = true}, std::chrono::seconds(30));
  EXPECT_NE(find(epilog, "gpu_leftovers"), nullptr);
}

// nvml_fabric and nvml_recovery report through the hook's child like every check: their
// measurements ("enum" unit) parse on the way back, and a driver-stated recovery action fails.
TEST_F(PassiveSuite, fabric_and_recovery_verdicts_cross_the_child_boundary) {
  auto r = run(fixture({{"gpu_defaults", {{"recovery_action", 0}}}}), {}, std::chrono::seconds(30));
  const CheckResult* fabric = find(r, "nvml_fabric");
  const CheckResult* recovery = find(r, "nvml_recovery");
  ASSERT_NE(fabric, nullptr);
  ASSERT_NE(recovery, nullptr);
  EXPECT_EQ(fabric->status, Status::kPass) << fabric->message;
  EXPECT_EQ(fabric->measurements.size(), 8u);
  EXPECT_EQ(recovery->status, Status::kPass) << recovery->message;
  r = run(fixture({{"gpu_defaults", {{"recovery_action", 2}}}}), {}, std::chrono::seconds(30));
  recovery = find(r, "nvml_recovery");
  ASSERT_NE(recovery, nullptr);
  EXPECT_EQ(recovery->status, Status::kFail) << recovery->message;
  EXPECT_EQ(recovery->fault_code, "VIGIL-NVML-RECOVERY-ACTION");
}

// --cuda-sanity adds gpu_sanity last. This machine has no CUDA device (NVML is the fake's 8
// GPUs): the check must be an error, or not applicable in a build without CUDA, never a fail.
TEST_F(PassiveSuite, cuda_sanity_without_a_usable_cuda_device_is_an_error_never_a_fail) {
  auto r = run(kNodes + "/gpu-0/nvml.json", {.cuda_sanity = true}, std::chrono::seconds(30));
  ASSERT_FALSE(r.results.empty());
  const CheckResult& sanity = r.results.back();
  EXPECT_EQ(sanity.check, "gpu_sanity");
#ifdef VIGIL_HAVE_CUDA
  EXPECT_EQ(sanity.status, Status::kError) << sanity.message;
  EXPECT_EQ(sanity.fault_code, "VIGIL-CUDA-UNAVAILABLE") << sanity.message;
#else
  EXPECT_EQ(sanity.status, Status::kSkipped) << sanity.message;
#endif
  EXPECT_EQ(find(r, "gpu_leftovers"), nullptr);
}

TEST_F(PassiveSuite, a_fault_fails_its_check) {
  auto r = run(kNodes + "/gpu-2/nvml.json", {}, std::chrono::seconds(30));
  const CheckResult* remap = find(r, "nvml_row_remap");
  ASSERT_NE(remap, nullptr);
  EXPECT_EQ(remap->status, Status::kFail) << remap->message;
}

TEST_F(PassiveSuite, a_hung_nvml_call_is_cut_by_the_time_box_into_errors_never_fails) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(fixture({{"hang_calls", {"nvmlDeviceGetTotalEccErrors"}}}), {},
               std::chrono::milliseconds(1500));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 5.0);
  const CheckResult* count = find(r, "gpu_count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->status, Status::kPass);                // finished before the hang: kept
  EXPECT_EQ(find(r, "kmsg_xid")->status, Status::kPass);  // runs before the driver attach
  for (const char* stopped : {"nvml_ecc", "nvml_row_remap", "ib_port"}) {
    const CheckResult* c = find(r, stopped);
    ASSERT_NE(c, nullptr) << stopped;
    EXPECT_EQ(c->status, Status::kError) << stopped;
    EXPECT_EQ(c->fault_code, "VIGIL-CHECK-TIMEOUT") << stopped;
    EXPECT_NE(c->message.find("time box"), std::string::npos) << c->message;
  }
  for (const auto& c : r.results) EXPECT_NE(c.status, Status::kFail) << c.check;
}

// Review F14: a GPU with GSP trouble (Xid 119 "Timeout after 6s of waiting for RPC response")
// can block NVML from the first device query on. The fatal XID in the kernel log must still be
// reported: kmsg_xid runs before the suite attaches to the driver, so the time box cannot take it.
TEST_F(PassiveSuite, a_fatal_xid_is_reported_even_when_the_driver_blocks_every_query) {
  ctx_.kmsg_path =
      dir_.write("kmsg",
                 "3,7,100,-;NVRM: Xid (PCI:0000:18:00): 119, pid=1, name=python, Timeout after 6s "
                 "of waiting for RPC response from GPU0 GSP!\n");
  auto r = run(fixture({{"hang_calls", {"nvmlDeviceGetName", "nvmlDeviceGetPciInfo_v3"}}}), {},
               std::chrono::milliseconds(1500));
  ASSERT_FALSE(r.results.empty());
  EXPECT_EQ(r.results.front().check, "kmsg_xid");
  const CheckResult* xid = find(r, "kmsg_xid");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->status, Status::kFail) << xid->message;
  EXPECT_NE(xid->message.find("XID 119"), std::string::npos) << xid->message;
  const CheckResult* count = find(r, "gpu_count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->status, Status::kError) << count->message;  // stopped by the box, not failed
}

TEST_F(PassiveSuite, job_gpus_limit_leftovers_to_the_jobs_own_gpus) {
  // gpu2 still runs a process after the job; it was the job's GPU in one case, not the other.
  std::ifstream in(kNodes + "/gpu-0/nvml.json");
  nlohmann::json j = nlohmann::json::parse(in);
  for (int i = 0; i < 8; ++i) {
    nlohmann::json g = {{"processes", nlohmann::json::array()},
                        {"utilization", {{"gpu", 0}, {"memory", 0}}}};
    if (i == 2)
      g["processes"] = {{{"pid", 4242}, {"used_memory_bytes", 40ull << 30}, {"name", "python"}}};
    if (i < static_cast<int>(j["gpus"].size())) j["gpus"][i].merge_patch(g);
  }
  const std::string path = dir_.write("leftover.json", j.dump());
  ctx_.leftovers.grace = std::chrono::milliseconds(50);
  ctx_.leftovers.job_id = "77";
  // The pid's cgroup (proc_root is the temp dir) puts it in job 77, Slurm's cgroup v2 layout.
  std::filesystem::create_directories(dir_.file("4242"));
  dir_.write("4242/cgroup", "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n");
  ctx_.leftovers.job_gpus = std::vector<int>{0, 1, 2, 3};
  auto mine = run(path, {.after_job = true}, std::chrono::seconds(30));
  const CheckResult* left = find(mine, "gpu_leftovers");
  ASSERT_NE(left, nullptr);
  EXPECT_EQ(left->status, Status::kFail) << left->message;
  EXPECT_NE(left->message.find("gpu2 pid 4242"), std::string::npos) << left->message;
  ctx_.leftovers.job_id = "78";  // the same process belongs to another job: never this job's fault
  auto other_job = run(path, {.after_job = true}, std::chrono::seconds(30));
  EXPECT_EQ(find(other_job, "gpu_leftovers")->status, Status::kPass)
      << find(other_job, "gpu_leftovers")->message;
  ctx_.leftovers.job_id = "";  // owner cannot be proven: reported, never drained
  auto unknown = run(path, {.after_job = true}, std::chrono::seconds(30));
  EXPECT_EQ(find(unknown, "gpu_leftovers")->status, Status::kWarn);
  ctx_.leftovers.job_gpus =
      std::vector<int>{4, 5, 6, 7};  // and not on the job's GPUs: not ours to judge
  auto other = run(path, {.after_job = true}, std::chrono::seconds(30));
  EXPECT_EQ(find(other, "gpu_leftovers")->status, Status::kPass)
      << find(other, "gpu_leftovers")->message;
}

}  // namespace vigil
