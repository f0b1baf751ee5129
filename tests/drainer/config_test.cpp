// The configuration's defaults and lookups (drainer/src/config.cpp): the default policy's fatal
// list is the check catalog's, and a check's policy is its own, made fatal by the fatal lists,
// then overridden per fault code. (The YAML file's reading is config_file_test.cpp.)
#include "vigil/drainer/config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vigil/report/check_catalog.h"
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

// Issue 25: the hook and the drainer cannot disagree on what is fatal. The hook decides with
// the SharedDrainPolicy the drainer sends (through its JSON, as the hook's cache holds it), and
// for every catalog check and fault code that says "drains after one report" exactly where the
// drainer's own policy does, whatever the site configured.
TEST(Config, the_hooks_fatal_rule_is_the_drainers_for_every_check_and_fault_code) {
  PolicyConfig site = default_policy();
  site.fatal_checks.erase("kmsg_xid");      // a site that trusts no XID alone
  site.fatal_checks.insert("nvml_clocks");  // ... and one more fatal check
  site.checks["gpu_gemm"] = {1, 2};         // drain_after 1 by hand
  site.checks["nvml_ecc"] = {4, 2};         // fatal all the same
  site.fatal_fault_codes = {"VIGIL-NCCL-WRONG-RESULTS", "VIGIL-NVML-REMAP-PENDING"};
  site.fault_code_drain_after["VIGIL-NVML-REMAP-PENDING"] = 3;  // overrides the fatal code
  site.fault_code_drain_after["VIGIL-IMEX-DOWN"] = 1;
  PolicyConfig strict = site;
  strict.defaults.drain_after = 1;  // every check fatal
  PolicyConfig defaults = default_policy();
  for (const PolicyConfig* policy : {&site, &strict, &defaults}) {
    const PolicyConfig& p = *policy;
    SharedDrainPolicy sent;
    shared_fatal_rule(p, sent);
    auto read = shared_policy_from_json(to_json(sent));
    ASSERT_TRUE(read.ok()) << read.error().to_string();
    std::vector<std::string> codes = {"",
                                      "VIGIL-NCCL-WRONG-RESULTS",
                                      "VIGIL-NVML-REMAP-PENDING",
                                      "VIGIL-IMEX-DOWN",
                                      "VIGIL-FABRIC-LOCALIZED",
                                      "VIGIL-SOMETHING-ELSE"};
    for (const auto& [code, _] : p.fault_code_drain_after) codes.push_back(code);
    int fatal = 0;
    for (const CheckSpec& c : check_catalog()) {
      for (const std::string& code : codes) {
        const bool drainer = p.for_check(c.name, code).drain_after <= 1;
        EXPECT_EQ(read->is_fatal(c.name, code), drainer) << c.name << " " << code;
        fatal += drainer;
      }
    }
    EXPECT_GT(fatal, 0);
  }
  SharedDrainPolicy sent;
  shared_fatal_rule(site, sent);
  EXPECT_FALSE(sent.is_fatal("kmsg_xid"));
  EXPECT_TRUE(sent.is_fatal("nvml_clocks"));
  EXPECT_TRUE(sent.is_fatal("gpu_gemm"));
  EXPECT_TRUE(sent.is_fatal("nvml_ecc"));
  EXPECT_TRUE(sent.is_fatal("gpu_hbm", "VIGIL-NCCL-WRONG-RESULTS"));
  EXPECT_FALSE(sent.is_fatal("nvml_row_remap", "VIGIL-NVML-REMAP-PENDING"));
  EXPECT_TRUE(sent.is_fatal("nvlink_imex", "VIGIL-IMEX-DOWN"));
}

}  // namespace
}  // namespace vigil::drainer
