// Report client: retries with backoff, bearer token, spool on final failure, and the drainer
// ingesting the spool.
#include "fake_clock.h"
#include "vigil/report/report_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <fstream>
#include <thread>

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
  FlakyServer() {
    srv.Post("/v1/reports", [this](const httplib::Request& req, httplib::Response& res) {
      int n = ++hits;
      seen_auth = req.get_header_value("Authorization");
      seen_body = req.body;
      res.status = n <= fail_first ? fail_status : 202;
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

}  // namespace
}  // namespace vigil
