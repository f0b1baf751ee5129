// kmsg_xid against a fake kernel log (a plain file of /dev/kmsg records) and a fake boot id.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kmsg_fixture.h"
#include "nvml/nvml_common.h"
#include "passive/kmsg_reader.h"

namespace vigil {

namespace {

using KmsgXid = testing::KmsgFixture;

constexpr const char* kXid79 =
    "4,11,500,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the "
    "bus.\n";

}  // namespace

TEST_F(KmsgXid, a_quiet_log_passes) {
  log("6,1,100,-;Linux version 6.1\n6,2,200,-;NVRM: loading NVIDIA UNIX Kernel Module\n");
  auto r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "2 new kernel log records, no critical XID");
}

TEST_F(KmsgXid, a_fatal_xid_fails_and_keeps_failing_until_the_node_reboots) {
  log(std::string("6,10,100,-;boot\n") + kXid79);
  auto r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-KMSG-XID-REBOOT");  // the catalogue's RESTART_BM
  EXPECT_EQ(r.remedy, Remedy::kReboot);
  EXPECT_EQ(r.message, "XID 79 0000:18:00 (reboot)");
  // Nothing new in the log: the XID is still this boot's, the GPU was never reset.
  auto again = run();
  EXPECT_EQ(again.status, Status::kFail);
  EXPECT_EQ(again.message, "XID 79 0000:18:00 (reboot) (earlier in this boot)");
  // After a reboot (new boot id, fresh log) the node is judged afresh.
  boot("boot-2");
  log("6,1,100,-;Linux version 6.1\n");
  EXPECT_EQ(run().status, Status::kPass);
}

// The XID line names its GPU by bus id; gpu_count's earlier runs tied that bus id to an NVML
// index (nvml::seen_gpus), so the drain is charged to that GPU's part (review W7). A bus id no run
// has seen stays a node-level figure.
TEST_F(KmsgXid, a_fatal_xid_is_a_figure_of_the_gpu_at_its_bus_id) {
  std::filesystem::create_directories(ctx_.state_dir);
  nvml::remember_seen_gpus(
      ctx_, {{"0:18:00.0", {0, "1652823054320"}}, {"0:2a:00.0", {1, "1652823054321"}}});
  log(std::string("6,10,100,-;boot\n") + kXid79 +
      "3,12,600,-;NVRM: Xid (PCI:0000:3b:00): 95, pid=2, name=python, Uncontained: FBHUB. RST: "
      "Yes, D-RST: No\n");
  const auto r = run();
  ASSERT_EQ(r.status, Status::kFail);
  std::vector<std::pair<int, double>> per_gpu;
  for (const Measurement& m : r.measurements)
    if (m.name == "xid_gpu_fatal") {
      ASSERT_TRUE(m.gpu);
      per_gpu.emplace_back(*m.gpu, m.value);
      EXPECT_EQ(m.status(), Status::kFail);
    }
  EXPECT_EQ(per_gpu, (std::vector<std::pair<int, double>>{{0, 1}}));  // 3b:00 was never seen

  // 18:00 drops out and 2a:00 becomes index 0: 18:00 keeps its serial, not its old index, so
  // an XID naming 18:00 charges no slot rather than the healthy GPU now at 0.
  nvml::remember_seen_gpus(ctx_, {{"0:2a:00.0", {0, "1652823054321"}}});
  const auto seen = nvml::seen_gpus(ctx_);
  EXPECT_EQ(seen.at("0:18:00.0").index, -1);
  EXPECT_EQ(seen.at("0:18:00.0").serial, "1652823054320");
  EXPECT_EQ(seen.at("0:2a:00.0").index, 0);
  const auto again = run();  // the XID 79 is still remembered for this boot
  for (const Measurement& m : again.measurements) EXPECT_NE(m.name, "xid_gpu_fatal");
}

// A GPU gone for longer than kForgetGoneGpuAfterS leaves gpus-<node>.json: a board replaced or
// renumbered (other bus ids) is not named "seen before" for ever; a GPU that returns in time is
// seen again with its clock cleared.
TEST_F(KmsgXid, a_gpu_gone_for_thirty_days_is_forgotten) {
  std::filesystem::create_directories(ctx_.state_dir);
  const std::int64_t t0 = 1'760'000'000;
  nvml::remember_seen_gpus(ctx_, {{"0:18:00.0", {0, "A"}}, {"0:2a:00.0", {1, "B"}}}, {}, t0);
  nvml::remember_seen_gpus(ctx_, {{"0:2a:00.0", {0, "B"}}}, nvml::seen_gpus(ctx_), t0 + 60);
  EXPECT_EQ(nvml::seen_gpus(ctx_).at("0:18:00.0").gone_since, t0 + 60);
  // Back within the window: seen again, its clock cleared.
  nvml::remember_seen_gpus(ctx_, {{"0:18:00.0", {0, "A"}}, {"0:2a:00.0", {1, "B"}}},
                           nvml::seen_gpus(ctx_), t0 + 86400);
  EXPECT_EQ(nvml::seen_gpus(ctx_).at("0:18:00.0").gone_since, 0);
  nvml::remember_seen_gpus(ctx_, {{"0:2a:00.0", {0, "B"}}}, nvml::seen_gpus(ctx_), t0 + 86400);
  const std::int64_t gone = t0 + 86400;
  nvml::remember_seen_gpus(ctx_, {{"0:2a:00.0", {0, "B"}}}, nvml::seen_gpus(ctx_),
                           gone + nvml::kForgetGoneGpuAfterS);
  EXPECT_EQ(nvml::seen_gpus(ctx_).count("0:18:00.0"), 1u);  // exactly 30 days: still kept
  // A node still short of a GPU keeps naming it, however long its repair takes.
  nvml::remember_seen_gpus(ctx_, {{"0:2a:00.0", {0, "B"}}}, nvml::seen_gpus(ctx_),
                           gone + 90 * 86400, /*forget_gone=*/false);
  EXPECT_EQ(nvml::seen_gpus(ctx_).count("0:18:00.0"), 1u);
  nvml::remember_seen_gpus(ctx_, {{"0:2a:00.0", {0, "B"}}}, nvml::seen_gpus(ctx_),
                           gone + nvml::kForgetGoneGpuAfterS + 1);
  const auto seen = nvml::seen_gpus(ctx_);
  EXPECT_EQ(seen.count("0:18:00.0"), 0u);
  EXPECT_EQ(seen.at("0:2a:00.0").serial, "B");
}

TEST_F(KmsgXid, only_xids_after_the_cursor_count) {
  constexpr const char* kXid94 =  // contained ECC: watch (reset the GPU when convenient)
      "6,10,100,-;NVRM: Xid (PCI:0000:18:00): 94, pid='<unknown>', name=<unknown>, Contained: "
      "SM (0x1). RST: No, D-RST: No\n";
  log(kXid94);
  auto first = run();
  EXPECT_EQ(first.status, Status::kWarn);
  EXPECT_EQ(first.message, "XID 94 0000:18:00 (watch)");
  // Same log, one more harmless record: the XID 31 was already reported.
  log(std::string(kXid94) + "6,11,200,-;other\n");
  auto second = run();
  EXPECT_EQ(second.status, Status::kPass) << second.message;
  EXPECT_EQ(second.message, "1 new kernel log records, no critical XID");
}

TEST_F(KmsgXid, an_application_xid_is_reported_but_passes) {
  log("6,10,100,-;NVRM: Xid (PCI:0000:18:00): 13, pid=1, Graphics Exception\n");
  auto r = run();
  EXPECT_EQ(r.status, Status::kPass);
  EXPECT_NE(r.message.find("XID 13 0000:18:00 (not health-critical)"), std::string::npos);
}

TEST_F(KmsgXid, records_the_ring_buffer_overwrote_are_a_warning_not_a_fail) {
  log("6,5,100,-;seen\n");
  ASSERT_EQ(run().status, Status::kPass);
  // Next run: the buffer wrapped, the oldest record left is 10; 6-9 were never read.
  log("6,10,100,-;later\n6,11,200,-;later still\n");
  auto r = run();
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.fault_code, "VIGIL-KMSG-LOST");
  EXPECT_NE(r.message.find("overwrote 4 records"), std::string::npos) << r.message;
}

TEST_F(KmsgXid, a_log_whose_sequence_went_back_is_read_whole) {
  log("6,50,100,-;old\n");
  ASSERT_EQ(run().status, Status::kPass);
  log(std::string("6,1,100,-;restart\n") + "4,2,500,-;NVRM: Xid (PCI:0000:18:00): 48, DBE\n");
  auto r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_NE(r.message.find("XID 48 0000:18:00"), std::string::npos);
  EXPECT_NE(r.message.find("kernel log restarted"), std::string::npos);
}

TEST_F(KmsgXid, malformed_and_partial_lines_never_fail) {
  log(std::string("garbage\n6,1,100,-;fine\n") + "4,2,500,-;NVRM: Xid (PCI:0000:18:00): 7");
  auto r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("1 malformed kernel log lines skipped"), std::string::npos);
  // The record being written is finished by the next run and read then, once.
  log(std::string("garbage\n6,1,100,-;fine\n") + "4,2,500,-;NVRM: Xid (PCI:0000:18:00): 79, x\n");
  EXPECT_EQ(run().status, Status::kFail);
}

TEST_F(KmsgXid, an_unreadable_log_or_cursor_is_an_error_or_a_note_never_a_fail) {
  ctx_.kmsg_path = dir_.file("missing");
  auto r = run();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.fault_code, "VIGIL-KMSG-READ");
  ctx_.kmsg_path = dir_.file("kmsg");
  dir_.write("state/kmsg_xid.gpu-0.json", "{broken");
  log("6,1,100,-;fine\n");
  auto noted = run();
  EXPECT_EQ(noted.status, Status::kPass);
  EXPECT_NE(noted.message.find("malformed cursor"), std::string::npos) << noted.message;
}

}  // namespace vigil

namespace vigil {

// Review F07. Genuine driver lines (sources in each comment): Xid 154 states the driver's own
// recovery action; NVIDIA's catalogue clears 48/74/95/119/120/140 with a GPU reset, which keeps
// the boot id, so `vigil-check xid-clear` must be able to forget them, and only them.
TEST_F(KmsgXid, xid_154_is_judged_by_the_recovery_action_it_states) {
  // NVIDIA/NVSentinel syslog-health-monitor XID parser tests ("XID 154" case).
  log("3,20,100,-;NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) "
      "to 0x1 (GPU Reset Required)\n");
  auto reset = run();
  EXPECT_EQ(reset.status, Status::kFail) << reset.message;
  EXPECT_EQ(reset.remedy, Remedy::kResetGpu);
  EXPECT_NE(reset.message.find("XID 154 0008:01:00 (reset_gpu: GPU reset)"), std::string::npos)
      << reset.message;
  boot("boot-2");
  // An eGPU report quoting its kernel log after Xid 79 (public issue text, 2026):
  // "... 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)".
  log("3,21,100,-;NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) "
      "to 0x2 (Node Reboot Required)\n");
  auto reboot = run();
  EXPECT_EQ(reboot.status, Status::kFail);
  EXPECT_NE(reboot.message.find("(reboot: node reboot)"), std::string::npos) << reboot.message;
  EXPECT_EQ(reboot.message.find("xid-clear"), std::string::npos);  // a reset does not help
  boot("boot-3");
  log("3,22,100,-;NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU "
      "Reset Required) to 0x0 (None)\n");
  EXPECT_EQ(run().status, Status::kPass);  // back to none: nothing to do
  boot("boot-4");
  log("3,23,100,-;NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) "
      "to 0x3 (Drain P2P)\n");
  auto drain = run();  // a step: the driver names the next action (review W4)
  EXPECT_EQ(drain.status, Status::kWarn) << drain.message;
  EXPECT_FALSE(drain.remedy.has_value());
  log("3,24,100,-;NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x3 (Drain "
      "P2P) to 0x1 (GPU Reset Required)\n");
  auto next = run();  // ... and Vigil acts on the action the driver states next
  EXPECT_EQ(next.status, Status::kFail) << next.message;
  EXPECT_EQ(next.remedy, Remedy::kResetGpu);
}

TEST_F(KmsgXid, a_gpu_reset_clears_only_the_xids_a_reset_remedies_on_that_gpu) {
  log("3,30,100,-;NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=python, An uncorrectable double "
      "bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition "
      "0.\n" +
      std::string(kXid79).replace(0, 8, "4,31,500") +  // 79 on the same GPU: needs a reboot
      "3,32,600,-;NVRM: Xid (PCI:0000:3b:00): 95, pid=2, name=python, Uncontained: FBHUB. RST: "
      "Yes, D-RST: No\n");
  auto before = run();
  ASSERT_EQ(before.status, Status::kFail);
  EXPECT_NE(before.message.find("vigil-check xid-clear --gpu"), std::string::npos)
      << before.message;
  const std::string cursor = kmsg::cursor_path(ctx_.state_dir, ctx_.node);
  auto cleared = kmsg::clear_after_gpu_reset(cursor, "0000:18:00.0");  // nvidia-smi's spelling
  ASSERT_TRUE(cleared) << cleared.error().to_string();
  EXPECT_EQ(cleared->cleared, std::vector<std::string>{"XID 48 0000:18:00 (reset_gpu)"});
  EXPECT_EQ(cleared->kept, std::vector<std::string>{"XID 79 0000:18:00 (reboot)"});
  auto after = run();
  EXPECT_EQ(after.status, Status::kFail);  // 79 and the other GPU's 95 remain
  EXPECT_EQ(after.message.find("XID 48"), std::string::npos) << after.message;
  EXPECT_NE(after.message.find("XID 95 0000:3b:00"), std::string::npos) << after.message;
  ASSERT_TRUE(kmsg::clear_after_gpu_reset(cursor, "0000:3B:00"));
  auto last = run();
  EXPECT_EQ(last.message.find("XID 95"), std::string::npos) << last.message;
  EXPECT_FALSE(kmsg::clear_after_gpu_reset(cursor, "18:00"));  // not a bus id: an error
}

}  // namespace vigil
