#include "vigil/report/threshold.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vigil {

TEST(Threshold, greater_equal_bound_with_warn_band) {
  Threshold t{Op::kGe, 460, 483, "GB/s", {}, false, {}};
  EXPECT_EQ(t.evaluate(500), Status::kPass);
  EXPECT_EQ(t.evaluate(483), Status::kPass);
  EXPECT_EQ(t.evaluate(470), Status::kWarn);
  EXPECT_EQ(t.evaluate(460), Status::kWarn);
  EXPECT_EQ(t.evaluate(459.9), Status::kFail);
}

TEST(Threshold, less_equal_bound_without_warn) {
  Threshold t{Op::kLe, 0, std::nullopt, "count", {}, false, {}};
  EXPECT_EQ(t.evaluate(0), Status::kPass);
  EXPECT_EQ(t.evaluate(1), Status::kFail);
}

TEST(Threshold, non_finite_values_fail) {
  Threshold t{Op::kGe, 1, std::nullopt, "GB/s", {}, false, {}};
  EXPECT_EQ(t.evaluate(std::nan("")), Status::kFail);
  EXPECT_EQ(t.evaluate(INFINITY), Status::kFail);
}

// An unconfirmed performance floor (docs/thresholds.md, "Calibration") never fails: breaking it
// warns, and breaks_fail() still tells that the floor itself was broken.
TEST(Threshold, an_unconfirmed_floor_only_warns) {
  Threshold t{Op::kGe, 460, 483, "GB/s", {}, false, {}};
  t.unconfirmed = true;
  EXPECT_EQ(t.evaluate(500), Status::kPass);
  EXPECT_EQ(t.evaluate(470), Status::kWarn);
  EXPECT_EQ(t.evaluate(100), Status::kWarn);
  EXPECT_EQ(t.evaluate(std::nan("")), Status::kWarn);
  EXPECT_TRUE(t.breaks_fail(100));
  EXPECT_FALSE(t.breaks_fail(470));
  t.unconfirmed = false;
  EXPECT_EQ(t.evaluate(100), Status::kFail);
}

TEST(Threshold, validate_rejects_warn_on_the_wrong_side) {
  EXPECT_EQ(Threshold({Op::kGe, 460, 483, "GB/s", {}, false, {}}).validate(), "");
  EXPECT_NE(Threshold({Op::kGe, 460, 400, "GB/s", {}, false, {}}).validate(), "");
  EXPECT_NE(Threshold({Op::kLe, 10, 20, "count", {}, false, {}}).validate(), "");
  EXPECT_EQ(Threshold({Op::kLe, 20, 10, "count", {}, false, {}}).validate(), "");
}

TEST(Threshold, validate_rejects_missing_or_unknown_unit_and_negative_bandwidth) {
  EXPECT_NE(Threshold({Op::kGe, 1, std::nullopt, "", {}, false, {}}).validate(), "");
  EXPECT_NE(Threshold({Op::kGe, 1, std::nullopt, "GiB/s", {}, false, {}}).validate(), "");
  EXPECT_NE(Threshold({Op::kGe, -1, std::nullopt, "GB/s", {}, false, {}}).validate(), "");
  EXPECT_EQ(Threshold({Op::kGe, -5, std::nullopt, "celsius", {}, false, {}}).validate(), "");
}

}  // namespace vigil
