// The drainer's verdicts and shared policy as the hooks read them (drain_decision.h): round trip,
// strict types and ranges, a bad policy that keeps the verdicts, unknown verdict words.
#include "vigil/report/drain_decision.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vigil {
namespace {

TEST(DrainDecision, a_reply_round_trips) {
  ReportReply r;
  r.accepted = 1;
  r.decisions.push_back({"gpu-0", "run-1", DrainVerdict::kBreakerHeld, "vigil: xid 79", "open"});
  SharedDrainPolicy p;
  p.fatal_checks = {"gpu_count"};
  p.dry_run = true;
  p.breaker_max_drains = 3;
  p.breaker_open = true;
  r.policy = p;
  auto back = report_reply_from_json(to_json(r).dump());
  ASSERT_TRUE(back) << back.error().to_string();
  ASSERT_EQ(back->decisions.size(), 1u);
  EXPECT_EQ(back->decisions[0].verdict, DrainVerdict::kBreakerHeld);
  EXPECT_EQ(back->decisions[0].reason, "vigil: xid 79");
  ASSERT_TRUE(back->policy);
  EXPECT_EQ(back->policy->fatal_checks, p.fatal_checks);
  EXPECT_TRUE(back->policy->dry_run);
  EXPECT_TRUE(back->policy->breaker_open);
  EXPECT_EQ(back->policy->breaker_max_drains, 3);
}

TEST(DrainDecision, an_old_drainers_answer_has_no_verdict_and_no_policy) {
  auto r = report_reply_from_json(R"({"accepted":1,"duplicates":0})");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->decisions.empty());
  EXPECT_FALSE(r->policy);
}

TEST(DrainDecision, wrong_types_and_ranges_are_refused_naming_the_field) {
  auto bad = [](const char* policy) {
    auto p = shared_policy_from_json(nlohmann::json::parse(policy));
    return p ? std::string("accepted") : p.error().to_string();
  };
  EXPECT_NE(bad(R"({"breaker":{"max_drains":true}})").find("policy.breaker.max_drains"),
            std::string::npos);
  EXPECT_NE(bad(R"({"breaker":{"max_drains":2.5}})").find("max_drains"), std::string::npos);
  EXPECT_NE(bad(R"({"breaker":{"window_s":1e300}})").find("window_s"), std::string::npos);
  EXPECT_NE(bad(R"({"dry_run":1})").find("policy.dry_run"), std::string::npos);
  EXPECT_NE(bad(R"({"fatal_checks":["a",1]})").find("policy.fatal_checks"), std::string::npos);
  EXPECT_NE(bad(R"({"breaker":{"max_drains":0}})").find("out of range"), std::string::npos);
  EXPECT_NE(bad(R"({"breaker":{"max_percent":0}})").find("out of range"), std::string::npos);
  EXPECT_EQ(bad(R"({"breaker":{"max_drains":1,"max_percent":100,"window_s":1}})"), "accepted");
}

TEST(DrainDecision, a_bad_policy_keeps_the_verdicts_and_a_bad_verdict_list_is_an_error) {
  auto r = report_reply_from_json(
      R"({"decisions":[{"node":"n","run_id":"r","verdict":"drain"}],"policy":{"dry_run":"no"}})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->decisions.at(0).verdict, DrainVerdict::kDrain);
  EXPECT_FALSE(r->policy);
  EXPECT_NE(r->policy_error.find("policy.dry_run"), std::string::npos);
  EXPECT_FALSE(report_reply_from_json(R"({"decisions":{"node":"n"}})"));
  EXPECT_FALSE(report_reply_from_json(R"({"decisions":[{"node":7}]})"));
  EXPECT_FALSE(report_reply_from_json("not json"));
  auto odd = report_reply_from_json(R"({"decisions":[{"node":"n","verdict":"reboot"}]})");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->decisions.at(0).verdict, DrainVerdict::kUnknown);
}

TEST(DrainDecision, the_breaker_cap_is_the_drainers_formula) {
  EXPECT_EQ(breaker_cap(10, 50, 2), 1);
  EXPECT_EQ(breaker_cap(10, 50, 1), 1);  // a group of one can always drain one
  EXPECT_EQ(breaker_cap(10, 50, 100), 10);
  EXPECT_EQ(breaker_cap(10, 20, 10), 2);
  EXPECT_EQ(breaker_cap(3, 100, 0), 1);
}

}  // namespace
}  // namespace vigil
