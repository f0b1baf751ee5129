// Findings: how what a check found and its measurements' verdicts become one result.
#include "vigil/checks/findings.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "vigil/checks/check.h"

namespace vigil {
namespace {

CheckResult with_measurement(double value, double fail_below) {
  CheckResult r;
  r.check = "ib_port";
  Measurement m;
  m.name = "port_rate";
  m.value = value;
  m.unit = "Gb/s";
  m.port = "mlx5_0/1";
  m.threshold = built_in_threshold(Op::kGe, fail_below, std::nullopt, "Gb/s");
  r.measurements.push_back(m);
  return r;
}

TEST(Findings, the_worst_findings_are_the_message_and_the_first_one_the_fault_code) {
  CheckResult r = with_measurement(400, 400);
  Findings f;
  f.add(Status::kWarn, "mlx5_4/1 disabled", "VIGIL-IB-PORT-INACTIVE");
  f.add(Status::kFail, "mlx5_3/1 down", "VIGIL-IB-PORT-DOWN");
  f.add(Status::kFail, "mlx5_5/1 down", "VIGIL-IB-PORT-DOWN-2");
  f.add(Status::kFail, "mlx5_3/1 down", "VIGIL-IB-PORT-DOWN");  // said once
  EXPECT_FALSE(f.conclude(r, "VIGIL-IB"));
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "mlx5_3/1 down, mlx5_5/1 down");
  EXPECT_EQ(r.fault_code, "VIGIL-IB-PORT-DOWN");
}

TEST(Findings, a_prepended_finding_goes_first_and_few_are_shown) {
  CheckResult r;
  Findings f;
  for (int i = 0; i < 5; ++i) f.add(Status::kFail, "gpu" + std::to_string(i), "VIGIL-X");
  f.prepend(Status::kFail, "2/8 ports active", "VIGIL-IB-PORTS-MISSING");
  EXPECT_FALSE(f.conclude(r, "VIGIL-IB", 4, "; "));
  EXPECT_EQ(r.message, "2/8 ports active; gpu0; gpu1; gpu2; +2 more");
  EXPECT_EQ(r.fault_code, "VIGIL-IB-PORTS-MISSING");
}

TEST(Findings, a_measurement_worse_than_every_finding_speaks_for_itself) {
  CheckResult r = with_measurement(200, 400);
  Findings f;
  f.add(Status::kWarn, "mlx5_4/1 disabled", "VIGIL-IB-PORT-INACTIVE");
  EXPECT_FALSE(f.conclude(r, "VIGIL-IB"));
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-IB-PORT-RATE");  // finalize's, from the measurement's name
  EXPECT_NE(r.message.find("port_rate"), std::string::npos) << r.message;
}

TEST(Findings, nothing_wrong_passes_and_leaves_the_message_to_the_check) {
  CheckResult r = with_measurement(400, 400);
  Findings f;
  f.add(Status::kPass, "mlx5_0/1 symbol_error +1", "VIGIL-IB-COUNTER-SYMBOL-ERROR");
  EXPECT_TRUE(f.conclude(r, "VIGIL-IB"));
  EXPECT_EQ(r.status, Status::kPass);
  EXPECT_EQ(r.message, "");
  EXPECT_EQ(r.fault_code, "");
}

TEST(Findings, an_error_or_skipped_result_stays_as_it_is) {
  CheckResult r = with_measurement(200, 400);
  r.status = Status::kError;
  r.message = "sysfs unreadable";
  Findings f;
  f.add(Status::kFail, "mlx5_3/1 down", "VIGIL-IB-PORT-DOWN");
  EXPECT_FALSE(f.conclude(r, "VIGIL-IB"));
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.message, "sysfs unreadable");
}

// What could not be judged: a fail found on the rest stands with it named; anything else becomes
// an error (Vigil could not look everywhere: not a pass), a warn's words kept in the message;
// nothing changes when all was judged.
TEST(Findings, what_could_not_be_judged_joins_a_fail_and_keeps_a_warns_words) {
  auto concluded = [](Status status, std::string message, std::string fault_code) {
    CheckResult c;
    c.status = status;
    c.message = std::move(message);
    c.fault_code = std::move(fault_code);
    return c;
  };
  CheckResult r = concluded(Status::kFail, "nvme1 dead", "VIGIL-NVME-DEAD");
  add_unjudged(r, {"nvme0: smart-log hung", "nvme2: no state"}, "VIGIL-NVME-QUERY");
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "nvme1 dead; also nvme0: smart-log hung +1 more");
  EXPECT_EQ(r.fault_code, "VIGIL-NVME-DEAD");
  CheckResult w = concluded(Status::kWarn, "nvme1 resetting", "VIGIL-NVME-RESETTING");
  add_unjudged(w, {"nvme0: smart-log hung"}, "VIGIL-NVME-QUERY");
  EXPECT_EQ(w.status, Status::kError);
  EXPECT_EQ(w.message, "nvme0: smart-log hung; warn: nvme1 resetting");
  EXPECT_EQ(w.fault_code, "VIGIL-NVME-QUERY");
  CheckResult p = concluded(Status::kPass, "2 NVMe drives healthy", "");
  add_unjudged(p, {"nvme0: smart-log hung"}, "VIGIL-NVME-QUERY");
  EXPECT_EQ(p.status, Status::kError);
  EXPECT_EQ(p.message, "nvme0: smart-log hung");
  EXPECT_EQ(p.fault_code, "VIGIL-NVME-QUERY");
  CheckResult same = p;
  add_unjudged(same, {}, "VIGIL-X");
  EXPECT_EQ(same.message, p.message);
}

}  // namespace
}  // namespace vigil
