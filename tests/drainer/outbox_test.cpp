// The outbox (drainer/src/outbox.h) on plain values: no journal, no threads, no sink.
#include "outbox.h"

#include <gtest/gtest.h>

namespace vigil::drainer {
namespace {

Intent owed(uint64_t id, SinkKind sink, std::string node, IntentAction a = IntentAction::kDrain) {
  Intent i;
  i.id = id;
  i.sink = sink;
  i.node = std::move(node);
  i.action = a;
  return i;
}

std::vector<uint64_t> ids(const std::vector<Intent>& v) {
  std::vector<uint64_t> out;
  for (const Intent& i : v) out.push_back(i.id);
  return out;
}

TEST(Outbox, a_state_sink_gets_each_nodes_newest_and_the_older_ones_are_superseded) {
  Outbox o;
  o.add({owed(1, SinkKind::kSlurm, "gpu-1"), owed(2, SinkKind::kSlurm, "gpu-2"),
         owed(3, SinkKind::kSlurm, "gpu-1", IntentAction::kResume),
         owed(4, SinkKind::kKubernetes, "gpu-1", IntentAction::kAnnotate)});
  std::vector<uint64_t> superseded;
  auto batch = o.pick(SinkKind::kSlurm, false, superseded);
  EXPECT_EQ(ids(batch), (std::vector<uint64_t>{3, 2}));  // by node: gpu-1's newest, gpu-2's
  EXPECT_EQ(superseded, (std::vector<uint64_t>{1}));
  EXPECT_EQ(o.count(SinkKind::kSlurm), 3u);   // owed until done, in hand or not
  EXPECT_TRUE(o.has_work(SinkKind::kSlurm));  // the superseded one, until it is recorded done
  o.done(superseded);
  EXPECT_FALSE(o.has_work(SinkKind::kSlurm));  // the rest in hand
  EXPECT_TRUE(o.has_work(SinkKind::kKubernetes));
  o.done({2});
  o.retry({3});
  EXPECT_EQ(o.count(SinkKind::kSlurm), 1u);
  EXPECT_TRUE(o.has_work(SinkKind::kSlurm));
  superseded.clear();
  batch = o.pick(SinkKind::kSlurm, false, superseded);
  ASSERT_EQ(ids(batch), (std::vector<uint64_t>{3}));
  EXPECT_EQ(batch[0].attempts, 1);  // one try failed
  EXPECT_TRUE(superseded.empty());
}

TEST(Outbox, an_event_sink_gets_each_nodes_oldest_and_nothing_of_a_node_with_one_in_hand) {
  Outbox o;
  o.add({owed(1, SinkKind::kWebhook, "gpu-1", IntentAction::kNotify),
         owed(2, SinkKind::kWebhook, "gpu-1", IntentAction::kNotify),
         owed(3, SinkKind::kWebhook, "", IntentAction::kNotify)});  // a breaker event
  std::vector<uint64_t> superseded;
  EXPECT_EQ(ids(o.pick(SinkKind::kWebhook, true, superseded)), (std::vector<uint64_t>{1, 3}));
  EXPECT_TRUE(superseded.empty());                                    // every event is delivered
  EXPECT_TRUE(o.pick(SinkKind::kWebhook, true, superseded).empty());  // 1 and 3 in hand
  o.done({1});
  EXPECT_EQ(ids(o.pick(SinkKind::kWebhook, true, superseded)), (std::vector<uint64_t>{2}));
}

TEST(Outbox, ids_are_never_reused_after_a_replayed_intent) {
  Outbox o;
  EXPECT_EQ(o.take_id(), 1u);
  o.add(owed(41, SinkKind::kSlurm, "gpu-1"));  // from the journal
  EXPECT_EQ(o.take_id(), 42u);
  o.restore_next_id(50);  // a snapshot's own figure
  EXPECT_EQ(o.next_id(), 50u);
  o.restore_next_id(7);  // never below an owed intent's id
  EXPECT_EQ(o.next_id(), 42u);
}

TEST(Outbox, newer_is_a_later_intent_of_the_same_node_and_sink) {
  Outbox o;
  o.add({owed(1, SinkKind::kSlurm, "gpu-1"), owed(2, SinkKind::kKubernetes, "gpu-1"),
         owed(3, SinkKind::kSlurm, "gpu-2")});
  EXPECT_FALSE(o.newer(SinkKind::kSlurm, "gpu-1", 1));  // only another sink's is later
  o.add(owed(4, SinkKind::kSlurm, "gpu-1", IntentAction::kResume));
  EXPECT_TRUE(o.newer(SinkKind::kSlurm, "gpu-1", 1));
  EXPECT_FALSE(o.newer(SinkKind::kSlurm, "gpu-1", 4));
  EXPECT_EQ(o.intents().size(), 4u);
}

}  // namespace
}  // namespace vigil::drainer
