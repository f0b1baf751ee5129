// The circuit breaker (drainer/src/breaker.cpp): the window slides, the cap opens it with a
// reason an operator can read, a counted drain replays into the same window, a decision
// journals the whole state only when it opened, and group sizes follow Slurm's partitions.
#include "vigil/drainer/breaker.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vigil::drainer {
namespace {

Breaker breaker(int max_drains, double max_percent, int64_t window_s) {
  return Breaker(BreakerConfig{max_drains, max_percent, window_s});
}

TEST(breaker, drains_up_to_the_cap_are_counted_and_the_next_opens_it) {
  auto b = breaker(2, 100, 600);
  BreakerState s;
  ASSERT_TRUE(b.try_count(s, "partition:gpu", 10, 1000));
  ASSERT_TRUE(b.try_count(s, "partition:gpu", 10, 1001));
  EXPECT_FALSE(s.open);
  EXPECT_FALSE(b.try_count(s, "partition:gpu", 10, 1002));
  EXPECT_TRUE(s.open);
  EXPECT_EQ(s.opened_at, 1002);
  EXPECT_EQ(s.why,
            "drain #3 in partition:gpu within 600s exceeds cap (max_drains 2, max_percent 100% "
            "of 10 nodes: 2)");
  EXPECT_EQ(s.recent_drains["partition:gpu"].size(), 2u);  // the refused drain is not counted
}

TEST(breaker, the_percent_cap_follows_the_group_size_and_groups_are_separate) {
  auto b = breaker(100, 25, 600);
  BreakerState s;
  ASSERT_TRUE(b.try_count(s, "partition:a", 4, 1000));  // 25% of 4 = 1
  EXPECT_TRUE(b.try_count(s, "partition:b", 4, 1000));  // another group has its own window
  EXPECT_FALSE(b.try_count(s, "partition:a", 4, 1001));
}

TEST(breaker, drains_older_than_the_window_leave_it) {
  auto b = breaker(1, 100, 600);
  BreakerState s;
  ASSERT_TRUE(b.try_count(s, "g", 10, 1000));
  EXPECT_FALSE(BreakerState(s).open);
  BreakerState later = s;
  EXPECT_TRUE(b.try_count(later, "g", 10, 1600));  // 1000 <= 1600 - 600: out of the window
  BreakerState sooner = s;
  EXPECT_FALSE(b.try_count(sooner, "g", 10, 1599));
}

TEST(breaker, a_counted_drain_replays_into_the_same_window) {
  auto b = breaker(5, 100, 600);
  BreakerState live, replayed;
  b.try_count(live, "g", 10, 1000);
  auto d = b.try_count(live, "g", 10, 1700);  // also drops the drain at 1000
  ASSERT_TRUE(d);
  b.count(replayed, BreakerDrain{"g", 1000});
  b.count(replayed, *d);
  EXPECT_EQ(replayed.recent_drains, live.recent_drains);
}

TEST(breaker, a_decision_journals_the_whole_state_only_when_it_opened_or_changed) {
  BreakerState before;
  BreakerState after = before;
  after.recent_drains["g"] = {1000};
  auto counted = Breaker::delta(before, after, BreakerDrain{"g", 1000});
  EXPECT_FALSE(counted.whole);
  ASSERT_TRUE(counted.drain);
  EXPECT_EQ(counted.drain->at, 1000);
  BreakerState opened = before;
  opened.open = true;
  opened.why = "cap";
  auto o = Breaker::delta(before, opened, std::nullopt);
  ASSERT_TRUE(o.whole);
  EXPECT_TRUE(o.whole->open);
  EXPECT_FALSE(o.drain);
  auto none = Breaker::delta(before, before, std::nullopt);
  EXPECT_FALSE(none.whole);
  EXPECT_FALSE(none.drain);
}

TEST(breaker, group_sizes_come_from_slurms_partitions_else_from_known_nodes) {
  std::map<std::string, int> partitions{{"gpu", 16}};
  BreakerGroups with_view(partitions, true, {{"sku:h100", 3}});
  EXPECT_EQ(with_view.size("gpu", "partition:gpu", true), 16);
  // No partition per Slurm: the known nodes of the SKU, a new node counting itself once.
  EXPECT_EQ(with_view.size("", "sku:h100", true), 4);
  EXPECT_EQ(with_view.size("", "sku:h100", false), 4);
  EXPECT_EQ(with_view.size("", "sku:h100", true), 5);
  // Slurm's view unknown: even a known partition is sized by the drainer's own table.
  BreakerGroups no_view(partitions, false, {{"partition:gpu", 2}});
  EXPECT_EQ(no_view.size("gpu", "partition:gpu", false), 2);
  EXPECT_EQ(breaker_group("", ""), "sku:unknown");
  EXPECT_EQ(breaker_group("gpu", "h100"), "partition:gpu");
}

TEST(breaker, state_round_trips_through_json) {
  BreakerState s{true, "why", 1234, {{"g", {1, 2}}}};
  auto back = breaker_state_from_json(to_json(s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->open, s.open);
  EXPECT_EQ(back->why, s.why);
  EXPECT_EQ(back->opened_at, s.opened_at);
  EXPECT_EQ(back->recent_drains, s.recent_drains);
}

}  // namespace
}  // namespace vigil::drainer
