// vigil::hook: the fatal reason, and act(): delivery to a real vigil-drainer (HTTP ingest,
// policy, Slurm sink) sharing one fake Slurm with the hook; the hook obeys the drainer's verdict
// (drain, breaker, dry-run, policy) and its exit code follows; when the drainer is down it
// drains alone under the policy the drainer last sent and its own breaker; never a second Slurm
// action.
#include "vigil/hook/hook.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/http_server.h"

namespace vigil::hook {

using testing::FakeSlurm;
using testing::make_check;
using testing::make_report;
using testing::TempDir;

namespace {

NodeReport fatal_report(const std::string& run = "r1") {
  CheckResult xid = make_check("kmsg_xid", Status::kFail, 1, 0, "count", "VIGIL-KMSG-XID-FATAL");
  xid.short_name = "xid";
  xid.message = "XID 79 0000:18:00";
  auto r = make_report("gpu-0", run, {make_check("gpu_count", Status::kPass), xid});
  r.context = "prolog";
  return r;
}

// A shared FakeSlurm behind a unique_ptr the hook owns for one act().
struct SharedSlurm final : slurm::SlurmApi {
  explicit SharedSlurm(std::shared_ptr<FakeSlurm> f) : f(std::move(f)) {}
  Result<std::vector<slurm::SlurmNodeInfo>> load_nodes() override { return f->load_nodes(); }
  VoidResult drain(const std::vector<std::string>& n, const std::string& r) override {
    return f->drain(n, r);
  }
  VoidResult undrain(const std::vector<std::string>& n) override { return f->undrain(n); }
  std::shared_ptr<FakeSlurm> f;
};

class HookAct : public ::testing::Test {
 protected:
  void SetUp() override {
    slurm_->add_node("gpu-0");
    opts_.spool_dir = dir_ / "spool";
    opts_.drain_wait = std::chrono::milliseconds(3000);
    opts_.poll_interval = std::chrono::milliseconds(20);
    opts_.slurm = [this] {
      ++clients_;
      return std::make_unique<SharedSlurm>(slurm_);
    };
  }
  int drains() {
    int n = 0;
    for (const auto& c : slurm_->calls_copy()) n += c.op == "drain";
    return n;
  }
  TempDir dir_;
  std::shared_ptr<FakeSlurm> slurm_ = std::make_shared<FakeSlurm>();
  ActOptions opts_;
  int clients_ = 0;
};

// A real drainer: HTTP ingest on 127.0.0.1:0, default policy (changed by `tune`), Slurm sink on
// the shared fake.
struct LiveDrainer {
  LiveDrainer(std::shared_ptr<FakeSlurm> slurm, const std::string& state,
              const std::function<void(drainer::DrainerConfig&)>& tune = {}) {
    cfg.auth_enabled = false;
    cfg.listen_port = 0;
    cfg.state_dir = state;
    cfg.policy = drainer::default_policy();
    cfg.slurm.batch_window_ms = 50;
    if (tune) tune(cfg);
    dr = std::make_unique<drainer::Drainer>(cfg, std::make_shared<SharedSlurm>(slurm), nullptr,
                                            clock);
    EXPECT_TRUE(dr->open().ok());
    dr->start();
    http = std::make_unique<drainer::HttpServer>(*dr, cfg);
    auto port = http->bind();
    EXPECT_TRUE(port.ok());
    url = "http://127.0.0.1:" + std::to_string(port.ok() ? *port : 0);
    EXPECT_TRUE(http->start().ok());
  }
  ~LiveDrainer() {
    http->stop();
    dr->stop();
  }
  SystemClock clock;
  drainer::DrainerConfig cfg;
  std::unique_ptr<drainer::Drainer> dr;
  std::unique_ptr<drainer::HttpServer> http;
  std::string url;
};

}  // namespace

TEST(HookVerdict, fatal_means_a_fail_of_a_check_the_policy_lists) {
  const SharedDrainPolicy defaults;
  EXPECT_EQ(fatal_failures(fatal_report(), defaults).size(), 1u);
  // A non-fatal fail (NVLink counters, clock slowdowns) is the drainer's to judge.
  EXPECT_TRUE(fatal_failures(make_report("gpu-0", "r", {make_check("nvml_nvlink", Status::kFail)}),
                             defaults)
                  .empty());
  // warn and error (time box, no driver) are never fatal.
  EXPECT_TRUE(
      fatal_failures(make_report("gpu-0", "r", {make_check("nvml_ecc", Status::kWarn)}), defaults)
          .empty());
  EXPECT_TRUE(
      fatal_failures(make_report("gpu-0", "r", {make_check("nvml_ecc", Status::kError)}), defaults)
          .empty());
  // A site that took kmsg_xid out of policy.fatal_checks: the hook follows the drainer's list.
  SharedDrainPolicy site;
  site.fatal_checks = {"gpu_count"};
  EXPECT_TRUE(fatal_failures(fatal_report(), site).empty());
  // The drainer's fault-code rules bind the hook too: a fatal code makes any check's fail fatal,
  // and a code with its own drain_after over 1 makes even a fatal check's fail wait.
  auto with_code = [](const char* check, const char* code) {
    auto c = make_check(check, Status::kFail);
    c.fault_code = code;
    return make_report("gpu-0", "r", {c});
  };
  site.fatal_fault_codes = {"VIGIL-NVML-NVLINK-DOWN"};
  site.lenient_fault_codes = {"VIGIL-GPU-COUNT-LOW"};
  EXPECT_EQ(fatal_failures(with_code("nvml_nvlink", "VIGIL-NVML-NVLINK-DOWN"), site).size(), 1u);
  EXPECT_TRUE(fatal_failures(with_code("gpu_count", "VIGIL-GPU-COUNT-LOW"), site).empty());
  EXPECT_EQ(fatal_failures(with_code("gpu_count", "VIGIL-GPU-MISSING"), site).size(), 1u);
}

TEST(HookVerdict, the_reason_is_the_drainers_format) {
  EXPECT_EQ(fatal_reason(fatal_report(), {}), "vigil: xid XID 79 0000:18:00");
  EXPECT_EQ(fatal_reason(make_report("gpu-0", "r", {make_check("nvml_nvlink", Status::kFail)}), {}),
            "");
}

TEST(HookVerdict, the_drainer_and_the_hook_default_to_one_fatal_list) {
  EXPECT_EQ(drainer::default_policy().fatal_checks, default_fatal_checks());
  EXPECT_EQ(SharedDrainPolicy{}.fatal_checks, default_fatal_checks());
  const drainer::BreakerConfig b;
  const SharedDrainPolicy p;
  EXPECT_EQ(b.max_drains, p.breaker_max_drains);
  EXPECT_EQ(b.max_percent, p.breaker_max_percent);
  EXPECT_EQ(b.window_s, p.breaker_window_s);
}

TEST(HookVerdict, the_local_breaker_counts_recent_vigil_drains_of_the_partition) {
  auto node = [](std::string name, std::string part, std::string reason, int64_t at) {
    slurm::SlurmNodeInfo n;
    n.name = std::move(name);
    n.partitions = {std::move(part)};
    n.drain = !reason.empty();
    n.reason = std::move(reason);
    n.reason_time = at;
    return n;
  };
  const int64_t now = 1'800'000'000;
  SharedDrainPolicy p;
  p.breaker_max_drains = 2;
  std::vector<slurm::SlurmNodeInfo> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back(node("g" + std::to_string(i), "gpu", "", 0));
  nodes.push_back(node("c0", "cpu", "vigil: xid 79", now - 10));  // another partition
  nodes.push_back(node("c1", "cpu", "vigil: xid 79", now - 10));
  EXPECT_FALSE(local_breaker_holds(nodes, nodes[0], p, now));
  nodes[1] = node("g1", "gpu", "vigil: ecc dbe", now - 100);
  nodes[2] = node("g2", "gpu", "admin: fan", now - 100);       // someone else's drain: not counted
  nodes[3] = node("g3", "gpu", "vigil: ecc dbe", now - 7200);  // outside the hour
  EXPECT_FALSE(local_breaker_holds(nodes, nodes[0], p, now));
  nodes[4] = node("g4", "gpu", "vigil: remap", 0);  // age unknown: counted
  const auto held = local_breaker_holds(nodes, nodes[0], p, now);
  ASSERT_TRUE(held);
  EXPECT_EQ(*held,
            "2 node(s) of partition gpu drained by vigil in the last 3600 s, cap 2 (max_drains 2, "
            "max_percent 50% of 8 nodes; policy from built-in defaults)");
  // The percent cap: 50% of a 2-node partition is one drain.
  std::vector<slurm::SlurmNodeInfo> two = {node("a", "p", "vigil: xid", now),
                                           node("b", "p", "", 0)};
  EXPECT_TRUE(local_breaker_holds(two, two[1], SharedDrainPolicy{}, now));
}

TEST(HookVerdict, the_policy_cache_round_trips_and_a_bad_one_is_marked_unreadable) {
  TempDir dir;
  const std::string path = dir / "state/drainer-policy.json";
  SharedDrainPolicy p;
  p.fatal_checks = {"gpu_count", "kmsg_xid"};
  p.fatal_fault_codes = {"VIGIL-NCCL-WRONG-RESULTS"};
  p.lenient_fault_codes = {"VIGIL-NVML-REMAP-PENDING"};
  p.dry_run = true;
  p.breaker_max_drains = 3;
  ASSERT_TRUE(save_policy_cache(path, p, 1'800'000'000).ok());
  const auto back = load_policy_cache(path);
  EXPECT_EQ(back.fatal_checks, p.fatal_checks);
  EXPECT_EQ(back.fatal_fault_codes, p.fatal_fault_codes);
  EXPECT_EQ(back.lenient_fault_codes, p.lenient_fault_codes);
  EXPECT_TRUE(back.dry_run);
  EXPECT_EQ(back.breaker_max_drains, 3);
  EXPECT_EQ(back.source, "vigil-drainer at 2027-01-15T08:00:00Z");
  { std::ofstream(path) << "{\"dry_run\": \"yes\"}"; }
  std::string note;
  const auto bad = load_policy_cache(path, &note);
  EXPECT_TRUE(bad.unreadable);  // act() then holds every drain of its own
  EXPECT_EQ(bad.source, "an unreadable cache");
  EXPECT_NE(note.find("policy.dry_run"), std::string::npos) << note;
  EXPECT_EQ(load_policy_cache(dir / "none.json").source, "built-in defaults");
}

TEST(HookVerdict, modes_and_job_gpus_parse) {
  EXPECT_EQ(value_of(kModeNames, "prolog"), Mode::kProlog);
  EXPECT_EQ(to_string(Mode::kHealthcheck), "healthcheck");
  EXPECT_FALSE(value_of(kModeNames, "cron"));
  EXPECT_EQ(parse_job_gpus("0,1,3"), (std::vector<int>{0, 1, 3}));
  EXPECT_FALSE(parse_job_gpus(""));
  EXPECT_FALSE(parse_job_gpus("0,x"));
  EXPECT_FALSE(parse_job_gpus("0,,1"));
}

TEST_F(HookAct, no_post_acts_on_nothing) {
  opts_.post = false;
  auto o = act(fatal_report(), opts_);
  EXPECT_TRUE(o.fatal);
  EXPECT_EQ(o.action, "would drain: vigil: xid XID 79 0000:18:00 (--no-post: nothing done)");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(clients_, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "spool"));
}

TEST_F(HookAct, drainer_down_the_hook_drains_itself_and_spools_the_report) {
  opts_.report_url = "http://127.0.0.1:1";  // nothing listens there
  auto o = act(fatal_report(), opts_);
  EXPECT_TRUE(o.drained_by_hook) << o.action;
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.verdict, DrainVerdict::kUnknown);
  EXPECT_EQ(o.action,
            "drained by the hook (vigil-drainer not reached; policy from built-in defaults): "
            "vigil: xid XID 79 0000:18:00");
  EXPECT_EQ(o.delivery.rfind("spooled to " + (dir_ / "spool"), 0), 0u) << o.delivery;
  EXPECT_EQ(slurm_->get("gpu-0").reason, "vigil: xid XID 79 0000:18:00");
  EXPECT_EQ(drains(), 1);

  // The spooled report is ingested later: the drainer adopts the vigil drain, no second RPC.
  LiveDrainer d(slurm_, dir_ / "state");
  auto n = d.dr->ingest_dir(dir_ / "spool");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  d.dr->process_pending();
  d.dr->run_slurm_sink_once();
  EXPECT_EQ(d.dr->node("gpu-0")->state, drainer::NodeState::kDrained);
  EXPECT_EQ(drains(), 1);
}

TEST_F(HookAct, drainer_down_the_hooks_own_breaker_holds_the_next_drain_of_the_partition) {
  opts_.report_url = "http://127.0.0.1:1";
  slurm_->add_node("gpu-1");  // 2 nodes in partition gpu: 50% allows one drain
  slurm_->set("gpu-1", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "vigil: count 7 of 8 GPUs";
    n.reason_time = static_cast<int64_t>(std::time(nullptr)) - 60;
  });
  auto o = act(fatal_report(), opts_);
  EXPECT_TRUE(o.held) << o.action;
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.action,
            "drain held by the hook's circuit breaker: 1 node(s) of partition gpu drained by "
            "vigil in the last 3600 s, cap 1 (max_drains 10, max_percent 50% of 2 nodes; policy "
            "from built-in defaults)");
  EXPECT_EQ(drains(), 0);
  // An hour later that drain no longer counts.
  opts_.now_unix = [] { return static_cast<int64_t>(std::time(nullptr)) + 3600; };
  o = act(fatal_report("r2"), opts_);
  EXPECT_TRUE(o.drained_by_hook) << o.action;
  EXPECT_EQ(drains(), 1);
}

TEST_F(HookAct, drainer_down_the_policy_it_last_sent_binds_the_hook) {
  opts_.policy_cache = dir_ / "state/drainer-policy.json";
  {
    LiveDrainer d(slurm_, dir_ / "drainer", [](drainer::DrainerConfig& c) { c.dry_run = true; });
    opts_.report_url = d.url;
    auto o = act(fatal_report(), opts_);
    EXPECT_EQ(o.verdict, DrainVerdict::kDryRun);
    EXPECT_EQ(o.action, "vigil-drainer is in dry-run: would drain (vigil: xid XID 79 0000:18:00)");
    EXPECT_EQ(o.exit_code, 0);
  }
  const auto kept = load_policy_cache(opts_.policy_cache);
  EXPECT_TRUE(kept.dry_run);
  EXPECT_EQ(kept.source.rfind("vigil-drainer at ", 0), 0u) << kept.source;
  // The drainer is gone: its dry-run still binds.
  opts_.report_url = "http://127.0.0.1:1";
  auto o = act(fatal_report("r2"), opts_);
  EXPECT_TRUE(o.held);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.action.rfind("dry-run (policy from vigil-drainer at ", 0), 0u) << o.action;
  EXPECT_EQ(drains(), 0);
}

TEST_F(HookAct, a_drainer_reached_without_a_verdict_keeps_the_decision_and_the_hook_holds) {
  // An older drainer: it takes the report (202) and says nothing about it.
  httplib::Server old;
  old.Post("/v1/reports", [](const httplib::Request&, httplib::Response& res) {
    res.status = 202;
    res.set_content(R"({"accepted":1,"duplicates":0})", "application/json");
  });
  const int port = old.bind_to_any_port("127.0.0.1");
  std::thread serve([&] { old.listen_after_bind(); });
  while (!old.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  opts_.report_url = "http://127.0.0.1:" + std::to_string(port);
  auto o = act(fatal_report(), opts_);
  old.stop();
  serve.join();
  EXPECT_EQ(o.verdict, DrainVerdict::kUnknown);
  EXPECT_TRUE(o.held) << o.action;
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(
      o.action.rfind("not drained by the hook: vigil-drainer was reached but gave no verdict", 0),
      0u)
      << o.action;
  EXPECT_EQ(drains(), 0);
}

TEST_F(HookAct, drainer_down_its_last_open_breaker_or_an_unreadable_policy_holds_the_drain) {
  opts_.report_url = "http://127.0.0.1:1";
  opts_.policy_cache = dir_ / "state/drainer-policy.json";
  SharedDrainPolicy open;
  open.breaker_open = true;
  ASSERT_TRUE(save_policy_cache(opts_.policy_cache, open, 1'800'000'000).ok());
  auto o = act(fatal_report(), opts_);
  EXPECT_TRUE(o.held) << o.action;
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.action.rfind("drain held: vigil-drainer's circuit breaker was open", 0), 0u)
      << o.action;
  { std::ofstream(opts_.policy_cache) << "{\"dry_run\": "; }
  o = act(fatal_report("r2"), opts_);
  EXPECT_TRUE(o.held) << o.action;
  EXPECT_EQ(o.action.rfind("not drained by the hook: policy cache ", 0), 0u) << o.action;
  EXPECT_EQ(o.action.find("["), std::string::npos) << o.action;  // the cache's note said once
  EXPECT_EQ(drains(), 0);
}

TEST_F(HookAct, drainer_up_drains_and_the_hook_only_confirms) {
  LiveDrainer d(slurm_, dir_ / "state");
  opts_.report_url = d.url;
  auto o = act(fatal_report(), opts_);
  EXPECT_EQ(o.delivery, "delivered to " + d.url);
  EXPECT_EQ(o.verdict, DrainVerdict::kDrain);
  EXPECT_FALSE(o.drained_by_hook);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.action, "drained by vigil-drainer (vigil: xid XID 79 0000:18:00)") << o.action;
  EXPECT_EQ(drains(), 1);
  EXPECT_EQ(d.dr->node("gpu-0")->state, drainer::NodeState::kDrained);
  // The next fatal report on the drained node: already drained, nothing more.
  o = act(fatal_report("r2"), opts_);
  EXPECT_EQ(o.verdict, DrainVerdict::kAlreadyDrained);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(drains(), 1);
  // A passing report on the drained node (an operator resumed it a moment ago, say): exit 0,
  // whatever the drainer's state says; only a fatal finding on a vigil drain exits 1.
  o = act(make_report("gpu-0", "r3", {make_check("gpu_count", Status::kPass)}), opts_);
  EXPECT_EQ(o.verdict, DrainVerdict::kAlreadyDrained);
  EXPECT_EQ(o.exit_code, 0) << o.action;
}

TEST_F(HookAct, the_drainers_breaker_holds_the_drain_and_the_hook_exits_zero) {
  slurm_->add_node("gpu-1");
  LiveDrainer d(slurm_, dir_ / "state",
                [](drainer::DrainerConfig& c) { c.breaker.max_drains = 1; });
  opts_.report_url = d.url;
  auto first = fatal_report("r1");
  first.node = "gpu-1";
  EXPECT_EQ(act(first, opts_).exit_code, 1);
  auto o = act(fatal_report("r2"), opts_);
  EXPECT_EQ(o.verdict, DrainVerdict::kBreakerHeld);
  EXPECT_TRUE(o.held);
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.action.rfind("drain held by vigil-drainer's circuit breaker (circuit breaker "
                           "opened: drain #2 in partition:gpu within 3600s exceeds cap",
                           0),
            0u)
      << o.action;
  EXPECT_FALSE(slurm_->get("gpu-0").drain);
  EXPECT_EQ(drains(), 1);
  EXPECT_EQ(d.dr->node("gpu-0")->last_action, drainer::Action::kBreakerBlocked);
}

TEST_F(HookAct, a_check_the_site_removed_from_the_fatal_list_is_not_drained_by_the_hook) {
  LiveDrainer d(slurm_, dir_ / "state",
                [](drainer::DrainerConfig& c) { c.policy.fatal_checks.erase("kmsg_xid"); });
  opts_.report_url = d.url;
  auto o = act(fatal_report(), opts_);
  EXPECT_EQ(o.verdict, DrainVerdict::kNoDrain);
  EXPECT_EQ(o.exit_code, 0);
  // Judged by the drainer's own fatal list, which it sent back: not fatal, nothing to do.
  EXPECT_FALSE(o.fatal);
  EXPECT_EQ(o.action, "none");
  EXPECT_EQ(drains(), 0);
}

TEST_F(HookAct, a_node_drained_by_vigil_or_someone_else_is_not_drained_again) {
  opts_.report_url = "http://127.0.0.1:1";
  slurm_->set("gpu-0", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "vigil: remap gpu3 row remap pending (1)";
  });
  auto o = act(fatal_report(), opts_);
  EXPECT_EQ(o.action, "already drained by vigil (vigil: remap gpu3 row remap pending (1))");
  EXPECT_EQ(o.exit_code, 1);
  slurm_->set("gpu-0", [](slurm::SlurmNodeInfo& n) { n.reason = "admin: bad fan"; });
  o = act(fatal_report("r2"), opts_);
  EXPECT_EQ(o.action, "not drained: drained by another owner (admin: bad fan)");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(drains(), 0);
}

TEST_F(HookAct, a_drain_the_drainer_decided_but_its_sink_has_not_applied_is_done_by_the_hook) {
  LiveDrainer d(slurm_, dir_ / "state");
  d.dr->stop();  // decides when asked (the hook's request), but no sink thread applies it
  opts_.report_url = d.url;
  opts_.drain_wait = std::chrono::milliseconds(200);
  auto o = act(fatal_report(), opts_);
  EXPECT_EQ(o.delivery, "delivered to " + d.url);
  EXPECT_EQ(o.verdict, DrainVerdict::kDrain);
  EXPECT_TRUE(o.drained_by_hook) << o.action;
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.action,
            "drained by the hook (vigil-drainer decided it; its drain did not show in Slurm): "
            "vigil: xid XID 79 0000:18:00");
  // When the drainer's sink runs, it finds the drain applied: one RPC in all.
  d.dr->run_slurm_sink_once();
  EXPECT_EQ(drains(), 1);
}

TEST_F(HookAct, non_fatal_results_are_posted_and_nothing_is_drained) {
  opts_.report_url = "http://127.0.0.1:1";
  auto o = act(make_report("gpu-0", "r", {make_check("nvml_nvlink", Status::kFail)}), opts_);
  EXPECT_FALSE(o.fatal);
  EXPECT_EQ(o.action, "none");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(clients_, 0);
  EXPECT_FALSE(o.delivery_failed);
}

}  // namespace vigil::hook
