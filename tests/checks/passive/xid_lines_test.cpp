// The XID and SXID line parsers on genuine driver lines from public bug reports (every format:
// dmesg, dmesg -T, journald, Talos, with and without "PCI:", pid/name forms, MIG), and kmsg_xid
// judging them with the XID catalogue: floods, cancellation, NVLink5 decode, SXIDs. Each line's
// source: tests/fixtures/kmsg/SOURCES.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kmsg_fixture.h"
#include "passive/kmsg_reader.h"

namespace vigil {
namespace {

const std::string kFixtures = std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/kmsg/";

std::vector<std::string> lines_of(const std::string& file) {
  std::ifstream in(kFixtures + file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}

// The first genuine line of `file` holding `needle`.
std::string line_with_in(const std::string& file, const std::string& needle) {
  for (const std::string& l : lines_of(file))
    if (l.find(needle) != std::string::npos) return l;
  ADD_FAILURE() << "no line of " << file << " holds " << needle;
  return "";
}
std::string line_with(const std::string& needle) { return line_with_in("xid-lines.txt", needle); }

// A captured line as /dev/kmsg gives its record's text: without dmesg's "[   13.283418] " or
// journald's "Jul 09 10:42:47 host kernel: ".
std::string kernel_text(std::string line) {
  if (line.starts_with("[")) {
    if (const size_t end = line.find("] "); end != std::string::npos) return line.substr(end + 2);
  }
  if (const size_t k = line.find(" kernel: "); k != std::string::npos) return line.substr(k + 9);
  return line;
}

TEST(XidLines, every_genuine_xid_and_sxid_line_parses_whatever_the_log_put_before_it) {
  const std::vector<std::string> lines = lines_of("xid-lines.txt");
  ASSERT_GE(lines.size(), 170u);
  int xids = 0, sxids = 0, sxid_details = 0;
  for (const std::string& l : lines) {
    if (l.find("NVRM: Xid (") != std::string::npos) {
      auto x = kmsg::parse_xid(l);
      ASSERT_TRUE(x) << l;
      EXPECT_GT(x->xid, 0u) << l;
      EXPECT_EQ(x->device.find_first_of(" ()"), std::string::npos) << l;
      EXPECT_FALSE(x->device.starts_with("PCI")) << l;
      ++xids;
    } else {
      ASSERT_NE(l.find("SXid ("), std::string::npos) << "neither Xid nor SXid: " << l;
      if (auto s = kmsg::parse_sxid(l)) {
        EXPECT_GT(s->sxid, 10000u) << l;
        EXPECT_EQ(s->severity_line, l.find(", Severity ") != std::string::npos) << l;
        EXPECT_TRUE(s->instance) << l;  // "Link 44" or "Engine instance 44"
        ++sxids;
      } else {
        // The driver's Data lines of one SXid carry neither severity nor link.
        EXPECT_NE(l.find(", Data {"), std::string::npos) << l;
        ++sxid_details;
      }
    }
  }
  EXPECT_GT(xids, 140);
  EXPECT_GT(sxids, 8);
  EXPECT_GT(sxid_details, 4);
}

TEST(XidLines, each_driver_era_gives_the_device_number_and_detail) {
  // Journald prefix, pid='<unknown>' form (NVIDIA/gpu-operator #1146).
  auto dbe = kmsg::parse_xid(line_with("48, pid='<unknown>'"));
  ASSERT_TRUE(dbe);
  EXPECT_EQ(dbe->device, "0000:07:00");
  EXPECT_EQ(dbe->xid, 48u);
  EXPECT_TRUE(dbe->detail.starts_with("pid='<unknown>', name=<unknown>, An uncorrectable"));
  // A 2012 driver: no "PCI:", no domain (pastebin zhK16889).
  auto old = kmsg::parse_xid(line_with("Xid (0009:00): 53"));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->device, "0009:00");
  EXPECT_EQ(old->xid, 53u);
  // MIG: the GPU instance follows the bus id (NVIDIA open-gpu-kernel-modules source example).
  auto mig = kmsg::parse_xid(line_with("GPU-I:05"));
  ASSERT_TRUE(mig);
  EXPECT_EQ(mig->device, "0000:01:00");
  EXPECT_EQ(mig->xid, 94u);
  // Talos's "<ip>: kern: warning: [<time>]: " prefix (vllm-project/vllm #40652).
  auto talos = kmsg::parse_xid(line_with("NVLink: fatal error detected on link 8"));
  ASSERT_TRUE(talos);
  EXPECT_EQ(talos->device, "0000:48:00");
  EXPECT_EQ(talos->xid, 74u);

  auto fatal = kmsg::parse_sxid(line_with("20034, Fatal, Link 28"));
  ASSERT_TRUE(fatal);
  EXPECT_TRUE(fatal->fatal);
  EXPECT_EQ(fatal->device, "0000:c2:00.0");
  auto non_fatal = kmsg::parse_sxid(line_with("22013, Non-fatal, Link 44"));
  ASSERT_TRUE(non_fatal);
  EXPECT_FALSE(non_fatal->fatal);
  EXPECT_EQ(non_fatal->sxid, 22013u);
  EXPECT_EQ(non_fatal->instance, 44u);
  // Severity lines: NVSWITCH_ERROR_SEVERITY_TYPE, FATAL 1 (the Talos capture of issue 446).
  auto severity = kmsg::parse_sxid(line_with("24007, Severity 1 Engine instance 12"));
  ASSERT_TRUE(severity);
  EXPECT_TRUE(severity->severity_line);
  EXPECT_TRUE(severity->fatal);
  EXPECT_EQ(severity->instance, 12u);
  EXPECT_EQ(severity->device, "0000:aa:00.0");
  auto five = kmsg::parse_sxid(line_with("10002, Severity 5"));  // MENTHOS: not a known value
  ASSERT_TRUE(five);
  EXPECT_EQ(five->severity, 5u);
  EXPECT_FALSE(five->fatal);
}

TEST(XidLines, driver_lines_that_are_not_xid_records_are_not_read_as_xids) {
  for (const std::string& l : lines_of("xid-adjacent-lines.txt")) {
    if (l.find("NVRM: Xid (") != std::string::npos) continue;  // redacted or injected records
    EXPECT_FALSE(kmsg::parse_xid(l)) << l;
    EXPECT_FALSE(kmsg::parse_sxid(l)) << l;
  }
}

// The catalogue's judgement of genuine lines, including the register decode of NVLink5 XIDs:
// two "Fatal" XID 149 lines (leptonai/gpud PRs #1160 and #1174) decode to different actions.
TEST(XidLines, genuine_lines_are_judged_by_the_catalogue) {
  const XidCatalogue& cat = *XidCatalogue::builtin();
  auto judged = [&](const std::string& needle) {
    auto x = kmsg::parse_xid(line_with(needle));
    EXPECT_TRUE(x) << needle;
    return x ? cat.judge(x->xid, x->detail).action : XidAction::kWatch;
  };
  EXPECT_EQ(judged("79, GPU has fallen off the bus."), XidAction::kReboot);
  EXPECT_EQ(judged("48, pid='<unknown>'"), XidAction::kResetGpu);
  EXPECT_EQ(judged("errorString CTX SWITCH TIMEOUT"), XidAction::kResetGpu);  // 109
  EXPECT_EQ(judged("Graphics SM Warp Exception"), XidAction::kNone);          // 13
  EXPECT_EQ(judged("caused by previous Xid 149"), XidAction::kNone);          // 45
  EXPECT_EQ(judged("Contained: SM (0x1)"), XidAction::kWatch);                // 94
  EXPECT_EQ(judged("63, pid=1850, Row Remapper"), XidAction::kNone);          // IGNORE
  EXPECT_EQ(judged("to 0x1 (PF FLR)"), XidAction::kResetGpu);                 // 154, 610 driver
  EXPECT_EQ(judged("to 0x1 (GPU Reset Required)"), XidAction::kResetGpu);
  // NETIR_LINK_DOWN, reason 0x25 (peer device): RESET_GPU; reason 0x26: IGNORE, although the
  // driver wrote "Fatal" in both.
  EXPECT_EQ(judged("(0x025001c6"), XidAction::kResetGpu);
  EXPECT_EQ(judged("(0x026001c6"), XidAction::kNone);
  EXPECT_EQ(judged("NETIR Fatal XC0 i0 Link -1"), XidAction::kResetGpu);  // NETIR_INT
  EXPECT_EQ(judged("RLW_RXPIPE Nonfatal"), XidAction::kNone);             // errorStatus 0x8: IGNORE
  EXPECT_EQ(judged("SAW_MVB Nonfatal"), XidAction::kNone);                // errorStatus 0x8: IGNORE
  EXPECT_EQ(cat.judge_sxid(20034, true).action, XidAction::kReboot);
  // Non-fatal SXids warn, as DCGM's health watch does (review W12), except those the Fabric
  // Manager guide calls safe to ignore (22013) or self-correcting (single-bit ECC).
  EXPECT_EQ(cat.judge_sxid(19084, false).action, XidAction::kWatch);
  EXPECT_EQ(cat.judge_sxid(12028, false).action, XidAction::kWatch);
  EXPECT_EQ(cat.judge_sxid(22013, false).action, XidAction::kNone);
  EXPECT_EQ(cat.judge_sxid(24001, false).action, XidAction::kNone);
  // A line the driver prints Fatal keeps its verdict, whatever the number's entry says
  // (19055 is reported Fatal on LR10 and LS10: open-gpu-kernel-modules intr_ls10.c).
  EXPECT_EQ(cat.judge_sxid(19055, true).action, XidAction::kReboot);
  EXPECT_EQ(cat.judge_sxid(19055, false).action, XidAction::kNone);
  // XIDs 167 and 169 have no action in the catalogue; 169 is a micro-controller halt as 62 is
  // (RESET_GPU), 167 a fatal PCIe timeout (review W13).
  EXPECT_EQ(cat.judge(167).action, XidAction::kResetGpu);
  EXPECT_EQ(cat.judge(169).action, XidAction::kResetGpu);
  EXPECT_EQ(cat.judge(168).action, XidAction::kWatch);
}

using KmsgXidLines = testing::KmsgFixture;

// A flood is counted per distinct item and a message names at most 8 of them (one XID 95 storm
// was ~800k lines of 29 distinct events, NVIDIA/NVSentinel #1120).
TEST_F(KmsgXidLines, a_flood_is_one_item_with_a_count) {
  std::vector<std::string> flood;
  for (const std::string& l : lines_of("xid-lines.txt"))
    if (l.find("0000:61:00): 119") != std::string::npos) flood.push_back(l);
  ASSERT_GE(flood.size(), 10u);
  for (int i = 0; i < 2000; ++i) flood.push_back(flood[i % 10]);
  log_lines(flood);
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message,
            "XID 119 0000:61:00 (reset_gpu); after resetting the GPU: vigil-check xid-clear "
            "--gpu <bus id>");
  EXPECT_EQ(r.remedy, Remedy::kResetGpu);
  EXPECT_EQ(r.fault_code, "VIGIL-KMSG-XID-RESET-GPU");

  std::vector<std::string> many;  // 12 distinct watched XIDs: 8 named, the rest counted
  for (int bus = 0; bus < 12; ++bus) {
    char dev[16];
    std::snprintf(dev, sizeof dev, "0000:%02x:00", bus + 16);
    many.push_back(std::string("NVRM: Xid (PCI:") + dev + "): 94, Contained: SM (0x1).");
    many.push_back(many.back());
  }
  ctx_.state_dir.clear();
  log_lines(many, 5000);
  const CheckResult w = run();
  EXPECT_EQ(w.status, Status::kWarn);
  EXPECT_NE(w.message.find("XID 94 0000:10:00 (watch) x2"), std::string::npos) << w.message;
  EXPECT_NE(w.message.find(", and 4 more"), std::string::npos) << w.message;
  double other = -1;
  for (const Measurement& m : w.measurements)
    if (m.name == "xid_other_events") other = m.value;
  EXPECT_EQ(other, 24);
}

// The driver names the recovery action itself and takes it back: a later XID 154 "to 0x0
// (None)" on the same GPU withdraws the earlier one.
TEST_F(KmsgXidLines, xid_154_to_none_withdraws_the_earlier_154_of_that_gpu) {
  log_lines({line_with("(PCI:0000:0b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1"),
             "NVRM: Xid (PCI:0000:0b:00): 154, GPU recovery action changed from 0x1 (GPU Reset "
             "Required) to 0x0 (None)"});
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
}

// SXIDs: a Fatal one fails with a reboot (GPUs and NVSwitches reset together). 22013, which the
// Fabric Manager guide calls safe to ignore, is reported only, once per event: its Severity
// lines are the same events (x3, not x6) and its Data lines carry nothing.
TEST_F(KmsgXidLines, a_fatal_sxid_fails_and_non_fatal_ones_are_reported) {
  std::vector<std::string> lines;
  for (const std::string& l : lines_of("xid-lines.txt"))
    if (l.find("nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013") != std::string::npos)
      lines.push_back(l);
  log_lines(lines);
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("SXID 22013 0000:04:00.0 x3 (not health-critical)"), std::string::npos)
      << r.message;

  lines.push_back(line_with("20034, Fatal, Link 28"));
  log_lines(lines, 100);
  r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "SXID 20034 0000:c2:00.0 (reboot)");
  EXPECT_EQ(r.remedy, Remedy::kReboot);
}

// A Severity line whose first line is not in the log (rotated out of the ring buffer, or cut)
// is the event itself: "Severity 1" is fatal. One whose first line was read is not counted
// twice, even with other switches' lines between them.
TEST_F(KmsgXidLines, an_sxid_severity_line_without_its_first_line_is_judged_by_its_number) {
  log_lines({line_with("24007, Severity 1 Engine instance 12"),
             line_with("24007, Data {0x10000000, 0x10008100")});
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.message, "SXID 24007 0000:aa:00.0 (reboot)");
  EXPECT_EQ(r.remedy, Remedy::kReboot);

  std::vector<std::string> gpud;  // three switches interleaved, and an XID 79 before them
  for (const std::string& l : lines_of("xid-lines.txt"))
    if (l.starts_with("[67817")) gpud.push_back(l);
  ASSERT_EQ(gpud.size(), 9u);
  ctx_.state_dir.clear();
  log_lines(gpud, 200);
  r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  for (const char* sw : {"0000:06:00.0", "0000:05:00.0", "0000:07:00.0"})
    EXPECT_NE(r.message.find(std::string("SXID 20034 ") + sw + " (reboot)"), std::string::npos)
        << r.message;
  EXPECT_NE(r.message.find("XID 79 0000:91:00 (reboot)"), std::string::npos) << r.message;

  ctx_.state_dir.clear();
  log_lines({line_with("10002, Severity 5"), line_with("19084, Non-fatal, Link 29")}, 300);
  r = run();  // a severity Vigil does not know is not fatal; non-fatal SXids warn
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_NE(r.message.find("SXID 10002 0000:c4:00.0 (watch)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("SXID 19084 0000:c6:00.0 (watch)"), std::string::npos) << r.message;
}

// A site's policy: its entries replace the built-in ones, its cancellation rules are added.
TEST_F(KmsgXidLines, a_site_policy_changes_an_xids_action_and_adds_a_cancellation) {
  // Rules of the site's own: XID 13 bursts warn, and an XID 43 later on that GPU clears them.
  dir_.write("xid-policy.json", R"({
    "xids": [{"xid": 13, "action": "reset_gpu", "source": "site: 13 bursts preceded RMAs"}],
    "cancels": [{"when": 43, "clears": [13], "source": "site: test rule"}]
  })");
  auto site = XidCatalogue::builtin()->with_site_policy(dir_.file("xid-policy.json"));
  ASSERT_TRUE(site) << site.error().to_string();
  ctx_.xid = std::make_shared<const XidCatalogue>(std::move(*site));
  const std::string xid13 = line_with("Graphics SM Warp Exception on (GPC 1, TPC 1, SM 1)");
  log_lines({xid13});
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_NE(r.message.find("XID 13 0000:70:00 (reset_gpu)"), std::string::npos) << r.message;
  // Later: the 13 is cancelled, although the cursor remembered it.
  log_lines({xid13, "NVRM: Xid (PCI:0000:70:00): 43, pid=1, name=python, Ch 00000008"});
  r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
}

// The built-in rule (NVSentinel #1252): power smoothing re-engaged (162) cancels its
// disengagement (163), which is only reported, so the message no longer lists it.
TEST_F(KmsgXidLines, a_later_xid_162_cancels_an_earlier_163_of_that_gpu) {
  log_lines({"NVRM: Xid (PCI:0000:18:00): 163, Power smoothing disengaged",
             "NVRM: Xid (PCI:0000:3b:00): 163, Power smoothing disengaged",
             "NVRM: Xid (PCI:0000:18:00): 162, Power smoothing re-engaged"});
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("XID 162 0000:18:00, XID 163 0000:3b:00 (not health-critical)"),
            std::string::npos)
      << r.message;
}

// Only the kernel writes facility 0: a line user space wrote into /dev/kmsg (LOG_USER, priority
// 11 = user.err) cannot pose as the driver's and drain a node.
TEST_F(KmsgXidLines, a_line_user_space_wrote_into_the_kernel_log_is_not_an_xid) {
  log("11,1,100,-;NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen off the bus\n"
      "13,2,100,-;nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 20034, Fatal, Link 28 LTSSM Fault "
      "Up\n");
  EXPECT_EQ(run().status, Status::kPass);
  log("11,1,100,-;x\n13,2,100,-;x\n3,3,100,-;NVRM: Xid (PCI:0000:04:00): 79, GPU has fallen "
      "off the bus\n");
  EXPECT_EQ(run().status, Status::kFail);
}

// The cursor keeps 64 failing items; when it is full a stronger one replaces the weakest, so
// the remedy is still the boot's worst.
TEST_F(KmsgXidLines, a_full_memory_keeps_the_worst_remedy) {
  std::vector<std::string> lines;
  for (int bus = 0; bus < 70; ++bus) {
    char dev[16];
    std::snprintf(dev, sizeof dev, "0000:%02x:00", bus + 16);
    lines.push_back(std::string("NVRM: Xid (PCI:") + dev + "): 48, DBE");
  }
  lines.push_back("NVRM: Xid (PCI:0000:99:00): 79, GPU has fallen off the bus.");
  log_lines(lines);
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.remedy, Remedy::kReboot);
  EXPECT_EQ(r.fault_code, "VIGIL-KMSG-XID-REBOOT");
  auto cursor = kmsg::load_cursor(kmsg::cursor_path(ctx_.state_dir, ctx_.node));
  ASSERT_TRUE(cursor);
  EXPECT_EQ(cursor->fatal.size(), 64u);
  EXPECT_NE(std::find(cursor->fatal.begin(), cursor->fatal.end(), "XID 79 0000:99:00 (reboot)"),
            cursor->fatal.end());
}

// A cursor a Vigil before the catalogue wrote: its items are judged again from their number.
TEST(XidLines, items_remembered_before_the_catalogue_keep_their_meaning) {
  const XidCatalogue& cat = *XidCatalogue::builtin();
  EXPECT_EQ(kmsg::remembered_action("XID 48 0000:18:00", cat), XidAction::kResetGpu);
  EXPECT_EQ(kmsg::remembered_action("XID 79 0000:18:00", cat), XidAction::kReboot);
  EXPECT_EQ(kmsg::remembered_action("XID 154 0000:18:00 (gpu reset required)", cat),
            XidAction::kResetGpu);
  EXPECT_EQ(kmsg::remembered_action("XID 154 0000:18:00 (node reboot required)", cat),
            XidAction::kReboot);
  EXPECT_EQ(kmsg::remembered_action("XID 31 0000:18:00", cat), XidAction::kReboot);  // it failed
  EXPECT_EQ(kmsg::remembered_action("XID 95 0000:18:00 (reset_gpu)", cat), XidAction::kResetGpu);
  EXPECT_EQ(kmsg::remembered_action("SXID 20034 0000:c2:00.0 (reboot)", cat), XidAction::kReboot);
}

// Device health lines (kmsg_reader.h parse_device_fault) on genuine captures: the NIC
// firmware's fault lines and the NVLink link-mask failure parse; the dump's detail lines
// (assert_var, fw_ver, severity, ...) and the follow-on lines do not.
TEST(DeviceHealthLines, every_genuine_fault_line_parses_and_the_dumps_details_do_not) {
  const std::vector<std::string> lines = lines_of("device-health-lines.txt");
  ASSERT_EQ(lines.size(), 27u);
  std::vector<std::string> items;
  for (const std::string& l : lines) {
    const auto f = kmsg::parse_device_fault(kernel_text(l));
    if (!f) continue;
    EXPECT_FALSE(f->recovered) << l;
    items.push_back(f->item());
  }
  EXPECT_EQ(items, (std::vector<std::string>{
                       "NIC 0000:0d:00.0 mlx5 health compromised",
                       "NIC 0000:0d:00.0 mlx5 synd 0x1 firmware internal error",
                       "NIC 0000:0d:00.2 mlx5 health compromised",
                       "NIC 0001:19:00.0 mlx5 synd 0x7 irisc not responding",
                       "NIC 0000:00:00.0 mlx5 Fatal error 1",
                       "NIC 0000:00:00.0 mlx5 synd 0xff unrecognized error",
                       "NIC 0000:00:00.0 mlx5 health compromised",
                       "NIC 0004:01:00.1 mlx5 Fatal error",
                       "NIC 0004:01:00.1 mlx5 PCI slot unavailable",
                       "NIC 0004:01:00.1 mlx5 health recovery failed",
                       "NVLINK post-RX-detect link mask failed",
                   }));
  // Not a device's health: an XID, another driver's line, a name that is not a PCI address.
  EXPECT_FALSE(kmsg::parse_device_fault(line_with("NVRM: Xid (PCI:0000:07:00): 48")));
  EXPECT_FALSE(kmsg::parse_device_fault("ixgbe 0000:01:00.0: device's health compromised"));
  EXPECT_FALSE(kmsg::parse_device_fault("mlx5_core eth0 (x): device's health compromised"));
  // A kernel line quoting a user's text (an exec'd file name: fs/exec.c "process '%s' launched
  // '%s' with NULL argv") is not the driver's, whatever it holds.
  EXPECT_FALSE(kmsg::parse_device_fault(
      "process '/tmp/x mlx5_core 0000:01:00.0: device's health compromised' launched '/tmp/x' "
      "with NULL argv: empty string added"));
  EXPECT_FALSE(kmsg::parse_device_fault(lines.front()));  // dmesg's prefix: not a record's text
}

// kmsg_xid fails on a NIC's firmware fault with the remedy `reboot` (NVSentinel: fatal; a
// reboot reloads the firmware), the items named per PCI function; on the NVLink failure too
// (GPUd: Unhealthy, RebootSystem). The driver's own "health recovery succeeded" (health.c
// mlx5_health_try_recover, written here from its format string: no public capture found)
// withdraws that function's lines; a line user space wrote into /dev/kmsg counts for nothing.
TEST_F(KmsgXidLines, a_nic_firmware_fault_or_an_nvlink_failure_fails_with_a_reboot) {
  std::vector<std::string> cx6;
  for (const std::string& l : lines_of("device-health-lines.txt"))
    if (l.find("mlx5_core 0000:0d:00.") != std::string::npos) cx6.push_back(kernel_text(l));
  ASSERT_EQ(cx6.size(), 10u);
  log_lines(cx6);
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.remedy, Remedy::kReboot);
  EXPECT_EQ(r.fault_code, "VIGIL-KMSG-XID-REBOOT");
  EXPECT_EQ(r.message,
            "NIC 0000:0d:00.0 mlx5 health compromised (reboot), NIC 0000:0d:00.0 mlx5 synd 0x1 "
            "firmware internal error (reboot), NIC 0000:0d:00.2 mlx5 health compromised (reboot)");
  // Remembered for the boot: a quiet log afterwards proves nothing.
  log_lines(cx6, 1);
  r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_NE(r.message.find("(earlier in this boot)"), std::string::npos) << r.message;

  // The driver recovered 0000:0d:00.0: its lines go, the other function's stay.
  log_lines({"mlx5_core 0000:0d:00.0: mlx5_health_try_recover:337:(pid 2239): health recovery "
             "succeeded"},
            100);
  r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "NIC 0000:0d:00.2 mlx5 health compromised (reboot) (earlier in this boot)");

  ctx_.state_dir.clear();
  log_lines({kernel_text(line_with_in("device-health-lines.txt", "postRxDetLinkMask failed"))},
            200);
  r = run();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "NVLINK post-RX-detect link mask failed (reboot)");
  EXPECT_EQ(r.remedy, Remedy::kReboot);

  log("14,300,100,-;" + cx6.front() + "\n");  // LOG_USER: written by a process, not the driver
  r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
}

}  // namespace
}  // namespace vigil
