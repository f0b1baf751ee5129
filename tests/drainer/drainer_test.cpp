// The Drainer across crashes: an unknown intent spelling in the state dir stops replay, and a
// kill -9 at any moment loses no acknowledged report and repeats no drain.
#include "vigil/drainer/drainer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

// The journal spells intents as strings; one this build does not know stops startup with an
// error that names it and where it is, instead of being read as some default sink or action.
TEST(Drainer, an_unknown_intent_spelling_in_the_state_dir_stops_replay) {
  FakeClock clock;
  auto slurm = cluster(4);
  for (const char* where : {"journal-", "snapshot.json"}) {
    TempDir d;
    {
      Drainer dr(test_config(d.str()), slurm, nullptr, clock);
      ASSERT_TRUE(dr.open().ok());
      ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
      dr.process_pending();
      if (std::string(where) == "snapshot.json") {
        ASSERT_TRUE(dr.snapshot_now().ok());
      }
    }
    {  // written with the same strings as ever: it replays
      Drainer dr(test_config(d.str()), slurm, nullptr, clock);
      ASSERT_TRUE(dr.open().ok()) << where;
      ASSERT_EQ(dr.pending(SinkKind::kSlurm), 1u) << where;
      EXPECT_EQ(dr.pending_intents().front().action, IntentAction::kDrain) << where;
    }
    ASSERT_EQ(rewrite_state(d.str(), where, R"("sink":"slurm")", R"("sink":"pagerduty")"), 1)
        << where;
    Drainer dr(test_config(d.str()), slurm, nullptr, clock);
    auto o = dr.open();
    ASSERT_FALSE(o.ok()) << where;
    EXPECT_NE(o.error().to_string().find("unknown intent sink 'pagerduty'"), std::string::npos)
        << o.error().to_string();
    EXPECT_NE(o.error().to_string().find("replay("), std::string::npos) << o.error().to_string();
    EXPECT_FALSE(dr.ready());
  }
}

// A Slurm stand-in whose state lives in a file, so it survives the kill -9 of the drainer.
class FileSlurm : public slurm::SlurmApi {
 public:
  FileSlurm(std::string path, int nodes) : path_(std::move(path)), nodes_(nodes) {}
  std::map<std::string, std::pair<int, std::string>> read() const {  // node -> (drains, reason)
    std::map<std::string, std::pair<int, std::string>> m;
    std::ifstream in(path_);
    std::string op, node, reason;
    while (in >> op >> node && std::getline(in, reason)) {
      auto& e = m[node];
      if (op == "drain") {
        e.first++;
        e.second = reason.substr(1);
      } else {
        e.second.clear();
      }
    }
    return m;
  }
  Result<std::vector<slurm::SlurmNodeInfo>> load_nodes() override {
    auto m = read();
    std::vector<slurm::SlurmNodeInfo> v;
    for (int i = 0; i < nodes_; ++i) {
      slurm::SlurmNodeInfo n;
      n.name = "n" + std::to_string(i);
      n.partitions = {"gpu"};
      if (auto it = m.find(n.name); it != m.end() && !it->second.second.empty()) {
        n.drain = true;
        n.reason = it->second.second;
      }
      v.push_back(n);
    }
    return v;
  }
  VoidResult drain(const std::vector<std::string>& ns, const std::string& reason) override {
    std::ofstream out(path_, std::ios::app);
    for (const auto& n : ns) out << "drain " << n << " " << reason << "\n";
    return ok_result();
  }
  VoidResult undrain(const std::vector<std::string>& ns) override {
    std::ofstream out(path_, std::ios::app);
    for (const auto& n : ns) out << "undrain " << n << " -\n";
    return ok_result();
  }

 private:
  std::string path_;
  int nodes_;
};

TEST(Drainer, kill_9_at_any_moment_loses_no_report_and_repeats_no_drain) {
  constexpr int kNodes = 400;
  for (int round = 0; round < 4; ++round) {
    TempDir d;
    const std::string slurm_log = d / "slurm.log";
    auto cfg = test_config(d / "state");
    cfg.kubernetes.enabled = false;
    cfg.snapshot_every = 50;  // snapshots happen during the run too
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      SystemClock clock;
      Drainer dr(cfg, std::make_shared<FileSlurm>(slurm_log, kNodes), nullptr, clock);
      if (!dr.open().ok()) ::_exit(3);
      for (int i = 0; i < kNodes; ++i) {
        if (!dr.ingest({bad("n" + std::to_string(i), "r")}).ok()) ::_exit(4);
        if (::write(fds[1], &i, sizeof i) != sizeof i) ::_exit(5);  // acknowledged (202)
        if (i % 3 == 0) {
          dr.process_pending();
          dr.run_slurm_sink_once();
          if (i % 50 == 0) (void)dr.snapshot_now();
        }
      }
      ::pause();
      ::_exit(0);
    }
    ::close(fds[1]);
    int last_ack = -1, v = 0;
    const int want = 30 + round * 90;
    while (last_ack < want && ::read(fds[0], &v, sizeof v) == sizeof v) last_ack = v;
    std::this_thread::sleep_for(std::chrono::microseconds(300 * round));
    ::kill(pid, SIGKILL);
    while (::read(fds[0], &v, sizeof v) == sizeof v) last_ack = v;
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited " << WEXITSTATUS(status);

    auto slurm = std::make_shared<FileSlurm>(slurm_log, kNodes);
    FakeClock clock;
    Drainer dr(cfg, slurm, nullptr, clock);
    auto o = dr.open();
    ASSERT_TRUE(o.ok()) << o.error().to_string();
    dr.process_pending();
    EXPECT_EQ(dr.run_slurm_sink_once(), 0);
    auto log = slurm->read();
    for (int i = 0; i <= last_ack; ++i) {
      const std::string n = "n" + std::to_string(i);
      auto s = dr.node(n);
      ASSERT_TRUE(s) << "lost acknowledged report of " << n << " (round " << round << ")";
      EXPECT_EQ(s->state, NodeState::kDrained) << n;
      ASSERT_TRUE(log.count(n)) << n << " never drained";
      EXPECT_EQ(log[n].first, 1) << n << " drained " << log[n].first << " times";
    }
    for (const auto& [n, e] : log) EXPECT_EQ(e.first, 1) << n;
  }
}

}  // namespace
}  // namespace vigil::drainer
