// Decision passes: a pass ends under a steady stream, unknown nodes never count towards the
// breaker, the breaker caps and survives restarts as journaled deltas, dry run, staleness and
// the operator's resume.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "file_size_limit.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

// fdatasync(2) failing once with EIO, as the kernel answers it after a write-back error
// (fdatasync(2): "EIO An error occurred during synchronization"). This machine cannot make a real
// disk fail under a unit test (dm-error needs root and a block device), so the one call is
// interposed: the executable's fdatasync is found before libc's, and every other call goes to
// libc's.
std::atomic<bool> g_fail_next_fdatasync{false};
extern "C" int fdatasync(int fd) {
  if (g_fail_next_fdatasync.exchange(false)) {
    errno = EIO;
    return -1;
  }
  static const auto real = reinterpret_cast<int (*)(int)>(dlsym(RTLD_NEXT, "fdatasync"));
  return real(fd);
}

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

// Under a steady stream of reports a decision pass still ends: it decides what waited when it
// started, hands its intents to the sinks, and leaves later arrivals to the next pass. (A pass
// that ran until the queue was empty never ended in the soak bench: no drain went out and no
// snapshot was taken while reports kept coming.) The Slurm read of the pass is where 600 more
// reports arrive here, after the pass took its first chunk.
TEST(Drainer, a_pass_ends_under_a_steady_stream_of_reports_and_hands_over_its_intents) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(8);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "first"), bad("gpu-1", "first")}).ok());
  slurm->after_read = [&] {
    std::vector<NodeReport> more;
    for (int i = 0; i < 600; ++i)
      more.push_back(good("gpu-" + std::to_string(2 + i % 6), "later-" + std::to_string(i)));
    ASSERT_TRUE(dr.ingest(more).ok());
  };
  EXPECT_EQ(dr.process_pending(), 2);
  EXPECT_EQ(dr.undecided(), 600u);              // the next pass's work
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 2u);  // the drains are with the sink already
  EXPECT_EQ(dr.process_pending(), 600);
  EXPECT_EQ(dr.undecided(), 0u);
}

// A report from a name Slurm does not know is never drained, so repeated reports cannot count
// towards (and open) the breaker, which would block real drains everywhere.
TEST(Drainer, reports_from_a_node_unknown_to_slurm_never_count_towards_the_breaker) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  auto cfg = test_config(d.str());
  cfg.breaker = {2, 100, 3600};
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  for (const char* run : {"a", "b", "c"}) {
    ASSERT_TRUE(dr.ingest({bad("ghost-7", run)}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
  }
  EXPECT_FALSE(dr.breaker().open);
  EXPECT_EQ(dr.node("ghost-7")->state, NodeState::kError);
  EXPECT_NE(dr.node("ghost-7")->note.find("Slurm has no node 'ghost-7'"), std::string::npos);
  ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_TRUE(slurm->get("gpu-1").drain);
}

TEST(Drainer, breaker_caps_a_bad_threshold_file_that_fails_every_node) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(100);
  auto cfg = test_config(d.str());
  cfg.breaker = {5, 10, 3600};
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  std::vector<NodeReport> rs;
  for (int i = 0; i < 100; ++i) rs.push_back(bad("gpu-" + std::to_string(i), "a"));
  ASSERT_TRUE(dr.ingest(rs).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  int drained = 0;
  for (int i = 0; i < 100; ++i) drained += slurm->get("gpu-" + std::to_string(i)).drain;
  EXPECT_EQ(drained, 5);
  EXPECT_TRUE(dr.breaker().open);
  EXPECT_NE(dr.metrics_text().find("vigil_circuit_breaker_open 1"), std::string::npos);
  // Reset by the operator; survives restart as closed.
  ASSERT_TRUE(dr.reset_breaker().ok());
  EXPECT_FALSE(dr.breaker().open);
}

// A node whose report cannot tell its SKU (NVML broken) stays in its SKU's breaker group, and
// the group is sized as such: sized as the empty "unknown" group (one node, cap 1) while its
// drain counted under the known SKU, the breaker opened for the whole fleet.
TEST(Drainer, a_report_of_unknown_sku_is_sized_in_the_nodes_known_sku_group) {
  TempDir d;
  FakeClock clock;
  auto cfg = test_config(d.str());
  cfg.breaker = {10, 50, 3600};              // 50% of a group of 4: 2 drains
  Drainer dr(cfg, nullptr, nullptr, clock);  // no Slurm view: groups by SKU
  ASSERT_TRUE(dr.open().ok());
  std::vector<NodeReport> rs;
  for (int i = 0; i < 4; ++i) rs.push_back(good("gpu-" + std::to_string(i), "a"));
  ASSERT_TRUE(dr.ingest(rs).ok());
  dr.process_pending();
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "b")}).ok());
  dr.process_pending();
  ASSERT_EQ(dr.node("gpu-0")->last_action, Action::kDrain);
  NodeReport unknown = bad("gpu-1", "b");
  unknown.sku = "unknown";
  ASSERT_TRUE(dr.ingest({unknown}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.node("gpu-1")->sku, "h100-sxm-80gb");
  EXPECT_EQ(dr.node("gpu-1")->last_action, Action::kDrain) << dr.node("gpu-1")->note;
  EXPECT_FALSE(dr.breaker().open) << dr.breaker().why;
}

TEST(Drainer, breaker_state_survives_restart) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(10);
  auto cfg = test_config(d.str());
  cfg.breaker = {1, 100, 3600};
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-0", "a"), bad("gpu-1", "a")}).ok());
    dr.process_pending();
    ASSERT_TRUE(dr.breaker().open);
  }
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_TRUE(dr.breaker().open);
}

// Journal lines that carry the breaker's whole state (with its list of drain times).
int journal_lines_with(const std::string& dir, const std::string& needle) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with("journal-")) continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  }
  return n;
}

TEST(Drainer, drains_counted_by_the_breaker_survive_restart_as_journaled_deltas) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(10);
  auto cfg = test_config(d.str());
  cfg.breaker = {3, 100, 3600};
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-0", "a"), bad("gpu-1", "a")}).ok());
    dr.process_pending();
    ASSERT_FALSE(dr.breaker().open);
    // Two drains counted, each journaled as one delta: no record repeats the window.
    EXPECT_EQ(journal_lines_with(d.str(), "\"breaker_drain\""), 2);
    EXPECT_EQ(journal_lines_with(d.str(), "recent_drains"), 0);
  }
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_EQ(dr.breaker().recent_drains.size(), 1u);
  EXPECT_EQ(dr.breaker().recent_drains.begin()->second.size(), 2u);
  // The cap is 3: after the restart one more drain fits, the next one opens the breaker.
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), bad("gpu-3", "a")}).ok());
  dr.process_pending();
  EXPECT_TRUE(dr.node("gpu-2")->drained_by_vigil);
  EXPECT_FALSE(dr.node("gpu-3")->drained_by_vigil);
  EXPECT_TRUE(dr.breaker().open);
  EXPECT_EQ(journal_lines_with(d.str(), "recent_drains"), 1);  // the opening, whole
}

TEST(Drainer, replayed_breaker_drains_leave_the_window_when_they_age_out) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(10);
  auto cfg = test_config(d.str());
  cfg.breaker = {2, 100, 600};
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-0", "a")}).ok());
    dr.process_pending();
    clock.advance(400);
    ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
    dr.process_pending();
    ASSERT_FALSE(dr.breaker().open);
  }
  clock.advance(300);  // gpu-0's drain is now outside the 600 s window, gpu-1's is not
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), bad("gpu-3", "a")}).ok());
  dr.process_pending();
  EXPECT_TRUE(dr.node("gpu-2")->drained_by_vigil);
  EXPECT_FALSE(dr.node("gpu-3")->drained_by_vigil);
  EXPECT_TRUE(dr.breaker().open);
}

TEST(Drainer, dry_run_changes_nothing_in_slurm_but_annotates_would_drain) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  auto cfg = test_config(d.str());
  cfg.dry_run = true;
  Drainer dr(cfg, slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  EXPECT_TRUE(slurm->calls_copy().empty());
  EXPECT_EQ(kube->annotations_of("gpu-2")["vigil.dev/state"], "would-drain");
  EXPECT_NE(dr.metrics_text().find(
                R"(vigil_actions_total{action="drain",outcome="dry_run",sink="slurm"} 1)"),
            std::string::npos);
}

TEST(Drainer, process_pending_returns_only_once_what_was_accepted_is_decided) {
  // The processor thread (start) races a caller for the queue. Here it is caught holding the
  // report, halfway through its pass (reading Slurm's node table): the caller's process_pending
  // must wait for that pass, not return with the report undecided. Without the pass lock this
  // was a rare failure of the hook's spool tests; here it fails every time.
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  dr.start();
  std::atomic<bool> reading{false};
  {
    std::lock_guard lk(slurm->mu);  // the tick thread may read Slurm meanwhile
    slurm->after_read = [&] {
      reading = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    };
  }
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
  for (int i = 0; i < 500 && !reading; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(reading);
  dr.process_pending();
  auto st = dr.node("gpu-2");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->last_run_id, "a");
  dr.stop();
}

TEST(Drainer, stale_nodes_are_marked_not_drained) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  auto cfg = test_config(d.str());
  cfg.policy.staleness_s = 3600;
  Drainer dr(cfg, slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({good("gpu-0", "a")}).ok());
  dr.process_pending();
  clock.advance(3601);
  EXPECT_EQ(dr.tick(), 1);
  dr.run_kube_sink_once();
  EXPECT_EQ(dr.node("gpu-0")->state, NodeState::kStale);
  EXPECT_EQ(kube->annotations_of("gpu-0")["vigil.dev/state"], "stale");
  EXPECT_TRUE(slurm->calls_copy().empty());
  EXPECT_NE(dr.metrics_text().find(R"(vigil_node_report_age_seconds{node="gpu-0"} 3601)"),
            std::string::npos);
}

TEST(Drainer, operator_resume_and_snapshot_restart) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto cfg = test_config(d.str());
  cfg.snapshot_every = 3;
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
    ASSERT_TRUE(dr.snapshot_now().ok());
    EXPECT_FALSE(dr.resume("gpu-9").ok());
    auto r = dr.resume("gpu-2");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    const auto owed = dr.pending_intents();
    ASSERT_EQ(owed.size(), 1u);
    EXPECT_EQ(owed[0].action, IntentAction::kResume);
    EXPECT_TRUE(owed[0].by_operator);  // said by the decision, not inferred from "no report"
    dr.run_slurm_sink_once();
    EXPECT_FALSE(slurm->get("gpu-2").drain);
  }
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_FALSE(dr.node("gpu-2")->drained_by_vigil);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
}

// Hardware classes (classes.h) end to end: Slurm declares 8 nodes gpu:8 with feature ib and 6
// nodes gpu:4 (4-GPU HGX boards, the same SKU to the checker) in the same partition. The 4-GPU
// boards' 4 ports warn against the H100 file (unconfirmed) and are never drained; an 8-GPU node
// with 7 ports is drained with its class in the reason.
TEST(Drainer, a_node_below_its_class_is_drained_and_a_class_of_four_gpu_boards_is_not) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(14);
  for (int i = 0; i < 14; ++i) {
    auto& n = slurm->nodes["gpu-" + std::to_string(i)];
    n.gres = i < 8 ? "gpu:h100:8(S:0-1)" : "gpu:h100:4(S:0)";
    n.features = {"ib"};
  }
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto ports = [](int n, Status st) {
    CheckResult c;
    c.check = "ib_port";
    c.short_name = "ib";
    c.status = st;
    Measurement m;
    m.name = "active_ports";
    m.value = n;
    m.unit = "count";
    c.measurements.push_back(m);
    return c;
  };
  std::vector<NodeReport> fleet;
  for (int i = 0; i < 14; ++i)
    fleet.push_back(make_report("gpu-" + std::to_string(i), "a",
                                {ports(i < 7 ? 8 : 4, i < 7 ? Status::kPass : Status::kWarn)}));
  fleet[7] = make_report("gpu-7", "a", {ports(7, Status::kWarn)});  // an HCA gone
  ASSERT_TRUE(dr.ingest(fleet).ok());
  dr.process_pending();
  ASSERT_TRUE(dr.ingest({make_report("gpu-7", "b", {ports(7, Status::kWarn)})}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  for (int i = 0; i < 14; ++i)
    EXPECT_EQ(slurm->get("gpu-" + std::to_string(i)).drain, i == 7) << "gpu-" << i;
  EXPECT_NE(slurm->get("gpu-7").reason.find("its class has 8 on 7 of 7 nodes"), std::string::npos)
      << slurm->get("gpu-7").reason;
}

// Class versions end to end (docs/thresholds.md "Classes"): 8 nodes declared alike in Slurm.
// gpu-7 has one GPU on another VBIOS than its other seven and its class: drained (class_version
// under the default policy: two reports) with the version in the reason, and the Slurm hooks'
// reports, which carry no versions, never resume it. gpu-6 runs another driver on the whole
// node (a rolling update): it warns and stays in service. The site declares the class's VBIOS,
// so gpu-0 is judged from its first report, before any consensus exists.
TEST(Drainer, a_gpu_on_other_vbios_is_drained_and_a_node_on_another_driver_only_warns) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(8);
  for (auto& [name, n] : slurm->nodes) {
    n.gres = "gpu:h100:8";
    n.features = {"ib"};
  }
  DrainerConfig cfg = test_config(d.str());
  cfg.classes.declared["h100-sxm-80gb gpu:h100:8 [ib]"].versions["vbios"] = "96.00.89.00.01";
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  CheckResult count;
  count.check = "gpu_count";
  count.short_name = "gpu-count";
  auto node = [&](int i, const std::string& run) {
    NodeReport r = make_report("gpu-" + std::to_string(i), run, {count});
    r.driver = i == 6 ? "550.54.14" : "550.54.15";
    for (int g = 0; g < 8; ++g) r.gpus.push_back({g, "", "", "96.00.89.00.01"});
    if (i == 7) r.gpus[3].vbios = "96.00.74.00.11";
    if (i == 0) r.gpus[5].vbios = "96.00.74.00.11";
    return r;
  };
  for (const char* run : {"a", "b"}) {
    std::vector<NodeReport> fleet;
    for (int i = 0; i < 8; ++i) fleet.push_back(node(i, run));
    ASSERT_TRUE(dr.ingest(fleet).ok());
    dr.process_pending();
  }
  dr.run_slurm_sink_once();
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(slurm->get("gpu-" + std::to_string(i)).drain, i == 0 || i == 7) << "gpu-" << i;
  EXPECT_NE(slurm->get("gpu-7").reason.find("vbios gpu3 96.00.74.00.11"), std::string::npos)
      << slurm->get("gpu-7").reason;
  EXPECT_NE(slurm->get("gpu-0").reason.find("(declared)"), std::string::npos)
      << slurm->get("gpu-0").reason;
  const auto six = dr.node("gpu-6");
  ASSERT_TRUE(six);
  EXPECT_FALSE(six->drained_by_vigil);
  EXPECT_EQ(six->checks.at("class_version").last_status, Status::kWarn);
  // The healthcheck hook's reports: gpu_count passes, no versions. gpu-7 stays drained.
  for (const char* run : {"h1", "h2", "h3"}) {
    ASSERT_TRUE(dr.ingest({make_report("gpu-7", run, {count})}).ok());
    dr.process_pending();
  }
  dr.run_slurm_sink_once();
  EXPECT_TRUE(slurm->get("gpu-7").drain);
  EXPECT_TRUE(dr.node("gpu-7")->drained_by_vigil);
}

// The journal's one segment in `dir` ("" when there is none).
std::string journal_segment(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().starts_with("journal-")) return e.path().string();
  return "";
}

// The journal is the truth: a decision pass whose journal append fails (the segment may not
// grow: RLIMIT_FSIZE makes write(2) fail with EFBIG, a real error from the kernel, as a full
// disk's ENOSPC would) must not send its intents, and a restart replays the same decisions.
// Issue 44: "one of them may apply decisions to memory and still queue their Slurm intents
// after a failed journal append (process_pending)".
TEST(Drainer, a_pass_whose_journal_append_fails_sends_nothing_and_a_restart_decides_the_same) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  {
    Drainer dr(test_config(d.str()), slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());  // accepted: durable before the ack
    const std::string segment = journal_segment(d.str());
    ASSERT_FALSE(segment.empty());
    {
      testing::FileSizeLimit limit(std::filesystem::file_size(segment));
      EXPECT_EQ(dr.process_pending(), 0);
    }
    // Room again: the drainer still decides, sends and snapshots nothing (the failed write may
    // have left part of a record behind), until a restart replays the journal.
    EXPECT_TRUE(dr.journal_failed());
    EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u) << "an intent the journal does not hold";
    EXPECT_FALSE(dr.node("gpu-1")) << "memory holds a decision the journal does not";
    EXPECT_FALSE(dr.ready()) << "a drainer whose journal failed must stop serving decisions";
    EXPECT_FALSE(dr.ingest({bad("gpu-2", "a")}).ok());
    EXPECT_EQ(dr.run_slurm_sink_once(), 0);
    EXPECT_FALSE(dr.snapshot_now().ok()) << "memory the journal may not hold became a snapshot";
  }
  EXPECT_TRUE(slurm->calls.empty()) << "sent to Slurm, not in the journal";
  // The restart: the journal holds the accepted report and no decision; it is decided again.
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.undecided(), 1u);
  EXPECT_EQ(dr.process_pending(), 1);
  dr.run_slurm_sink_once();
  EXPECT_TRUE(slurm->get("gpu-1").drain);
  EXPECT_EQ(dr.node("gpu-1")->state, NodeState::kDrained);
}

// The same commit path when the sync fails instead: the decision was written but may not be
// durable, so its drain is never sent; the restart finds it in the journal (the page cache still
// holds it) and sends it then, or, had the kernel dropped it, would decide the report again.
TEST(Drainer, a_pass_whose_journal_sync_fails_sends_nothing_until_the_restart_replays_it) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  {
    Drainer dr(test_config(d.str()), slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
    g_fail_next_fdatasync = true;
    EXPECT_EQ(dr.process_pending(), 1);
    EXPECT_FALSE(g_fail_next_fdatasync) << "the pass never synced";
    EXPECT_TRUE(dr.journal_failed());
    EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u) << "an intent that may not be durable";
    EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  }
  EXPECT_TRUE(slurm->calls.empty()) << "sent to Slurm, maybe not in the journal";
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.undecided(), 0u);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 1u);
  dr.run_slurm_sink_once();
  EXPECT_TRUE(slurm->get("gpu-1").drain);
}

// An operator's resume takes the same path: its append fails, the operator is told, the node
// stays drained in memory as in the journal and in Slurm, and the restart still holds the drain
// (the resume can be given again).
TEST(Drainer, a_resume_whose_journal_append_fails_is_refused_and_changes_nothing) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  {
    Drainer dr(test_config(d.str()), slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
    ASSERT_TRUE(slurm->get("gpu-2").drain);
    const std::string segment = journal_segment(d.str());
    ASSERT_FALSE(segment.empty());
    {
      testing::FileSizeLimit limit(std::filesystem::file_size(segment));
      EXPECT_FALSE(dr.resume("gpu-2").ok());
    }
    EXPECT_TRUE(dr.journal_failed());
    ASSERT_TRUE(dr.node("gpu-2"));
    EXPECT_TRUE(dr.node("gpu-2")->drained_by_vigil) << "memory resumed what the journal did not";
    EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
    EXPECT_FALSE(dr.resume("gpu-2").ok()) << "decided after the journal failed";
  }
  EXPECT_TRUE(slurm->get("gpu-2").drain);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_TRUE(dr.node("gpu-2")->drained_by_vigil);
  ASSERT_TRUE(dr.resume("gpu-2").ok());
  dr.run_slurm_sink_once();
  EXPECT_FALSE(slurm->get("gpu-2").drain);
}

// A failed append puts the breaker back too: the pass that would have opened it (its second
// drain over a cap of one) is not in the journal, so memory does not hold it open; the restart
// decides the same reports again and opens it then.
TEST(Drainer, a_pass_whose_append_fails_leaves_the_breaker_as_the_journal_holds_it) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(10);
  auto cfg = test_config(d.str());
  cfg.breaker = {1, 100, 3600};
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-0", "a"), bad("gpu-1", "a")}).ok());
    {
      testing::FileSizeLimit limit(std::filesystem::file_size(journal_segment(d.str())));
      EXPECT_EQ(dr.process_pending(), 0);
    }
    EXPECT_TRUE(dr.journal_failed());
    EXPECT_FALSE(dr.breaker().open) << "memory opened a breaker the journal does not hold";
    EXPECT_TRUE(dr.nodes().empty());
  }
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.process_pending(), 2);
  EXPECT_TRUE(dr.breaker().open);
}

}  // namespace
}  // namespace vigil::drainer
