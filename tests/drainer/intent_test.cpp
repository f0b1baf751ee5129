// Typed intents and their journal codec: the strings on disk never change, and a spelling this
// build does not know is an error, never a silent default.
#include "vigil/drainer/intent.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vigil/drainer/policy.h"

namespace vigil::drainer {
namespace {

TEST(Intent, journal_form_keeps_the_strings_existing_state_dirs_hold) {
  Intent i;
  i.id = 7;
  i.sink = SinkKind::kSlurm;
  i.action = IntentAction::kDrain;
  i.node = "gpu-1";
  i.reason = "vigil: ecc DBE";
  i.attempts = 3;  // not journaled
  EXPECT_EQ(to_json(i).dump(), R"({"action":"drain","by_operator":false,"id":7,"node":"gpu-1",)"
                               R"("reason":"vigil: ecc DBE","sink":"slurm"})");
  Intent k;
  k.id = 8;
  k.sink = SinkKind::kKubernetes;
  k.action = IntentAction::kAnnotate;
  k.node = "gpu-1";
  EXPECT_EQ(to_json(k).dump(), R"({"action":"annotate","by_operator":false,"id":8,"node":"gpu-1",)"
                               R"("reason":"","sink":"kubernetes"})");
}

TEST(Intent, every_valid_intent_survives_a_json_round_trip) {
  struct Case {
    SinkKind sink;
    IntentAction action;
    bool by_operator;
  };
  for (const Case& c : {Case{SinkKind::kSlurm, IntentAction::kDrain, false},
                        Case{SinkKind::kSlurm, IntentAction::kResume, true},
                        Case{SinkKind::kKubernetes, IntentAction::kAnnotate, false}}) {
    Intent i;
    i.id = 12345678901ULL;
    i.sink = c.sink;
    i.action = c.action;
    i.node = "gpu-9";
    i.reason = c.action == IntentAction::kDrain ? "vigil: nccl busbw 120 < 330 GB/s" : "";
    i.by_operator = c.by_operator;
    // Through text, as the journal stores it.
    auto back = intent_from_json(nlohmann::json::parse(to_json(i).dump()));
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(back->id, i.id);
    EXPECT_EQ(back->sink, i.sink);
    EXPECT_EQ(back->action, i.action);
    EXPECT_EQ(back->node, i.node);
    EXPECT_EQ(back->reason, i.reason);
    EXPECT_EQ(back->by_operator, i.by_operator);
    EXPECT_EQ(back->attempts, 0);
  }
}

TEST(Intent, names_and_parsing_agree) {
  for (SinkKind k : kAllSinkKinds) EXPECT_EQ(sink_kind_from_string(to_string(k)), k);
  for (auto a : {IntentAction::kDrain, IntentAction::kResume, IntentAction::kAnnotate})
    EXPECT_EQ(value_of(kIntentActionNames, to_string(a)), a);
  EXPECT_EQ(to_string(SinkKind::kKubernetes), "kubernetes");
  EXPECT_EQ(to_string(IntentAction::kResume), "resume");
  EXPECT_FALSE(sink_kind_from_string("Slurm"));
  EXPECT_FALSE(value_of(kIntentActionNames, ""));
}

TEST(Intent, an_unknown_sink_or_action_is_an_error_that_names_it) {
  auto with = [](const char* sink, const char* action) {
    return nlohmann::json{{"id", 4},         {"sink", sink},  {"action", action},
                          {"node", "gpu-1"}, {"reason", "r"}, {"by_operator", false}};
  };
  auto sink = intent_from_json(with("pagerduty", "drain"));
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.error().to_string().find("unknown intent sink 'pagerduty'"), std::string::npos)
      << sink.error().to_string();
  EXPECT_NE(sink.error().to_string().find("id 4"), std::string::npos);
  auto action = intent_from_json(with("slurm", "cordon"));
  ASSERT_FALSE(action.ok());
  EXPECT_NE(action.error().to_string().find("unknown intent action 'cordon'"), std::string::npos)
      << action.error().to_string();
  // Neither a missing spelling nor one the sink does not take falls back to a default.
  auto missing = nlohmann::json{{"id", 5}, {"node", "gpu-1"}};
  EXPECT_FALSE(intent_from_json(missing).ok());
  EXPECT_FALSE(intent_from_json(with("kubernetes", "drain")).ok());
  EXPECT_FALSE(intent_from_json(with("slurm", "annotate")).ok());
  EXPECT_FALSE(intent_from_json(nlohmann::json{{"sink", "slurm"}}).ok());  // no id
}

// The node's verdict is "state" in events as in /v1/nodes, metrics and annotations
// (docs/architecture.md "One name per concept"); "health", the event format's first name, is
// still written with the same value for receivers written against it, and an event journaled
// before 2026-11-27 (only "health") still reads.
TEST(Intent, an_event_says_state_keeps_health_and_reads_what_older_journals_hold) {
  NodeRecord s;
  s.node = "gpu-1";
  s.state = NodeState::kDrained;
  NodeEvent e = state_event(s, Action::kDrain);
  e.before = NodeState::kHealthy;
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("state"), "drained");
  EXPECT_EQ(j.at("health"), "drained");
  EXPECT_EQ(j.at("before"), "healthy");

  nlohmann::json old = j;
  old.erase("state");  // the form journaled before the rename
  auto back = node_event_from_json(old);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->state, NodeState::kDrained);
  EXPECT_EQ(back->before, NodeState::kHealthy);

  nlohmann::json newer = j;
  newer["health"] = "healthy";  // "state" wins where both are there
  auto both = node_event_from_json(newer);
  ASSERT_TRUE(both.ok()) << both.error().to_string();
  EXPECT_EQ(both->state, NodeState::kDrained);
  newer["state"] = "sick";
  auto bad = node_event_from_json(newer);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("state: unknown node state 'sick'"), std::string::npos)
      << bad.error().to_string();
  old.erase("health");
  EXPECT_FALSE(node_event_from_json(old).ok());  // neither: an error, not a default
}

}  // namespace
}  // namespace vigil::drainer
