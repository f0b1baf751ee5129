// Report client: retries with backoff, bearer token, spool on final failure, and the drainer
// ingesting the spool.
#include "vigil/report/report_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil {
namespace {

using testing::make_check;
using testing::make_report;
using testing::TempDir;

struct FlakyServer {
  httplib::Server srv;
  std::thread t;
  int port = 0;
  std::atomic<int> hits{0};
  std::atomic<int> fail_first{0};
  int fail_status = 503;
  std::string seen_auth;
  std::string seen_body;
  std::string refuse_containing;  // bodies with this substring get 403
  FlakyServer() {
    srv.Post("/v1/reports", [this](const httplib::Request& req, httplib::Response& res) {
      int n = ++hits;
      seen_auth = req.get_header_value("Authorization");
      seen_body = req.body;
      res.status = n <= fail_first ? fail_status : 202;
      if (!refuse_containing.empty() && req.body.find(refuse_containing) != std::string::npos)
        res.status = 403;
    });
    port = srv.bind_to_any_port("127.0.0.1");
    t = std::thread([this] { srv.listen_after_bind(); });
    for (int i = 0; i < 5000 && !srv.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FlakyServer() {
    srv.stop();
    t.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

ReportClientOptions opts(const std::string& url, std::vector<int>* sleeps) {
  ReportClientOptions o;
  o.url = url;
  o.max_attempts = 4;
  o.initial_backoff_ms = 100;
  o.max_backoff_ms = 250;
  o.timeout_ms = 2000;
  o.sleep = [sleeps](int ms) { sleeps->push_back(ms); };
  return o;
}

NodeReport report() {
  return make_report("gpu-1", "run-7", {make_check("nvml_ecc", Status::kPass)});
}

TEST(ReportClient, retries_with_exponential_backoff_then_delivers) {
  FlakyServer s;
  s.fail_first = 2;
  TempDir d;
  std::ofstream(d / "token") << "tok-0123456789abcdef\n";
  std::vector<int> sleeps;
  auto o = opts(s.url(), &sleeps);
  o.token_file = d / "token";
  o.spool_dir = d / "spool";
  auto r = post_report(report(), o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->delivered);
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(sleeps, (std::vector<int>{100, 200}));
  EXPECT_EQ(s.seen_auth, "Bearer tok-0123456789abcdef");
  auto parsed = parse_node_report(std::string_view(s.seen_body));
  ASSERT_TRUE(parsed) << parsed.error;
  EXPECT_EQ(parsed.value->run_id, "run-7");
  EXPECT_FALSE(std::filesystem::exists(d / "spool"));
}

TEST(ReportClient, unreachable_drainer_spools_atomically_and_drainer_ingests_it) {
  int port;
  {
    FlakyServer s;  // bind, note the port, close: nothing listens there afterwards
    port = s.port;
  }
  TempDir d;
  std::vector<int> sleeps;
  auto o = opts("http://127.0.0.1:" + std::to_string(port) + "/v1/reports", &sleeps);
  o.spool_dir = d / "spool";
  auto r = post_report(report(), o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->delivered);
  EXPECT_EQ(r->attempts, 4);
  EXPECT_EQ(sleeps, (std::vector<int>{100, 200, 250}));
  EXPECT_EQ(r->spooled_path, d / "spool/gpu-1-run-7.json");
  ASSERT_TRUE(std::filesystem::exists(r->spooled_path));
  int tmp_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d / "spool"))
    tmp_files += e.path().filename().string().ends_with(".tmp");
  EXPECT_EQ(tmp_files, 0);

  testing::FakeClock clock;
  drainer::DrainerConfig cfg;
  cfg.auth_enabled = false;
  cfg.state_dir = d / "state";
  cfg.policy = drainer::default_policy();
  drainer::Drainer dr(cfg, nullptr, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto n = dr.ingest_dir(d / "spool");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1);
  dr.process_pending();
  ASSERT_TRUE(dr.node("gpu-1"));
  EXPECT_EQ(dr.node("gpu-1")->last_run_id, "run-7");
}

TEST(ReportClient, client_errors_are_not_retried_but_still_spooled) {
  FlakyServer s;
  s.fail_first = 100;
  s.fail_status = 403;
  TempDir d;
  std::vector<int> sleeps;
  auto o = opts(s.url(), &sleeps);
  o.spool_dir = d / "spool";
  auto r = post_report(report(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->delivered);
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(r->last_http_status, 403);
  EXPECT_FALSE(r->spooled_path.empty());
}

TEST(ReportClient, no_spool_dir_and_no_delivery_is_an_error) {
  FlakyServer s;
  s.fail_first = 100;
  std::vector<int> sleeps;
  auto r = post_report(report(), opts(s.url(), &sleeps));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("HTTP 503"), std::string::npos) << r.error().to_string();
  EXPECT_EQ(s.hits.load(), 4);
}

TEST(ReportClient, bad_url_is_reported) {
  std::vector<int> sleeps;
  auto r = post_report(report(), opts("ftp://x", &sleeps));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("http://"), std::string::npos);
}

// One delivery function for vigil-check run/fabric and the hooks: its four outcomes, in the
// words both print.
TEST(ReportClient, deliver_report_says_what_became_of_the_report) {
  TempDir d;
  std::vector<int> sleeps;
  ReportClientOptions none;
  Delivery nothing = deliver_report(report(), none);
  EXPECT_EQ(nothing.kind, Delivery::Kind::kNone);
  EXPECT_EQ(nothing.text, "not posted: neither --report-url nor --spool-dir given");

  ReportClientOptions spool_only;
  spool_only.spool_dir = d / "spool";
  Delivery spooled = deliver_report(report(), spool_only);
  EXPECT_EQ(spooled.kind, Delivery::Kind::kSpooled);
  EXPECT_EQ(spooled.text, "spooled to " + std::string(d / "spool/gpu-1-run-7.json"));
  EXPECT_FALSE(spooled.reached);

  FlakyServer s;
  Delivery delivered = deliver_report(report(), opts(s.url(), &sleeps));
  EXPECT_EQ(delivered.kind, Delivery::Kind::kDelivered);
  EXPECT_EQ(delivered.text, "delivered to " + s.url());
  EXPECT_TRUE(delivered.reached);

  s.fail_first = 100;  // every attempt 503: reached, then spooled
  auto busy = opts(s.url(), &sleeps);
  busy.spool_dir = d / "spool2";
  Delivery held = deliver_report(report(), busy);
  EXPECT_EQ(held.kind, Delivery::Kind::kSpooled);
  EXPECT_TRUE(held.reached);
  EXPECT_NE(held.text.find("(HTTP 503"), std::string::npos) << held.text;

  Delivery lost = deliver_report(report(), opts(s.url(), &sleeps));  // no spool to fall back on
  EXPECT_EQ(lost.kind, Delivery::Kind::kFailed);
  EXPECT_EQ(lost.text.rfind("neither delivered nor spooled: ", 0), 0u) << lost.text;
}

// The resend of a spool (auth munge does it after each delivery; here without munged, so token
// mode): delivered files are removed, refused ones move to rejected/, an unreachable drainer
// leaves the rest for the next run, and at most max_files are tried.
TEST(ReportClient, resend_spool_delivers_removes_and_sets_refused_files_aside) {
  FlakyServer s;
  s.refuse_containing = "run-forged";
  TempDir d;
  const std::string spool = d / "spool";
  for (const char* run : {"run-a", "run-b", "run-forged", "run-c"})
    ASSERT_TRUE(
        spool_report(make_report("gpu-1", run, {make_check("nvml_ecc", Status::kPass)}), spool)
            .ok());
  std::vector<int> sleeps;
  auto o = opts(s.url(), &sleeps);
  auto first = resend_spool(spool, o, /*max_files=*/2);
  EXPECT_EQ(first.delivered, 2);
  EXPECT_EQ(first.left, 2);
  auto rest = resend_spool(spool, o);
  EXPECT_EQ(rest.delivered, 1);
  EXPECT_EQ(rest.rejected, 1);
  EXPECT_EQ(rest.left, 0);
  EXPECT_TRUE(std::filesystem::exists(spool + "/rejected/gpu-1-run-forged.json"));
  EXPECT_EQ(s.hits, 4);

  ASSERT_TRUE(spool_report(make_report("gpu-1", "run-d", {}), spool).ok());
  auto down = opts("http://127.0.0.1:9", &sleeps);  // nothing listens on the discard port
  auto kept = resend_spool(spool, down);
  EXPECT_EQ(kept.delivered, 0);
  EXPECT_EQ(kept.left, 1);
  EXPECT_TRUE(std::filesystem::exists(spool + "/gpu-1-run-d.json"));
}

// Token mode is what it was: no resend after a delivery, the bearer token as before.
TEST(ReportClient, token_mode_does_not_resend_the_spool) {
  FlakyServer s;
  TempDir d;
  std::ofstream(d / "token") << "tok-0123456789abcdef\n";
  ASSERT_TRUE(spool_report(make_report("gpu-1", "old", {}), d / "spool").ok());
  std::vector<int> sleeps;
  auto o = opts(s.url(), &sleeps);
  o.token_file = d / "token";
  o.spool_dir = d / "spool";
  auto r = post_report(report(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->delivered);
  EXPECT_EQ(r->resent.delivered, 0);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.seen_auth, "Bearer tok-0123456789abcdef");
}

}  // namespace
}  // namespace vigil
