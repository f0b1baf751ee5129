// The drainer's metrics: a report replaces the series of the checks it carries only.
#include <gtest/gtest.h>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

// A fabric job's report carries only fabric_allreduce_ib; the node job's report the rest. Each
// replaces the series of its own checks and leaves the other's.
TEST(Drainer, a_report_replaces_the_metric_series_of_the_checks_it_carries_only) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto ecc_on = [](std::vector<int> gpus) {
    CheckResult c = make_check("nvml_ecc", Status::kPass, 0, 0);
    c.measurements.clear();
    for (int g : gpus) {
      Measurement m;
      m.name = "volatile_uncorrected_ecc";
      m.value = 0;
      m.unit = "count";
      m.gpu = g;
      c.measurements.push_back(m);
    }
    return c;
  };
  auto series = [&](const std::string& check, const std::string& gpu = "") {
    const std::string text = dr.metrics_text();
    std::string needle = "vigil_check_measurement_value{check=\"" + check + "\"";
    if (!gpu.empty()) needle += ",gpu=\"" + gpu + "\"";
    return text.find(needle) != std::string::npos;
  };
  ASSERT_TRUE(dr.ingest({make_report("gpu-0", "node-1", {ecc_on({0, 1})})}).ok());
  dr.process_pending();
  EXPECT_TRUE(series("nvml_ecc", "1"));
  CheckResult fabric = make_check("fabric_allreduce_ib", Status::kFail, 120, 330, "GB/s");
  ASSERT_TRUE(dr.ingest({make_report("gpu-0", "node-1-fabric", {fabric})}).ok());
  dr.process_pending();
  EXPECT_TRUE(series("fabric_allreduce_ib"));
  EXPECT_TRUE(series("nvml_ecc", "0"));  // the fabric report did not wipe the node's series
  EXPECT_TRUE(series("nvml_ecc", "1"));
  ASSERT_TRUE(dr.ingest({make_report("gpu-0", "node-2", {ecc_on({0})})}).ok());
  dr.process_pending();
  EXPECT_TRUE(series("nvml_ecc", "0"));
  EXPECT_FALSE(series("nvml_ecc", "1"));  // gone from the check's latest report: removed
  EXPECT_TRUE(series("fabric_allreduce_ib"));
}

}  // namespace
}  // namespace vigil::drainer
