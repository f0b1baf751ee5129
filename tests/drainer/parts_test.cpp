// Part history (drainer/src/parts.cpp, docs/repair.md "Part history"): slots learn their parts
// from the reports' `gpus`, a different part in a slot is a swap that clears its history, a drain
// counts against the part of each GPU whose figures fail, and a part drained part_drains times in
// the window is drained as `replace` with its serial in the reason while the ladder is on.
#include "vigil/drainer/parts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_clock.h"
#include "fakes.h"
#include "vigil/drainer/policy.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;

constexpr int64_t kDay = 86400;

std::vector<GpuPart> gpus(const std::string& gpu3_serial) {
  std::vector<GpuPart> out;
  for (int i = 0; i < 4; ++i)
    out.push_back({i, i == 3 ? gpu3_serial : "16528230543" + std::to_string(10 + i),
                   "GPU-" + std::to_string(i)});
  return out;
}

TEST(Parts, slots_learn_their_parts_and_a_new_serial_is_a_swap_that_clears_history) {
  std::vector<PartRecord> parts;
  EXPECT_TRUE(update_parts(parts, gpus("1652823054323")).empty());
  ASSERT_EQ(parts.size(), 4u);
  parts[3].drains = {100, 200};
  EXPECT_TRUE(update_parts(parts, gpus("1652823054323")).empty());  // the same part
  EXPECT_EQ(parts[3].drains.size(), 2u);
  const auto notes = update_parts(parts, gpus("1652823059999"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "gpu3 part changed (serial 1652823054323 -> serial 1652823059999): its history starts "
            "afresh");
  EXPECT_EQ(parts[3].serial, "1652823059999");
  EXPECT_TRUE(parts[3].drains.empty());
  // A board without an inforom is told apart by its UUID; an entry with neither is ignored.
  std::vector<PartRecord> by_uuid;
  update_parts(by_uuid, {{0, "", "GPU-a"}, {1, "", ""}});
  ASSERT_EQ(by_uuid.size(), 1u);
  EXPECT_EQ(update_parts(by_uuid, {{0, "", "GPU-b"}}).size(), 1u);
}

TEST(Parts, a_drain_counts_for_the_failing_gpus_within_the_window) {
  std::vector<PartRecord> parts;
  update_parts(parts, gpus("S3"));
  const PartRule rule{3, 30 * kDay};
  EXPECT_FALSE(record_drain(parts, {3}, 1000 * kDay, rule));
  EXPECT_FALSE(record_drain(parts, {3}, 1020 * kDay, rule));
  EXPECT_FALSE(record_drain(parts, {3}, 1035 * kDay, rule));  // the first fell out of the window
  EXPECT_EQ(parts[3].drains.size(), 2u);
  auto offender = record_drain(parts, {3, 1}, 1045 * kDay, rule);
  ASSERT_TRUE(offender);
  EXPECT_EQ(offender->index, 3);
  EXPECT_EQ(offender_text(*offender, rule), "gpu3 serial S3 drained 3 times in 30 days");
  EXPECT_EQ(parts[1].drains.size(), 1u);
  EXPECT_FALSE(record_drain(parts, {7}, 1046 * kDay, rule));  // no part known in slot 7
}

TEST(Parts, only_figures_that_break_their_fail_bound_name_a_gpu) {
  CheckResult remap = testing::make_check("nvml_row_remap", Status::kFail, 1, 0);
  remap.measurements[0].gpu = 3;
  Measurement ok = remap.measurements[0];
  ok.gpu = 5;
  ok.value = 0;
  remap.measurements.push_back(ok);
  Measurement unconfirmed = remap.measurements[0];
  unconfirmed.gpu = 6;
  unconfirmed.threshold->unconfirmed = true;  // only warns: not this part's fault yet
  remap.measurements.push_back(unconfirmed);
  EXPECT_EQ(failing_gpus({&remap}), std::set<int>{3});
}

TEST(Parts, the_history_round_trips_and_a_bad_record_is_an_error) {
  std::vector<PartRecord> parts = {{3, "S3", "GPU-3", {100, 200}}, {4, "", "GPU-4", {}}};
  auto back = parts_from_json(parts_to_json(parts));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].drains, (std::vector<int64_t>{100, 200}));
  EXPECT_TRUE((*back)[1].serial.empty());
  EXPECT_FALSE(parts_from_json(nlohmann::json::parse(R"([{"index": 1, "slot": 2}])")).ok());
  EXPECT_FALSE(parts_from_json(nlohmann::json::parse(R"([{"index": "1"}])")).ok());
  EXPECT_FALSE(parts_from_json(nlohmann::json::parse(R"({"index": 1})")).ok());
}

// Through the policy: three episodes of the same GPU's fault; the third drains as `replace`
// naming the part while the ladder is on, a plain drain while it is off; after a swap the slot
// starts afresh.
class PartPolicy : public ::testing::Test {
 protected:
  NodeReport report(const std::string& run, bool fail, const std::string& gpu3_serial) {
    CheckResult c = testing::make_check("nvml_row_remap", fail ? Status::kFail : Status::kPass,
                                        fail ? 1 : 0, 0);
    c.measurements[0].gpu = 3;
    NodeReport r = testing::make_report("gpu-2", run, {c});
    r.gpus = gpus(gpu3_serial);
    return r;
  }
  // One episode: a failing report drains (nvml_row_remap is fatal), two passing ones resume.
  Decision episode(const PolicyEngine& e, NodeState& s, int n, const std::string& serial) {
    Decision d = e.on_report(&s, report("f" + std::to_string(n), true, serial), nullptr, {}, 10);
    s = d.state;
    for (int i = 0; i < 2; ++i)
      s = e.on_report(&s, report("p" + std::to_string(n) + std::to_string(i), false, serial),
                      nullptr, {}, 10)
              .state;
    clock.advance(5 * kDay);
    return d;
  }
  FakeClock clock;
};

TEST_F(PartPolicy, the_third_drain_of_one_part_is_a_replace_naming_its_serial) {
  PolicyEngine e(default_policy(), BreakerConfig{}, false, clock, /*repair=*/true);
  NodeState s;
  s.node = "gpu-2";
  EXPECT_EQ(episode(e, s, 1, "1652823054323").action, Action::kDrain);
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
  EXPECT_EQ(episode(e, s, 2, "1652823054323").action, Action::kDrain);
  const Decision third = episode(e, s, 3, "1652823054323");
  EXPECT_EQ(third.action, Action::kDrain);
  EXPECT_EQ(third.state.repair.stage, RepairStage::kReplace);
  EXPECT_NE(third.reason.find("vigil: replace"), std::string::npos) << third.reason;
  EXPECT_NE(third.reason.find("gpu3 serial 1652823054323 drained 3 times in 30 days"),
            std::string::npos)
      << third.reason;
}

TEST_F(PartPolicy, with_the_ladder_off_the_history_is_kept_and_a_swap_starts_it_afresh) {
  PolicyEngine off(default_policy(), BreakerConfig{}, false, clock);
  NodeState s;
  s.node = "gpu-2";
  for (int n = 1; n <= 3; ++n)
    EXPECT_EQ(episode(off, s, n, "1652823054323").action, Action::kDrain);
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);  // off: a plain drain, never replace
  ASSERT_EQ(s.parts.size(), 4u);
  EXPECT_EQ(s.parts[3].drains.size(), 3u);
  PolicyEngine on(default_policy(), BreakerConfig{}, false, clock, /*repair=*/true);
  const Decision swapped = episode(on, s, 4, "1652823059999");  // a new board in slot 3
  EXPECT_EQ(swapped.state.repair.stage, RepairStage::kNone);
  EXPECT_NE(swapped.why.find("gpu3 part changed"), std::string::npos) << swapped.why;
  EXPECT_EQ(s.parts[3].drains.size(), 1u);
}

}  // namespace
}  // namespace vigil::drainer
