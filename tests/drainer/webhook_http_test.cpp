// The webhook's HTTP transport (drainer/src/webhook_http.cpp) against cpp-httplib's server on
// 127.0.0.1: the body, content type, path and bearer token arrive as given; the receiver's
// status comes back as it is (the sink decides what to retry); no receiver is an error naming
// the URL; a disabled webhook has no transport. The sink's retries and ordering are
// webhook_sink_test.cpp.
#include "vigil/drainer/webhook_http.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>
#include <thread>

namespace vigil::drainer {
namespace {

struct Receiver {
  httplib::Server srv;
  std::thread t;
  int port = 0;
  std::atomic<int> status{202};
  std::string seen_body, seen_type, seen_auth, seen_path;
  Receiver() {
    srv.Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      seen_body = req.body;
      seen_type = req.get_header_value("Content-Type");
      seen_auth = req.get_header_value("Authorization");
      seen_path = req.path;
      res.status = status;
    });
    port = srv.bind_to_any_port("127.0.0.1");
    t = std::thread([this] { srv.listen_after_bind(); });
    for (int i = 0; i < 5000 && !srv.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Receiver() {
    srv.stop();
    t.join();
  }
};

WebhookSettings settings(int port) {
  WebhookSettings w;
  w.enabled = true;
  w.url = "http://127.0.0.1:" + std::to_string(port) + "/hooks/vigil";
  w.token = "hook-token";
  w.timeout_ms = 2000;
  return w;
}

TEST(WebhookHttp, posts_the_body_as_given_and_returns_the_receivers_status) {
  Receiver r;
  auto poster = make_http_webhook(settings(r.port));
  ASSERT_NE(poster, nullptr);
  auto status = poster->post(R"({"id":"1"})", "application/cloudevents+json");
  ASSERT_TRUE(status.ok()) << status.error().to_string();
  EXPECT_EQ(*status, 202);
  EXPECT_EQ(r.seen_body, R"({"id":"1"})");
  EXPECT_EQ(r.seen_type, "application/cloudevents+json");
  EXPECT_EQ(r.seen_auth, "Bearer hook-token");
  EXPECT_EQ(r.seen_path, "/hooks/vigil");
  r.status = 503;
  status = poster->post("{}", "application/cloudevents+json");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 503);  // an answer, not a transport error: the sink retries it
}

TEST(WebhookHttp, no_receiver_is_an_error_naming_the_url_and_disabled_means_none) {
  int port;
  {
    Receiver gone;  // bind, note the port, close: nothing listens there afterwards
    port = gone.port;
  }
  auto poster = make_http_webhook(settings(port));
  auto status = poster->post("{}", "application/cloudevents+json");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().to_string().find("webhook unreachable"), std::string::npos);
  EXPECT_NE(status.error().to_string().find(settings(port).url), std::string::npos);
  WebhookSettings off = settings(port);
  off.enabled = false;
  EXPECT_EQ(make_http_webhook(off), nullptr);
}

}  // namespace
}  // namespace vigil::drainer
