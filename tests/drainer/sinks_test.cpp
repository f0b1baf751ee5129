// The sink table (drainer/src/sinks.cpp): its rows follow SinkKind, every intent action has one
// sink that takes it, each sink is owed what its row says, and a sink the configuration leaves
// off is not made.
#include "sinks.h"

#include <gtest/gtest.h>

#include <set>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "slurm_view_cache.h"

namespace vigil::drainer {
namespace {

NodeEvent event(std::string_view type, std::string node = "gpu-1") {
  NodeEvent e;
  e.type = value_of(kActionNames, type).value();
  e.node = std::move(node);
  return e;
}

TEST(SinkTable, rows_follow_sink_kind_and_every_action_has_exactly_one_sink) {
  ASSERT_EQ(sink_specs().size(), std::size(kAllSinkKinds));
  std::set<std::string_view> names;
  for (size_t k = 0; k < sink_specs().size(); ++k) {
    EXPECT_EQ(sink_specs()[k].kind, kAllSinkKinds[k]);
    EXPECT_TRUE(names.insert(sink_specs()[k].name).second) << sink_specs()[k].name;
    EXPECT_EQ(&sink_spec(kAllSinkKinds[k]), &sink_specs()[k]);
  }
  for (auto [a, name] : kIntentActionNames) {
    int takers = 0;
    for (const SinkSpec& s : sink_specs()) takers += s.takes(a);
    EXPECT_EQ(takers, 1) << to_string(a);
  }
}

TEST(SinkTable, each_sink_is_owed_what_its_row_says) {
  const auto& slurm = sink_spec(SinkKind::kSlurm);
  const auto& kube = sink_spec(SinkKind::kKubernetes);
  const auto& hook = sink_spec(SinkKind::kWebhook);
  EXPECT_EQ(slurm.owed(event("drain")), IntentAction::kDrain);
  EXPECT_EQ(slurm.owed(event("resume")), IntentAction::kResume);
  for (const char* t : {"would_drain", "would_resume", "breaker_blocked", "drain_skipped", "none"})
    EXPECT_FALSE(slurm.owed(event(t))) << t;  // dry run and the breaker never touch Slurm
  EXPECT_EQ(kube.owed(event("none")), IntentAction::kAnnotate);  // every state change
  EXPECT_FALSE(kube.owed(event("breaker_opened", "")));
  EXPECT_EQ(hook.owed(event("would_drain")), IntentAction::kNotify);
  EXPECT_EQ(hook.owed(event("breaker_reset", "")), IntentAction::kNotify);
  EXPECT_FALSE(hook.owed(event("none")));  // a refreshed state is no news
  EXPECT_FALSE(slurm.ordered);
  EXPECT_FALSE(kube.ordered);
  EXPECT_TRUE(hook.ordered);
}

// A webhook transport that is never called here.
struct NoReceiver : WebhookPoster {
  Result<int> post(const std::string&, const std::string&) override { return 200; }
};

TEST(SinkTable, a_sink_the_configuration_leaves_off_is_not_made) {
  testing::FakeClock clock;
  auto cfg = testing::drainer_test_config("/nonexistent");
  auto slurm = testing::fake_cluster(1);
  auto kube = std::make_shared<testing::FakeKube>();
  SlurmViewCache views(slurm.get(), clock, 5);
  cfg.kubernetes.enabled = false;
  const SinkDeps none{cfg, nullptr, kube, nullptr, views, clock};
  for (const SinkSpec& s : sink_specs()) EXPECT_EQ(s.make(none), nullptr) << s.name;
  cfg.kubernetes.enabled = true;
  cfg.webhook.enabled = true;
  cfg.webhook.url = "http://127.0.0.1:9/events";
  const SinkDeps all{cfg, slurm, kube, std::make_shared<NoReceiver>(), views, clock};
  for (const SinkSpec& s : sink_specs()) EXPECT_NE(s.make(all), nullptr) << s.name;
  EXPECT_EQ(sink_spec(SinkKind::kWebhook).lane(cfg).retry.max_attempts, 10);
  EXPECT_EQ(sink_spec(SinkKind::kSlurm).lane(cfg).retry.max_attempts, 0);  // a drain is owed
}

}  // namespace
}  // namespace vigil::drainer
