// vigil::hook: exit codes, the fatal reason, and act(): delivery to a real vigil-drainer (HTTP
// ingest, policy, Slurm sink) sharing one fake Slurm with the hook, the fail-closed drain when
// the drainer is down, and never a second Slurm action.
#include "vigil/hook/hook.h"

#include <gtest/gtest.h>

#include <filesystem>

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

// A real drainer: HTTP ingest on 127.0.0.1:0, default policy, Slurm sink on the shared fake.
struct LiveDrainer {
  LiveDrainer(std::shared_ptr<FakeSlurm> slurm, const std::string& state) {
    cfg.auth_enabled = false;
    cfg.listen_port = 0;
    cfg.state_dir = state;
    cfg.policy = drainer::default_policy();
    cfg.slurm.batch_window_ms = 50;
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

TEST(HookVerdict, only_fatal_failures_exit_non_zero) {
  EXPECT_EQ(exit_code(fatal_report()), 1);
  // A non-fatal fail (NVLink counters, clock slowdowns) is the drainer's to judge: exit 0.
  EXPECT_EQ(exit_code(make_report("gpu-0", "r", {make_check("nvml_nvlink", Status::kFail)})), 0);
  EXPECT_EQ(exit_code(make_report("gpu-0", "r", {make_check("nvml_ecc", Status::kWarn)})), 0);
  // A check that could not run (time box, no driver) never drains: exit 0.
  EXPECT_EQ(exit_code(make_report("gpu-0", "r", {make_check("nvml_ecc", Status::kError)})), 0);
  EXPECT_EQ(exit_code(make_report("gpu-0", "r", {make_check("gpu_count", Status::kPass)})), 0);
}

TEST(HookVerdict, the_reason_is_the_drainers_format) {
  EXPECT_EQ(fatal_reason(fatal_report()), "vigil: xid XID 79 0000:18:00");
  EXPECT_EQ(fatal_reason(make_report("gpu-0", "r", {make_check("nvml_nvlink", Status::kFail)})),
            "");
}

TEST(HookVerdict, modes_and_job_gpus_parse) {
  EXPECT_EQ(mode_from_string("prolog"), Mode::kProlog);
  EXPECT_EQ(to_string(Mode::kHealthcheck), "healthcheck");
  EXPECT_FALSE(mode_from_string("cron"));
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
  EXPECT_EQ(clients_, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "spool"));
}

TEST_F(HookAct, drainer_down_the_hook_drains_itself_and_spools_the_report) {
  opts_.report_url = "http://127.0.0.1:1";  // nothing listens there
  auto o = act(fatal_report(), opts_);
  EXPECT_TRUE(o.drained_by_hook) << o.action;
  EXPECT_EQ(o.action, "drained by the hook: vigil: xid XID 79 0000:18:00");
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
  EXPECT_EQ(d.dr->node("gpu-0")->health, drainer::NodeHealth::kDrained);
  EXPECT_EQ(drains(), 1);
}

TEST_F(HookAct, a_node_drained_by_vigil_or_someone_else_is_not_drained_again) {
  opts_.report_url = "http://127.0.0.1:1";
  slurm_->set("gpu-0", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "vigil: remap gpu3 row remap pending (1)";
  });
  auto o = act(fatal_report(), opts_);
  EXPECT_EQ(o.action, "already drained by vigil (vigil: remap gpu3 row remap pending (1))");
  slurm_->set("gpu-0", [](slurm::SlurmNodeInfo& n) { n.reason = "admin: bad fan"; });
  o = act(fatal_report("r2"), opts_);
  EXPECT_EQ(o.action, "not drained: drained by another owner (admin: bad fan)");
  EXPECT_EQ(drains(), 0);
}

TEST_F(HookAct, drainer_up_drains_and_the_hook_only_confirms) {
  LiveDrainer d(slurm_, dir_ / "state");
  opts_.report_url = d.url;
  auto o = act(fatal_report(), opts_);
  EXPECT_EQ(o.delivery, "delivered to " + d.url);
  EXPECT_FALSE(o.drained_by_hook);
  EXPECT_EQ(o.action, "drained by vigil-drainer (vigil: xid XID 79 0000:18:00)") << o.action;
  EXPECT_EQ(drains(), 1);
  EXPECT_EQ(d.dr->node("gpu-0")->health, drainer::NodeHealth::kDrained);
}

TEST_F(HookAct, drainer_that_accepts_but_does_not_drain_in_time_is_backed_up_by_the_hook) {
  LiveDrainer d(slurm_, dir_ / "state");
  d.dr->stop();  // accepts reports (journal) but decides nothing
  opts_.report_url = d.url;
  opts_.drain_wait = std::chrono::milliseconds(200);
  auto o = act(fatal_report(), opts_);
  EXPECT_EQ(o.delivery, "delivered to " + d.url);
  EXPECT_TRUE(o.drained_by_hook) << o.action;
  // When the drainer decides later, it adopts the drain: one RPC in all.
  d.dr->process_pending();
  d.dr->run_slurm_sink_once();
  EXPECT_EQ(drains(), 1);
}

TEST_F(HookAct, non_fatal_results_are_posted_and_nothing_is_drained) {
  opts_.report_url = "http://127.0.0.1:1";
  auto o = act(make_report("gpu-0", "r", {make_check("nvml_nvlink", Status::kFail)}), opts_);
  EXPECT_FALSE(o.fatal);
  EXPECT_EQ(o.action, "none");
  EXPECT_EQ(clients_, 0);
  EXPECT_FALSE(o.delivery_failed);
}

}  // namespace vigil::hook
