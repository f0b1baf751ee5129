// The drainer's HTTP listener under hostile clients (drainer/src/http_server.cpp): idle and
// trickling connections, a per-source connection cap, and a full queue answering 503 with
// Retry-After while every accepted report stays durable (docs/drainer.md "Listener limits").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "http_test_server.h"
#include "slow_clients.h"

namespace vigil::drainer {
namespace {

using testing::SlowClients;
using SteadyClock = std::chrono::steady_clock;

double seconds_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

// The old thread-per-connection server gave each of these a worker until its read timed out:
// 200 of them kept a legitimate report waiting for minutes.
TEST(HttpServerLimits, a_report_is_answered_while_200_connections_sit_idle) {
  Server s;
  SlowClients idle(s.http->port(), 200, /*per_source=*/50);
  ASSERT_EQ(idle.opened(), 200);
  s.cli->set_connection_timeout(5);
  s.cli->set_read_timeout(5);
  for (int i = 0; i < 5; ++i) {
    const auto t0 = SteadyClock::now();
    auto r = s.post(report_body("gpu-1", "idle-" + std::to_string(i)));
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 202);
    EXPECT_LT(seconds_since(t0), 1.0);
  }
  EXPECT_EQ(idle.closed_by_server(), 0);  // still open: only the deadline closes them
}

TEST(HttpServerLimits, a_trickling_request_is_cut_at_the_request_deadline) {
  Server s(true, [](DrainerConfig& c) { c.limits.request_timeout_s = 1; });
  // One byte every 200 ms: never idle long enough for an inactivity timeout.
  SlowClients trickle(s.http->port(), 10, 10, std::chrono::milliseconds(200));
  ASSERT_EQ(trickle.opened(), 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(trickle.closed_by_server(), 0);
  const auto t0 = SteadyClock::now();
  while (trickle.closed_by_server() < 10 && seconds_since(t0) < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(trickle.closed_by_server(), 10);
  EXPECT_LT(seconds_since(t0), 2.5);
  EXPECT_EQ(s.post(report_body("gpu-1", "after"))->status, 202);
}

TEST(HttpServerLimits, one_source_gets_at_most_its_connection_cap) {
  Server s(true, [](DrainerConfig& c) { c.limits.max_connections_per_source = 8; });
  SlowClients one_source(s.http->port(), 20, /*per_source=*/20);
  ASSERT_EQ(one_source.opened(), 20);  // the kernel accepted them all
  const auto t0 = SteadyClock::now();
  while (one_source.closed_by_server() < 12 && seconds_since(t0) < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(one_source.closed_by_server(), 12);  // 8 kept, the rest closed at accept
  EXPECT_EQ(s.post(report_body("gpu-1", "other-source"))->status, 202);
}

TEST(HttpServerLimits, a_full_queue_answers_503_with_retry_after_and_loses_nothing) {
  Server s(true, [](DrainerConfig& c) {
    c.limits.workers = 1;
    c.limits.queue_depth = 1;
    c.max_body_bytes = 4 * 1024 * 1024;
  });
  std::string batch = "[";
  for (int i = 0; i < 300; ++i)
    batch += (i ? "," : "") + report_body("gpu-1", "b-%RUN%-" + std::to_string(i));
  batch += "]";
  std::atomic<int> accepted{0}, busy{0}, other{0}, retry_after{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 12; ++t)
    ts.emplace_back([&, t] {
      httplib::Client cli("127.0.0.1", s.http->port());
      std::string body = batch;
      for (size_t p; (p = body.find("%RUN%")) != std::string::npos;)
        body.replace(p, 5, std::to_string(t));
      auto r = cli.Post("/v1/reports", {{"Authorization", "Bearer " + kToken}}, body,
                        "application/json");
      if (r && r->status == 202) {
        accepted += nlohmann::json::parse(r->body)["accepted"].get<int>();
      } else if (r && r->status == 503) {
        busy++;
        if (r->get_header_value("Retry-After") == "1") retry_after++;
      } else {
        other++;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(other, 0);
  EXPECT_GT(busy, 0) << "12 concurrent 300-report batches against 1 worker + 1 queue slot";
  EXPECT_EQ(retry_after, busy);
  EXPECT_EQ(static_cast<size_t>(accepted), s.journal_records());  // each 202 is durable
  EXPECT_NE(s.d->metrics_text().find(R"(vigil_reports_ingested_total{outcome="busy"})"),
            std::string::npos);
}

}  // namespace
}  // namespace vigil::drainer
