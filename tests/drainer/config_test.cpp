// The configuration's defaults and lookups (drainer/src/config.cpp): the default policy's fatal
// list is the check catalog's, and a check's policy is its own, made fatal by the fatal lists,
// then overridden per fault code. (The YAML file's reading is config_file_test.cpp.)
#include "vigil/drainer/config.h"

#include <gtest/gtest.h>

#include "vigil/report/drain_decision.h"

namespace vigil::drainer {
namespace {

TEST(Config, the_default_policy_is_fatal_exactly_where_the_catalog_says) {
  const PolicyConfig p = default_policy();
  EXPECT_EQ(p.fatal_checks, default_fatal_checks());
  EXPECT_TRUE(p.fatal_checks.count("nvml_ecc"));
  EXPECT_FALSE(p.fatal_checks.count("nvlink_imex"));  // may restart: drain_after applies
  EXPECT_EQ(p.for_check("nvml_ecc", "").drain_after, 1);
  EXPECT_EQ(p.for_check("nvlink_imex", "VIGIL-IMEX-DOWN").drain_after, p.defaults.drain_after);
}

TEST(Config, a_checks_policy_is_its_own_then_fatal_lists_then_fault_code_overrides) {
  PolicyConfig p;
  p.defaults = {3, 2};
  p.checks["gpu_gemm"] = {5, 1};
  p.fatal_fault_codes = {"VIGIL-NCCL-WRONG-RESULTS"};
  p.fault_code_drain_after["VIGIL-GPU-GEMM-SLOW"] = 7;
  EXPECT_EQ(p.for_check("gpu_hbm", "").drain_after, 3);
  EXPECT_EQ(p.for_check("gpu_gemm", "").drain_after, 5);
  EXPECT_EQ(p.for_check("gpu_gemm", "").resume_after, 1);
  EXPECT_EQ(p.for_check("nccl_allreduce_ib", "VIGIL-NCCL-WRONG-RESULTS").drain_after, 1);
  EXPECT_EQ(p.for_check("gpu_gemm", "VIGIL-GPU-GEMM-SLOW").drain_after, 7);
}

TEST(Config, node_mappings_have_their_documented_spellings) {
  EXPECT_EQ(to_string(NodeMapping::kIdentity), "identity");
  EXPECT_EQ(to_string(NodeMapping::kReport), "report");
  EXPECT_EQ(to_string(NodeMapping::kPodLookup), "pod-lookup");
}

}  // namespace
}  // namespace vigil::drainer
