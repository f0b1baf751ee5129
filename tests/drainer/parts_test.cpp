// Part history (drainer/src/parts.cpp, docs/repair.md "Part history"): slots learn their parts
// from the reports' `gpus`, a different part in a slot is a swap that clears its history, a drain
// counts against the part of each GPU whose figures fail, and a part drained part_drains times in
// the window is drained as `replace` with its serial in the reason while the ladder is on.
#include "vigil/drainer/parts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "vigil/base/time.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/policy.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;

constexpr int64_t kDay = 86400;

std::vector<GpuPart> gpus(const std::string& gpu3_serial) {
  std::vector<GpuPart> out;
  for (int i = 0; i < 4; ++i) {  // a board's UUID changes with the board, as its serial does
    const std::string serial = i == 3 ? gpu3_serial : "16528230543" + std::to_string(10 + i);
    out.push_back({i, serial, "GPU-" + serial, ""});
  }
  return out;
}

// A report of `node` whose gpu3 (serial gpu3_serial) has a pending row remap, or none.
NodeReport remap_report(const std::string& node, const std::string& run,
                        const std::string& gpu3_serial, bool fail, int64_t now) {
  CheckResult c =
      testing::make_check("nvml_row_remap", fail ? Status::kFail : Status::kPass, fail ? 1 : 0, 0);
  c.measurements[0].gpu = 3;
  NodeReport r = testing::make_report(node, run, {c});
  r.start_time = r.end_time = rfc3339_utc(now);
  r.gpus = gpus(gpu3_serial);
  return r;
}

TEST(Parts, slots_learn_their_parts_and_a_new_serial_is_a_swap_that_clears_history) {
  std::vector<PartRecord> departed;  // parts that left (none here)
  std::vector<PartRecord> parts;
  EXPECT_TRUE(update_parts(parts, departed, gpus("1652823054323")).empty());
  ASSERT_EQ(parts.size(), 4u);
  parts[3].drains = {100, 200};
  EXPECT_TRUE(update_parts(parts, departed, gpus("1652823054323")).empty());  // the same part
  EXPECT_EQ(parts[3].drains.size(), 2u);
  const auto notes = update_parts(parts, departed, gpus("1652823059999"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "gpu3 part changed (serial 1652823054323 -> serial 1652823059999): its history starts "
            "afresh");
  EXPECT_EQ(parts[3].serial, "1652823059999");
  EXPECT_TRUE(parts[3].drains.empty());
  // A board without an inforom is told apart by its UUID; an entry with neither is ignored.
  std::vector<PartRecord> by_uuid;
  update_parts(by_uuid, departed, {{0, "", "GPU-a", ""}, {1, "", "", ""}});
  ASSERT_EQ(by_uuid.size(), 1u);
  EXPECT_EQ(update_parts(by_uuid, departed, {{0, "", "GPU-b", ""}}).size(), 1u);
}

TEST(Parts, a_drain_counts_for_the_failing_gpus_within_the_window) {
  std::vector<PartRecord> departed;  // parts that left (none here)
  std::vector<PartRecord> parts;
  update_parts(parts, departed, gpus("S3"));
  const PartRule rule{3, 30 * kDay};
  EXPECT_TRUE(record_drain(parts, {3}, 1000 * kDay, rule).counted);
  EXPECT_FALSE(record_drain(parts, {3}, 1020 * kDay, rule).offender);
  EXPECT_FALSE(record_drain(parts, {3}, 1035 * kDay, rule).offender);  // 1000 left the window
  EXPECT_EQ(parts[3].drains.size(), 2u);
  auto rec = record_drain(parts, {3, 1}, 1045 * kDay, rule);
  ASSERT_TRUE(rec.offender);
  EXPECT_EQ(rec.offender->index, 3);
  EXPECT_EQ(offender_text(*rec.offender, rule), "gpu3 serial S3 drained 3 times in 30 days");
  EXPECT_EQ(parts[1].drains.size(), 1u);
  EXPECT_FALSE(record_drain(parts, {7}, 1046 * kDay, rule).counted);  // no part known in slot 7
  // A drain Slurm never applied is taken back.
  forget_drain(parts, 1045 * kDay);
  EXPECT_EQ(parts[3].drains.size(), 2u);
  EXPECT_TRUE(parts[1].drains.empty());
}

TEST(Parts, an_identifier_missing_on_one_side_is_the_same_part_not_a_swap) {
  std::vector<PartRecord> departed;  // parts that left (none here)
  std::vector<PartRecord> parts;
  update_parts(parts, departed, {{3, "S3", "GPU-3", ""}});
  parts[0].drains = {100};
  // The serial cannot be read this once (a sick InfoROM): the same part, history kept.
  EXPECT_TRUE(update_parts(parts, departed, {{3, "", "GPU-3", ""}}).empty());
  EXPECT_EQ(parts[0].drains.size(), 1u);
  EXPECT_EQ(parts[0].serial, "S3");
  // First seen by UUID only, the serial learnt later: the same part.
  std::vector<PartRecord> late;
  update_parts(late, departed, {{0, "", "GPU-0", ""}});
  EXPECT_TRUE(update_parts(late, departed, {{0, "S0", "GPU-0", ""}}).empty());
  EXPECT_EQ(late[0].serial, "S0");
  // Another UUID is another GPU, whatever the serial says.
  EXPECT_EQ(update_parts(parts, departed, {{3, "S3", "GPU-other", ""}}).size(), 1u);
}

TEST(Parts, only_a_minority_of_gpus_with_broken_fail_bounds_name_parts) {
  std::vector<PartRecord> departed;  // parts that left (none here)
  std::vector<PartRecord> parts;
  update_parts(parts, departed, gpus("S3"));  // 4 slots
  CheckResult remap = testing::make_check("nvml_row_remap", Status::kFail, 1, 0);
  remap.measurements[0].gpu = 3;
  Measurement ok = remap.measurements[0];
  ok.gpu = 0;
  ok.value = 0;
  remap.measurements.push_back(ok);
  Measurement unconfirmed = remap.measurements[0];
  unconfirmed.gpu = 1;
  unconfirmed.threshold->unconfirmed = true;  // only warns: not this part's fault yet
  remap.measurements.push_back(unconfirmed);
  EXPECT_EQ(failing_gpus({&remap}, parts), std::set<int>{3});
  // Two of four GPUs at once: the node's fault (a fan wall, a PCIe switch), no part's.
  remap.measurements[1].value = 1;
  EXPECT_TRUE(failing_gpus({&remap}, parts).empty());
}

// Only a check whose per-GPU fail is that GPU's own fault charges its part (review W7): an XID
// names the GPU; a slow clock, a hot GPU or a slow probe is often a fan, a cold plate or a PSU
// shelf, and must not put a healthy GPU's serial into an RMA reason.
TEST(Parts, only_checks_of_a_parts_own_faults_charge_it) {
  std::vector<PartRecord> departed;
  std::vector<PartRecord> parts;
  update_parts(parts, departed, gpus("S3"));  // 4 slots
  for (const char* check : {"kmsg_xid", "nvml_xid", "nvml_ecc", "nvml_recovery", "gpu_memtest"}) {
    CheckResult r = testing::make_check(check, Status::kFail, 1, 0);
    r.measurements[0].gpu = 2;
    EXPECT_EQ(failing_gpus({&r}, parts), std::set<int>{2}) << check;
  }
  for (const char* check : {"nvml_clock_events", "nvml_temperature", "gpu_gemm", "gpu_hbm",
                            "nvml_pcie", "nvml_nvlink", "gpu_leftovers", "no_such_check"}) {
    CheckResult r = testing::make_check(check, Status::kFail, 1, 0);
    r.measurements[0].gpu = 2;
    EXPECT_TRUE(failing_gpus({&r}, parts).empty()) << check;
  }
}

TEST(Parts, the_history_round_trips_and_a_bad_record_is_an_error) {
  std::vector<PartRecord> parts = {{3, "S3", "GPU-3", {100, 200}}, {4, "", "GPU-4", {}}};
  auto back = parts_from_json(parts_to_json(parts));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].drains, (std::vector<int64_t>{100, 200}));
  EXPECT_TRUE((*back)[1].serial.empty());
  EXPECT_TRUE(parts_from_json(nlohmann::json::parse(R"([{"index": 1, "slot": 2}])")).ok());
  EXPECT_FALSE(parts_from_json(nlohmann::json::parse(R"([{"index": 1}, {"index": 1}])")).ok());
  EXPECT_FALSE(parts_from_json(nlohmann::json::parse(R"([{"index": -1}])")).ok());
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
  Decision episode(const PolicyEngine& e, NodeRecord& s, int n, const std::string& serial) {
    Decision d = e.on_report(&s, report("f" + std::to_string(n), true, serial), nullptr, {}, 10);
    s = d.record;
    for (int i = 0; i < 2; ++i)
      s = e.on_report(&s, report("p" + std::to_string(n) + std::to_string(i), false, serial),
                      nullptr, {}, 10)
              .record;
    clock.advance(5 * kDay);
    return d;
  }
  FakeClock clock;
};

TEST_F(PartPolicy, the_third_drain_of_one_part_names_it_an_offender) {
  PolicyEngine e(default_policy(), BreakerConfig{}, false, clock, /*repair=*/true);
  NodeRecord s;
  s.node = "gpu-2";
  EXPECT_EQ(episode(e, s, 1, "1652823054323").action, Action::kDrain);
  EXPECT_EQ(episode(e, s, 2, "1652823054323").action, Action::kDrain);
  EXPECT_TRUE(s.repair.offender.empty());
  const Decision third = episode(e, s, 3, "1652823054323");
  // A plain drain (Slurm drains it as any other); the ladder relabels it `replace` next.
  EXPECT_EQ(third.action, Action::kDrain);
  EXPECT_EQ(third.reason.rfind("vigil: nvml_row_remap", 0), 0u) << third.reason;
  EXPECT_EQ(third.record.repair.offender, "gpu3 serial 1652823054323 drained 3 times in 30 days");
}

TEST_F(PartPolicy, with_the_ladder_off_the_history_is_kept_and_a_swap_starts_it_afresh) {
  PolicyEngine off(default_policy(), BreakerConfig{}, false, clock);
  NodeRecord s;
  s.node = "gpu-2";
  for (int n = 1; n <= 3; ++n)
    EXPECT_EQ(episode(off, s, n, "1652823054323").action, Action::kDrain);
  EXPECT_TRUE(s.repair.offender.empty());  // off: a plain drain, never replace
  ASSERT_EQ(s.parts.size(), 4u);
  EXPECT_EQ(s.parts[3].drains.size(), 3u);
  PolicyEngine on(default_policy(), BreakerConfig{}, false, clock, /*repair=*/true);
  const Decision swapped = episode(on, s, 4, "1652823059999");  // a new board in slot 3
  EXPECT_TRUE(swapped.record.repair.offender.empty());
  EXPECT_NE(swapped.why.find("gpu3 part changed"), std::string::npos) << swapped.why;
  EXPECT_EQ(s.parts[3].drains.size(), 1u);
}

// Through the drainer core and the Slurm sink: the third drain of one part is applied in Slurm
// with Vigil's reason, and the ladder's next tick relabels it `replace` naming the serial (a
// replace step in the metrics).
// A part's history follows the part: moved to another slot of the node, pulled and kept in
// `departed`, or found on another node through the lookup; each drain counts once.
TEST(Parts, a_moved_part_brings_its_drains_and_a_part_that_leaves_is_remembered) {
  std::vector<PartRecord> parts, departed;
  update_parts(parts, departed, {{0, "A", "GPU-A", ""}, {1, "B", "GPU-B", ""}});
  parts[0].drains = {100, 200};
  // A and B trade slots: A's drains go with it to slot 1.
  const auto notes = update_parts(parts, departed, {{0, "B", "GPU-B", ""}, {1, "A", "GPU-A", ""}});
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(parts[1].serial, "A");
  EXPECT_EQ(parts[1].drains, (std::vector<int64_t>{100, 200}));
  EXPECT_TRUE(parts[0].drains.empty());
  EXPECT_EQ(notes[1], "gpu1 part changed (serial B -> serial A): 2 earlier drain(s) follow it");
  // A is pulled (a new part C in slot 1): remembered with its drains, and A fitted again later
  // brings them back.
  update_parts(parts, departed, {{0, "B", "GPU-B", ""}, {1, "C", "GPU-C", ""}});
  ASSERT_EQ(departed.size(), 1u);
  EXPECT_EQ(departed[0].serial, "A");
  EXPECT_TRUE(parts[1].drains.empty());
  update_parts(parts, departed, {{0, "A", "GPU-A", ""}, {1, "C", "GPU-C", ""}});
  EXPECT_EQ(parts[0].drains, (std::vector<int64_t>{100, 200}));
  EXPECT_TRUE(departed.empty()) << "A is back: not departed";
  // From another node, through the lookup; a drain both know counts once.
  std::vector<PartRecord> other, other_gone;
  const PartLookup elsewhere = [](const PartRecord& p) {
    return p.uuid == "GPU-A" ? std::vector<int64_t>{200, 300} : std::vector<int64_t>{};
  };
  update_parts(other, other_gone, {{5, "A", "GPU-A", ""}}, elsewhere);
  EXPECT_EQ(other[0].drains, (std::vector<int64_t>{200, 300}));
  // At most kMaxDepartedParts are remembered, the oldest dropped first.
  std::vector<PartRecord> many, gone;
  for (size_t i = 0; i <= kMaxDepartedParts + 1; ++i) {
    update_parts(many, gone, {{0, "P" + std::to_string(i), "GPU-P" + std::to_string(i), ""}});
    many[0].drains = {static_cast<int64_t>(i)};
  }
  EXPECT_EQ(gone.size(), kMaxDepartedParts);
  EXPECT_EQ(gone.front().serial, "P1");
}

// Through the core: a GPU drained twice on gpu-2 is pulled and fitted to gpu-1, where one more
// drain makes it a repeat offender (3 in 30 days); the history survives a restart (journal).
TEST(PartHistoryCore, a_gpu_moved_to_another_node_brings_its_history) {
  testing::TempDir dir;
  FakeClock clock;
  auto cfg = testing::drainer_test_config(dir.str());
  cfg.repair.reboot = true;
  auto slurm = testing::fake_cluster(4);
  auto dr = std::make_unique<Drainer>(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr->open().ok());
  int runs = 0;
  auto report = [&](const std::string& node, const std::string& gpu3_serial, bool fail) {
    return remap_report(node, "r" + std::to_string(++runs), gpu3_serial, fail, clock.now_unix());
  };
  auto decide = [&](const NodeReport& r) {
    ASSERT_TRUE(dr->ingest({r}).ok());
    dr->process_pending();
    dr->run_slurm_sink_once();
  };
  for (int n = 0; n < 2; ++n) {  // two drains of serial 1652823054323 on gpu-2
    decide(report("gpu-2", "1652823054323", true));
    EXPECT_TRUE(slurm->get("gpu-2").drain) << n;
    decide(report("gpu-2", "1652823054323", false));
    decide(report("gpu-2", "1652823054323", false));
    clock.advance(5 * kDay);
  }
  decide(report("gpu-2", "1652823050000", false));  // pulled: another part in slot 3
  ASSERT_EQ(dr->node("gpu-2")->departed_parts.size(), 1u);
  // A restart replays the journal: the pulled part is still remembered.
  dr.reset();
  dr = std::make_unique<Drainer>(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr->open().ok());
  ASSERT_EQ(dr->node("gpu-2")->departed_parts.size(), 1u);
  clock.advance(kDay);
  decide(report("gpu-1", "1652823054323", false));  // fitted to gpu-1
  EXPECT_NE(dr->node("gpu-1")->note.find("2 earlier drain(s) follow it"), std::string::npos)
      << dr->node("gpu-1")->note;
  decide(report("gpu-1", "1652823054323", true));  // its third drain in 30 days
  EXPECT_TRUE(slurm->get("gpu-1").drain);
  clock.advance(10);
  EXPECT_GE(dr->tick(), 1);
  dr->run_slurm_sink_once();
  const std::string reason = slurm->get("gpu-1").reason;
  EXPECT_NE(reason.find("(repeat offender: gpu3 serial 1652823054323 drained 3 times in 30 days)"),
            std::string::npos)
      << reason;
}

TEST(PartHistoryCore, a_repeat_offender_ends_drained_in_slurm_as_replace) {
  testing::TempDir dir;
  FakeClock clock;
  auto cfg = testing::drainer_test_config(dir.str());
  cfg.repair.reboot = true;
  auto slurm = testing::fake_cluster(4);
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto report = [&](const std::string& run, bool fail) {
    return remap_report("gpu-2", run, "1652823054323", fail, clock.now_unix());
  };
  auto decide = [&](const NodeReport& r) {
    ASSERT_TRUE(dr.ingest({r}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
  };
  for (int n = 1; n <= 3; ++n) {
    decide(report("f" + std::to_string(n), true));
    EXPECT_TRUE(slurm->get("gpu-2").drain) << n;
    if (n == 3) break;
    decide(report("p" + std::to_string(n) + "a", false));
    decide(report("p" + std::to_string(n) + "b", false));
    EXPECT_FALSE(slurm->get("gpu-2").drain) << n;
    clock.advance(5 * kDay);
  }
  const std::string first = slurm->get("gpu-2").reason;
  EXPECT_EQ(first.rfind("vigil: nvml_row_remap", 0), 0u) << first;
  clock.advance(10);  // past the cached Slurm view
  EXPECT_GE(dr.tick(), 1);
  dr.run_slurm_sink_once();
  const std::string relabelled = slurm->get("gpu-2").reason;
  EXPECT_EQ(relabelled.rfind("vigil: replace nvml_row_remap", 0), 0u) << relabelled;
  EXPECT_NE(relabelled.find("(repeat offender: gpu3 serial 1652823054323 drained 3 times in 30 "
                            "days)"),
            std::string::npos)
      << relabelled;
  EXPECT_TRUE(slurm->get("gpu-2").drain);
  EXPECT_EQ(dr.node("gpu-2")->repair.stage, RepairStage::kReplace);
  EXPECT_NE(dr.metrics_text().find(R"(vigil_repair_steps_total{step="replace"} 1)"),
            std::string::npos);
}

}  // namespace
}  // namespace vigil::drainer
