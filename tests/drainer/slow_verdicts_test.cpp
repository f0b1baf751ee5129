// fold_verdicts: how a fail-slow verdict changes what the policy engine sees.
#include "vigil/drainer/slow_verdicts.h"

#include <gtest/gtest.h>

#include "vigil/drainer/config.h"

namespace vigil::drainer {
namespace {

CheckResult gemm(Status st) {
  CheckResult c;
  c.check = "gpu_gemm";
  c.short_name = "gemm";
  c.status = st;
  c.message = st == Status::kError ? "cuBLASLt failed" : "";
  return c;
}

detect::ReportVerdicts verdicts(Status st, bool confirmed) {
  detect::Verdict v;
  v.check = "gpu_gemm";
  v.measurement = "gemm_bf16_tflops";
  v.unit_id = "gpu3";
  v.status = st;
  v.baseline = "peers";
  v.deviation = 0.11;
  v.confirmed = confirmed;
  v.repeats = confirmed ? 2 : 0;
  v.message = "gpu3 gemm_bf16_tflops 712 TFLOP/s, 11% below its 7 peers (801)";
  detect::ReportVerdicts r;
  r.node = "gpu-1";
  r.verdicts = {v};
  r.worst_by_check = {v};
  return r;
}

TEST(FoldVerdicts, a_confirmed_slow_figure_fails_with_its_own_fault_code_and_baseline) {
  NodeReport r;
  r.checks = {gemm(Status::kPass)};
  fold_verdicts(r, verdicts(Status::kFail, true), default_policy());
  EXPECT_EQ(r.checks[0].status, Status::kFail);
  EXPECT_EQ(r.checks[0].fault_code, kSlowConfirmedFaultCode);
  EXPECT_NE(r.checks[0].message.find("11% below its 7 peers"), std::string::npos);
  EXPECT_NE(r.checks[0].message.find("confirmed by 2 repeats"), std::string::npos);
}

TEST(FoldVerdicts, an_unconfirmed_slow_figure_fails_with_the_unconfirmed_code) {
  NodeReport r;
  r.checks = {gemm(Status::kPass)};
  fold_verdicts(r, verdicts(Status::kFail, false), default_policy());
  EXPECT_EQ(r.checks[0].status, Status::kFail);
  EXPECT_EQ(r.checks[0].fault_code, kSlowFaultCode);
}

TEST(FoldVerdicts, a_warn_verdict_only_warns_and_error_results_are_left_alone) {
  NodeReport r;
  r.checks = {gemm(Status::kPass), gemm(Status::kError)};
  r.checks[1].check = "gpu_gemm";
  fold_verdicts(r, verdicts(Status::kWarn, false), default_policy());
  EXPECT_EQ(r.checks[0].status, Status::kWarn);
  EXPECT_TRUE(r.checks[0].fault_code.empty());
  EXPECT_EQ(r.checks[1].status, Status::kError);
  EXPECT_EQ(r.checks[1].message, "cuBLASLt failed");
  NodeReport e;
  e.checks = {gemm(Status::kError)};
  fold_verdicts(e, verdicts(Status::kFail, true), default_policy());
  EXPECT_EQ(e.checks[0].status, Status::kError) << "a check that could not run never drains";
}

// A check that failed on its own: its fault code stands when it drains as soon as the slow code
// would (a fatal finding stays fatal, so the hook's one-report rule and the drainer's agree),
// and gives way when the slow code drains sooner (a noisy floor, 3 reports, confirmed slow: 1).
TEST(FoldVerdicts, a_checks_own_fail_keeps_its_code_unless_the_slow_code_drains_sooner) {
  PolicyConfig p = default_policy();
  p.fatal_checks.insert("gpu_gemm");
  NodeReport fatal;
  fatal.checks = {gemm(Status::kFail)};
  fatal.checks[0].fault_code = "VIGIL-GEMM-WRONG-RESULT";
  fatal.checks[0].message = "gpu3 wrong result";
  fold_verdicts(fatal, verdicts(Status::kFail, false), p);
  EXPECT_EQ(fatal.checks[0].fault_code, "VIGIL-GEMM-WRONG-RESULT");
  EXPECT_EQ(fatal.checks[0].message, "gpu3 wrong result");
  EXPECT_EQ(p.for_check("gpu_gemm", fatal.checks[0].fault_code).drain_after, 1);

  PolicyConfig noisy = default_policy();
  noisy.checks["gpu_gemm"] = {3, 2};
  NodeReport floor;
  floor.checks = {gemm(Status::kFail)};
  floor.checks[0].fault_code = "VIGIL-GEMM-SLOW";
  fold_verdicts(floor, verdicts(Status::kFail, true), noisy);
  EXPECT_EQ(floor.checks[0].fault_code, kSlowConfirmedFaultCode);  // 1 report, not 3
  NodeReport unconfirmed;
  unconfirmed.checks = {gemm(Status::kFail)};
  unconfirmed.checks[0].fault_code = "VIGIL-GEMM-SLOW";
  noisy.checks["gpu_gemm"] = {2, 2};
  fold_verdicts(unconfirmed, verdicts(Status::kFail, false), noisy);
  EXPECT_EQ(unconfirmed.checks[0].fault_code, "VIGIL-GEMM-SLOW");  // 2 and 2: the check's own
}

}  // namespace
}  // namespace vigil::drainer
