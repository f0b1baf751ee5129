// The check catalog on its own (check_catalog.h): one entry per name, every entry runs
// somewhere, lookups, and the drain lists of drain_decision.h are its fatal and noisy entries.
// Registry against catalog: tests/checks/check_catalog_registry_test.cpp.
#include "vigil/report/check_catalog.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "vigil/report/drain_decision.h"

namespace vigil {
namespace {

std::set<std::string> names_of(CheckSeverity severity) {
  std::set<std::string> out;
  for (const CheckSpec& c : check_catalog())
    if (c.severity == severity) out.emplace(c.name);
  return out;
}

TEST(CheckCatalog, every_name_has_one_entry) {
  std::set<std::string_view> seen;
  for (const CheckSpec& c : check_catalog()) {
    EXPECT_FALSE(c.name.empty());
    EXPECT_TRUE(seen.insert(c.name).second) << c.name << " has two entries";
  }
  EXPECT_FALSE(seen.empty());
}

TEST(CheckCatalog, every_entry_has_a_short_name_a_suite_and_a_time_box) {
  for (const CheckSpec& c : check_catalog()) {
    EXPECT_FALSE(c.short_name.empty()) << c.name;
    EXPECT_NE(c.suites, 0u) << c.name << " runs in no suite";
    EXPECT_GT(c.timeout.count(), 0) << c.name;
  }
}

// A quick check runs in the full suite too.
TEST(CheckCatalog, a_quick_check_runs_in_full_too) {
  for (const CheckSpec& c : check_catalog())
    if (c.runs_in(CheckSuite::kQuick)) EXPECT_TRUE(c.runs_in(CheckSuite::kFull)) << c.name;
}

TEST(CheckCatalog, performance_metrics_name_a_measurement_and_a_kind) {
  for (const CheckSpec& c : check_catalog()) {
    for (const PerfMetric& m : c.metrics) {
      EXPECT_FALSE(m.measurement.empty()) << c.name;
      EXPECT_FALSE(m.kind.empty()) << c.name;
      if (m.measurement == "*") EXPECT_FALSE(m.unit.empty()) << c.name << ": '*' needs a unit";
    }
  }
}

TEST(CheckCatalog, find_returns_the_entry_by_name_and_nothing_for_an_unknown_name) {
  for (const CheckSpec& c : check_catalog()) {
    const CheckSpec* found = find_check_spec(c.name);
    ASSERT_NE(found, nullptr) << c.name;
    EXPECT_EQ(found, &c);
  }
  EXPECT_EQ(find_check_spec("no_such_check"), nullptr);
  EXPECT_EQ(find_check_spec(""), nullptr);
}

TEST(CheckCatalog, names_by_severity_follow_the_catalog_order) {
  for (auto severity : {CheckSeverity::kDefault, CheckSeverity::kFatal, CheckSeverity::kNoisy}) {
    std::vector<std::string> expected;
    for (const CheckSpec& c : check_catalog())
      if (c.severity == severity) expected.emplace_back(c.name);
    EXPECT_EQ(catalog_check_names(severity), expected);
  }
}

// The suite a re-check needs to run a drain's checks, by name or by a reason's short name.
TEST(CheckCatalog, a_re_check_of_gpu_sdc_needs_full_and_of_gpu_soak_qualify) {
  using V = std::vector<std::string>;
  EXPECT_EQ(suite_to_run(V{"gpu_sdc"}), "full");
  EXPECT_EQ(suite_to_run(V{"sdc"}), "full");
  EXPECT_EQ(suite_to_run(V{"nvml_ecc", "gpu_soak"}), "qualify");
  EXPECT_EQ(suite_to_run(V{"gpu_sdc", "soak"}), "qualify");
  EXPECT_EQ(suite_to_run(V{"nvml_ecc", "gpu_gemm"}), "");
  EXPECT_EQ(suite_to_run(V{"kmsg_xid"}), "");              // the hooks' own
  EXPECT_EQ(suite_to_run(V{"fabric_allreduce_ib"}), "");   // a fabric job's
  EXPECT_EQ(suite_to_run(V{"qualify", "reset-gpu"}), "");  // reason words, not checks
  EXPECT_EQ(suite_to_run(V{}), "");
}

TEST(CheckCatalog, the_default_fatal_list_is_the_catalogs_fatal_entries) {
  EXPECT_FALSE(names_of(CheckSeverity::kFatal).empty());
  EXPECT_EQ(default_fatal_checks(), names_of(CheckSeverity::kFatal));
  EXPECT_EQ(SharedDrainPolicy{}.fatal_checks, names_of(CheckSeverity::kFatal));
}

TEST(CheckCatalog, the_default_noisy_list_is_the_catalogs_noisy_entries) {
  EXPECT_FALSE(names_of(CheckSeverity::kNoisy).empty());
  EXPECT_EQ(default_noisy_checks(), names_of(CheckSeverity::kNoisy));
}

}  // namespace
}  // namespace vigil
