// host_allreduce end to end: the check launches the real vigil-allreduce under the real mpirun.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "allreduce/allreduce_launch.h"
#include "check_factories.h"
#include "scoped_env.h"
#include "vigil/checks/check.h"

using namespace std::chrono_literals;

namespace {

using vigil::testing::ScopedEnv;

vigil::CheckContext host_ctx() {
  vigil::CheckContext ctx;
  ctx.node = "ci";
  ctx.allreduce.mpirun = VIGIL_MPIRUN;
  ctx.allreduce.binary = VIGIL_ALLREDUCE_BIN;
  ctx.has_gpu_runtime = false;
  return ctx;
}

vigil::AllreduceTuning small() {
  vigil::AllreduceTuning t;
  t.min_bytes = "64K";
  t.max_bytes = "1M";
  return t;
}

}  // namespace

TEST(HostAllreduceCheck, passes_and_reports_busbw_from_real_mpi) {
  auto r = vigil::make_host_allreduce_check(small())->run(host_ctx());
  EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
  ASSERT_EQ(r.measurements.size(), 1u);
  EXPECT_EQ(r.measurements[0].name, "busbw");
  EXPECT_EQ(r.measurements[0].unit, "GB/s");
  EXPECT_GT(r.measurements[0].value, 0.0);  // 2 ranks: busbw = algbw
  EXPECT_NE(r.message.find("2 ranks"), std::string::npos) << r.message;
}

TEST(HostAllreduceCheck, corrupted_result_fails_with_wrong_results) {
  ScopedEnv corrupt("VIGIL_ALLREDUCE_CORRUPT_RANK", "1");
  auto r = vigil::make_host_allreduce_check(small())->run(host_ctx());
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-ALLREDUCE-WRONG-RESULTS");
}

TEST(HostAllreduceCheck, stalled_rank_fails_with_timeout_in_time) {
  ScopedEnv stall("VIGIL_ALLREDUCE_STALL_RANK", "1");
  auto tuning = small();
  tuning.timeout = 3s;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = vigil::make_host_allreduce_check(tuning)->run(host_ctx());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
  EXPECT_EQ(r.message.rfind("timeout after 3 s", 0), 0u) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-ALLREDUCE-TIMEOUT");
  EXPECT_LT(wall, 3.0 + 5.0);
}

TEST(HostAllreduceCheck, setup_failure_is_an_error) {
  // The nccl backend on a machine without a GPU (or a build without NCCL) cannot start.
  vigil::AllreduceSpec spec;
  spec.check = "nccl_allreduce_nvlink";
  spec.fault_prefix = "VIGIL-NCCL";
  spec.backend = "nccl";
  spec.transport = "nvlink";
  spec.ranks = 1;
  spec.min_bytes = spec.max_bytes = "1M";
  spec.timeout = 60s;
  auto r = vigil::run_allreduce_check(host_ctx(), spec);
  EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-SETUP");
  EXPECT_NE(r.message.find("setup failed"), std::string::npos) << r.message;
}
