// The webhook sink, added through the sink table: every drain, resume and breaker event is
// POSTed as a CloudEvents 1.0 document to a real HTTP receiver (cpp-httplib's server on
// 127.0.0.1), in order per node, retried while the receiver fails, given up (counted) when it
// refuses, and delivered after a restart with the same id.
#include "webhook_sink.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/webhook_http.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;
using testing::TempDir;

struct Received {
  std::string content_type;
  std::string authorization;
  nlohmann::json event;
};

// A webhook receiver: records every POST to /events and answers the queued statuses first,
// then 200.
class Receiver {
 public:
  Receiver() {
    server_.Post("/events", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lk(mu_);
      res.status = 200;
      if (!statuses_.empty()) {
        res.status = statuses_.front();
        statuses_.pop_front();
      }
      tried_.push_back({req.get_header_value("Content-Type"), req.get_header_value("Authorization"),
                        nlohmann::json::parse(req.body)});
      if (res.status == 200) got_.push_back(tried_.back());
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/events"; }
  void answer(std::initializer_list<int> statuses) {
    std::lock_guard lk(mu_);
    statuses_.insert(statuses_.end(), statuses);
  }
  std::vector<Received> got() {
    std::lock_guard lk(mu_);
    return got_;
  }
  size_t tries() {
    std::lock_guard lk(mu_);
    return tried_.size();
  }
  // "type subject" of each accepted event, in arrival order.
  std::vector<std::string> types() {
    std::vector<std::string> out;
    for (const auto& r : got())
      out.push_back(r.event["type"].get<std::string>() + " " + r.event.value("subject", ""));
    return out;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::deque<int> statuses_;
  std::vector<Received> tried_, got_;
};

DrainerConfig webhook_config(const std::string& dir, const std::string& url) {
  auto c = testing::drainer_test_config(dir);
  c.kubernetes.enabled = false;
  c.webhook.enabled = true;
  c.webhook.url = url;
  c.webhook.token = "a-receiver-token-0123";
  c.webhook.retry_initial_ms = c.webhook.retry_max_ms = 1;
  c.webhook.max_attempts = 3;
  return c;
}

double given_up(Drainer& dr) {
  static const std::regex re(R"re(vigil_sink_given_up_total\{sink="webhook"\} (\d+))re");
  const std::string text = dr.metrics_text();
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stod(m[1]) : -1;
}

// Runs the webhook sink until nothing is left or `rounds` batches were tried.
void drain_webhook(Drainer& dr, int rounds = 20) {
  for (int i = 0;
       i < rounds && dr.run_sink_once(SinkKind::kWebhook) + dr.pending(SinkKind::kWebhook) > 0;
       ++i) {
  }
}

TEST(WebhookSink, a_drain_arrives_as_a_cloudevent_with_its_required_attributes) {
  TempDir d;
  FakeClock clock;
  Receiver rx;
  auto slurm = testing::fake_cluster(2);
  const auto cfg = webhook_config(d.str(), rx.url());
  Drainer dr(cfg, slurm, nullptr, clock, make_http_webhook(cfg.webhook));
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({testing::ecc_fail_report("gpu-1", "run-7")}).ok());
  dr.process_pending();
  ASSERT_EQ(dr.pending(SinkKind::kWebhook), 1u);
  EXPECT_EQ(dr.run_sink_once(SinkKind::kWebhook), 0);
  ASSERT_EQ(rx.got().size(), 1u);
  const Received r = rx.got()[0];
  // CloudEvents spec v1.0 (spec.md, "Required Attributes"; formats/json-format.md, structured
  // content mode: media type application/cloudevents+json).
  EXPECT_EQ(r.content_type, "application/cloudevents+json; charset=utf-8");
  EXPECT_EQ(r.authorization, "Bearer a-receiver-token-0123");
  const auto& e = r.event;
  EXPECT_EQ(e["specversion"], "1.0");
  EXPECT_EQ(e["source"], "/vigil/drainer");
  EXPECT_EQ(e["type"], "dev.vigil.node.drain");
  EXPECT_EQ(e["subject"], "gpu-1");
  EXPECT_FALSE(e["id"].get<std::string>().empty());
  EXPECT_EQ(e["time"], "2027-01-15T08:00:00Z");  // FakeClock's now
  EXPECT_EQ(e["datacontenttype"], "application/json");
  const auto& data = e["data"];
  EXPECT_EQ(data["node"], "gpu-1");
  EXPECT_EQ(data["before"], "unknown");
  EXPECT_EQ(data["state"], "drained");
  EXPECT_EQ(data["health"], "drained");  // the first name, kept for older receivers
  EXPECT_EQ(data["run_id"], "run-7");
  EXPECT_EQ(data["checks"], nlohmann::json::array({"nvml_ecc"}));
  EXPECT_NE(data["reason"].get<std::string>().find("vigil"), std::string::npos);
  EXPECT_EQ(dr.pending(SinkKind::kWebhook), 0u);
}

// The receiver fails twice (503) while a node has a drain and then a resume waiting: the resume
// is never sent before the drain, and both arrive once the receiver answers.
TEST(WebhookSink, a_nodes_events_arrive_in_order_through_retries) {
  TempDir d;
  FakeClock clock;
  Receiver rx;
  auto slurm = testing::fake_cluster(2);
  auto cfg = webhook_config(d.str(), rx.url());
  cfg.webhook.max_attempts = 10;
  Drainer dr(cfg, slurm, nullptr, clock, make_http_webhook(cfg.webhook));
  ASSERT_TRUE(dr.open().ok());
  rx.answer({503, 503});
  ASSERT_TRUE(dr.ingest({testing::ecc_fail_report("gpu-1", "a")}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  ASSERT_TRUE(dr.resume("gpu-1").ok());  // the operator resumes before the drain event is out
  ASSERT_EQ(dr.pending(SinkKind::kWebhook), 2u);
  drain_webhook(dr);
  EXPECT_EQ(rx.types(), (std::vector<std::string>{"dev.vigil.node.drain gpu-1",
                                                  "dev.vigil.node.resume gpu-1"}));
  EXPECT_EQ(rx.tries(), 4u);  // two refused tries of the drain, then drain and resume
  EXPECT_EQ(given_up(dr), 0);
}

// A 4xx other than 408/429 will not change on a retry: the event is given up at once, counted,
// and the node's next event goes out. A receiver that keeps failing (503) is given up after
// webhook.max_attempts.
TEST(WebhookSink, a_refused_or_undeliverable_event_is_given_up_and_counted) {
  TempDir d;
  FakeClock clock;
  Receiver rx;
  auto slurm = testing::fake_cluster(3);
  const auto cfg = webhook_config(d.str(), rx.url());
  Drainer dr(cfg, slurm, nullptr, clock, make_http_webhook(cfg.webhook));
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(given_up(dr), 0);  // the series exists before anything went wrong
  rx.answer({400});
  ASSERT_TRUE(dr.ingest({testing::ecc_fail_report("gpu-1", "a")}).ok());
  dr.process_pending();
  dr.run_sink_once(SinkKind::kWebhook);
  EXPECT_EQ(given_up(dr), 1);
  EXPECT_EQ(dr.pending(SinkKind::kWebhook), 0u);
  rx.answer({503, 503, 503});  // max_attempts 3
  ASSERT_TRUE(dr.ingest({testing::ecc_fail_report("gpu-2", "a")}).ok());
  dr.process_pending();
  drain_webhook(dr);
  EXPECT_EQ(given_up(dr), 2);
  EXPECT_EQ(rx.tries(), 4u);
  EXPECT_TRUE(rx.got().empty());
  // The audit log names what was given up.
  std::ifstream audit(d.str() + "/audit.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(audit, line))
    lines += line.find(R"("event":"given_up")") != std::string::npos &&
             line.find(R"("sink":"webhook")") != std::string::npos;
  EXPECT_EQ(lines, 2);
}

// A receiver that fails is not tried again for every other node of the batch (each try could
// wait out the timeout): the rest of the batch waits for the backoff, untried.
TEST(WebhookSink, after_a_failure_the_rest_of_the_batch_waits_untried) {
  TempDir d;
  FakeClock clock;
  Receiver rx;
  auto slurm = testing::fake_cluster(4);
  auto cfg = webhook_config(d.str(), rx.url());
  cfg.webhook.max_attempts = 10;
  Drainer dr(cfg, slurm, nullptr, clock, make_http_webhook(cfg.webhook));
  ASSERT_TRUE(dr.open().ok());
  std::vector<NodeReport> rs;
  for (int i = 0; i < 4; ++i)
    rs.push_back(testing::ecc_fail_report("gpu-" + std::to_string(i), "a"));
  ASSERT_TRUE(dr.ingest(rs).ok());
  dr.process_pending();
  rx.answer({503});
  EXPECT_EQ(dr.run_sink_once(SinkKind::kWebhook), 4);
  EXPECT_EQ(rx.tries(), 1u);
  drain_webhook(dr);
  EXPECT_EQ(rx.got().size(), 4u);
  EXPECT_EQ(rx.tries(), 5u);
}

// The receiver is down when the drain is decided and the drainer restarts: the event was
// journaled with its intent, so the new process delivers it, with the same id.
TEST(WebhookSink, an_event_undelivered_before_a_restart_is_delivered_after_it_with_its_id) {
  TempDir d;
  FakeClock clock;
  auto slurm = testing::fake_cluster(2);
  std::string url;
  {
    Receiver gone;  // bound, then closed: nothing listens on its port afterwards
    url = gone.url();
  }
  {
    const auto cfg = webhook_config(d.str(), url);
    Drainer dr(cfg, slurm, nullptr, clock, make_http_webhook(cfg.webhook));
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({testing::ecc_fail_report("gpu-1", "a")}).ok());
    dr.process_pending();
    EXPECT_EQ(dr.run_sink_once(SinkKind::kWebhook), 1);  // unreachable: left to retry
  }
  Receiver rx;
  auto cfg = webhook_config(d.str(), rx.url());
  Drainer again(cfg, slurm, nullptr, clock, make_http_webhook(cfg.webhook));
  ASSERT_TRUE(again.open().ok());
  ASSERT_EQ(again.pending(SinkKind::kWebhook), 1u);
  uint64_t id = 0;
  for (const auto& i : again.pending_intents())
    if (i.sink == SinkKind::kWebhook) id = i.id;
  again.run_sink_once(SinkKind::kWebhook);
  ASSERT_EQ(rx.got().size(), 1u);
  EXPECT_EQ(rx.got()[0].event["id"], std::to_string(id));
  EXPECT_EQ(rx.got()[0].event["type"], "dev.vigil.node.drain");
  EXPECT_EQ(rx.got()[0].event["data"]["run_id"], "a");
}

// The breaker opening, and an operator's reset, are events of their own (no subject).
TEST(WebhookSink, the_breaker_opening_and_its_reset_are_events) {
  TempDir d;
  FakeClock clock;
  Receiver rx;
  auto slurm = testing::fake_cluster(10);
  auto cfg = webhook_config(d.str(), rx.url());
  cfg.breaker = {2, 100, 3600};
  Drainer dr(cfg, slurm, nullptr, clock, make_http_webhook(cfg.webhook));
  ASSERT_TRUE(dr.open().ok());
  std::vector<NodeReport> rs;
  for (int i = 0; i < 4; ++i)
    rs.push_back(testing::ecc_fail_report("gpu-" + std::to_string(i), "a"));
  ASSERT_TRUE(dr.ingest(rs).ok());
  dr.process_pending();
  ASSERT_TRUE(dr.breaker().open);
  ASSERT_TRUE(dr.reset_breaker().ok());
  drain_webhook(dr);
  std::map<std::string, int> by_type;
  for (const auto& t : rx.types()) by_type[t]++;
  EXPECT_EQ(by_type["dev.vigil.node.drain gpu-0"], 1);
  EXPECT_EQ(by_type["dev.vigil.node.drain gpu-1"], 1);
  EXPECT_EQ(by_type["dev.vigil.breaker.opened "], 1);
  EXPECT_EQ(by_type["dev.vigil.breaker.reset "], 1);
  EXPECT_EQ(by_type["dev.vigil.node.breaker_blocked gpu-2"] +
                by_type["dev.vigil.node.breaker_blocked gpu-3"],
            2);
  // The breaker's events have no subject; their data says why.
  for (const auto& r : rx.got())
    if (r.event["type"] == "dev.vigil.breaker.opened") {
      EXPECT_FALSE(r.event.contains("subject"));
      EXPECT_FALSE(r.event["data"]["why"].get<std::string>().empty());
    }
}

// The core has no HTTP client: a webhook the configuration enables needs the transport the
// program hands it (make_http_webhook), and a drainer given none refuses to start.
TEST(WebhookSink, an_enabled_webhook_without_a_transport_stops_open) {
  TempDir d;
  FakeClock clock;
  Drainer dr(webhook_config(d.str(), "http://127.0.0.1:9/events"), testing::fake_cluster(1),
             nullptr, clock);
  auto r = dr.open();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("no webhook transport"), std::string::npos)
      << r.error().to_string();
}

// Without a webhook the journal holds no event: what the drainer writes is what it always wrote
// (replay_test holds it byte for byte); with one, only the webhook's intents carry it.
TEST(WebhookSink, only_the_webhooks_intents_journal_their_event) {
  Intent i;
  i.id = 3;
  i.sink = SinkKind::kKubernetes;
  i.action = IntentAction::kAnnotate;
  i.node = "gpu-1";
  i.event.type = Action::kDrain;
  EXPECT_FALSE(to_json(i).contains("event"));
  i.sink = SinkKind::kWebhook;
  i.action = IntentAction::kNotify;
  ASSERT_TRUE(to_json(i).contains("event"));
  auto back = intent_from_json(nlohmann::json::parse(to_json(i).dump()));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->event.type, Action::kDrain);
  auto without = to_json(i);
  without.erase("event");
  auto bad = intent_from_json(without);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("webhook intent without its event"), std::string::npos);
}

}  // namespace
}  // namespace vigil::drainer
