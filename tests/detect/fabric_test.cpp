// Fabric localization: round planning and the pass / fail / unknown / switch calls.
#include "vigil/detect/fabric.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace vigil::detect {
namespace {

std::vector<std::string> names(int k) {
  std::vector<std::string> out;
  for (int i = 0; i < k; ++i) out.push_back("n" + std::to_string(i));
  return out;
}

// Runs the planned rounds of `k` nodes: a pair's figure is `healthy` times the slower end's
// factor (factor[i] < 1: node i is slow), times `cross` when exactly one end is under
// `slow_leaf` (its uplink is slow).
std::vector<PairFigure> run_rounds(int k, int rounds, const std::vector<double>& factor,
                                   const std::map<std::string, std::string>& leaf_of = {},
                                   const std::string& slow_leaf = "", double cross = 1) {
  const auto all = names(k);
  std::vector<PairFigure> out;
  int r = 0;
  for (const auto& round : plan_rounds(k, rounds, 7)) {
    for (const auto& [ia, ib] : round) {
      const std::string& a = all[static_cast<std::size_t>(ia)];
      const std::string& b = all[static_cast<std::size_t>(ib)];
      double f =
          std::min(factor[static_cast<std::size_t>(ia)], factor[static_cast<std::size_t>(ib)]);
      if (!slow_leaf.empty() && (leaf_of.at(a) == slow_leaf) != (leaf_of.at(b) == slow_leaf))
        f *= cross;
      out.push_back({a, b, r, 40 * f});
    }
    ++r;
  }
  return out;
}

std::map<std::string, std::string> leaves(int k, int per_leaf) {
  std::map<std::string, std::string> leaf_of;
  for (int i = 0; i < k; ++i)
    leaf_of["n" + std::to_string(i)] =
        "leaf-" + std::string(1, static_cast<char>('a' + i / per_leaf));
  return leaf_of;
}

const NodeBlame& blame(const FabricVerdict& v, const std::string& node) {
  for (const auto& b : v.nodes)
    if (b.node == node) return b;
  throw std::runtime_error("no verdict for " + node);
}

TEST(FabricRounds, every_round_pairs_disjoint_nodes_and_no_pair_repeats) {
  for (int k : {2, 4, 7, 8, 16}) {
    const int rounds = std::min(3, k % 2 ? k : k - 1);
    const auto plan = plan_rounds(k, rounds, 42);
    ASSERT_EQ(static_cast<int>(plan.size()), rounds);
    std::set<std::pair<int, int>> all;
    for (const auto& round : plan) {
      std::set<int> used;
      for (const auto& [a, b] : round) {
        EXPECT_NE(a, b);
        EXPECT_TRUE(used.insert(a).second) << "k=" << k << " node " << a << " twice in a round";
        EXPECT_TRUE(used.insert(b).second) << "k=" << k << " node " << b << " twice in a round";
        EXPECT_TRUE(all.insert({a, b}).second) << "k=" << k << " pair repeated";
      }
      EXPECT_EQ(static_cast<int>(used.size()), k - k % 2) << "k=" << k;
    }
  }
}

TEST(FabricRounds, partners_differ_from_job_to_job) {
  EXPECT_NE(plan_rounds(8, 3, 1), plan_rounds(8, 3, 2));
  EXPECT_EQ(plan_rounds(8, 3, 1), plan_rounds(8, 3, 1));
  EXPECT_TRUE(plan_rounds(1, 3, 1).empty());
}

TEST(FabricLocalize, one_slow_node_among_eight_is_named_in_one_job_and_its_partners_pass) {
  std::vector<double> f(8, 1.0);
  f[5] = 0.8;  // 20% slow
  const auto v = localize(names(8), run_rounds(8, 3, f), {});
  for (const auto& b : v.nodes) {
    if (b.node == "n5") {
      EXPECT_EQ(b.call, FabricCall::kFail) << b.message;
      EXPECT_EQ(b.proven_partners.size(), 3u);
      EXPECT_NE(b.message.find("slow with 3 partners that are fine elsewhere"), std::string::npos)
          << b.message;
    } else {
      EXPECT_EQ(b.call, FabricCall::kPass) << b.node << ": " << b.message;
    }
  }
  EXPECT_TRUE(v.switches.empty());
  EXPECT_EQ(v.slow_pair_count, 3);
}

TEST(FabricLocalize, healthy_noise_blames_nobody) {
  std::vector<double> f = {1.0, 0.99, 1.01, 0.985, 1.0, 1.015, 0.995, 1.005};
  const auto v = localize(names(8), run_rounds(8, 3, f), {});
  for (const auto& b : v.nodes) EXPECT_EQ(b.call, FabricCall::kPass) << b.node;
  EXPECT_EQ(v.slow_pair_count, 0);
}

TEST(FabricLocalize, a_node_slow_with_only_one_proven_partner_is_unknown_not_failed) {
  // Two rounds only, and the slow node's second partner is slow too: one proven partner.
  std::vector<PairFigure> pairs = {{"a", "b", 0, 30}, {"c", "d", 0, 40}, {"a", "c", 1, 30},
                                   {"b", "d", 1, 30}, {"e", "f", 0, 40}, {"e", "c", 1, 40},
                                   {"f", "d", 2, 41}};
  const auto v = localize({"a", "b", "c", "d", "e", "f"}, pairs, {});
  EXPECT_EQ(blame(v, "a").call, FabricCall::kUnknown) << blame(v, "a").message;
  EXPECT_EQ(blame(v, "b").call, FabricCall::kUnknown) << blame(v, "b").message;
  EXPECT_EQ(blame(v, "c").call, FabricCall::kPass);
}

TEST(FabricLocalize, failed_runs_prove_nothing) {
  std::vector<PairFigure> pairs = {{"a", "b", 0, std::nullopt}, {"c", "d", 0, 40}};
  const auto v = localize({"a", "b", "c", "d"}, pairs, {});
  EXPECT_EQ(blame(v, "a").call, FabricCall::kUnknown);
  EXPECT_EQ(blame(v, "a").message, "no measured pair");
  EXPECT_EQ(v.pair_count, 1);
}

TEST(FabricLocalize, a_floor_catches_a_job_whose_pairs_are_all_slow) {
  std::vector<double> f(8, 0.5);
  auto v = localize(names(8), run_rounds(8, 3, f), {});
  EXPECT_EQ(v.slow_pair_count, 0) << "relative to each other nothing stands out";
  FabricJudgeConfig cfg;
  cfg.floor = 33;
  v = localize(names(8), run_rounds(8, 3, f), {}, cfg);
  EXPECT_EQ(v.slow_pair_count, v.pair_count);
  for (const auto& b : v.nodes) EXPECT_EQ(b.call, FabricCall::kUnknown) << "no partner proves it";
}

TEST(FabricLocalize, a_slow_leaf_is_a_switch_fault_and_its_nodes_are_not_blamed) {
  // 12 nodes under three leaves; leaf-b's uplink makes every pair that leaves it 30% slow.
  const auto leaf_of = leaves(12, 4);
  const auto v = localize(
      names(12), run_rounds(12, 3, std::vector<double>(12, 1.0), leaf_of, "leaf-b", 0.7), leaf_of);
  ASSERT_EQ(v.switches.size(), 1u);
  EXPECT_EQ(v.switches.front().leaf, "leaf-b");
  EXPECT_NE(v.switches.front().message.find("nodes slow on every pair that leaves it"),
            std::string::npos)
      << v.switches.front().message;
  for (const auto& b : v.nodes) {
    EXPECT_NE(b.call, FabricCall::kFail) << b.node << ": " << b.message;
    if (b.leaf == "leaf-b") {
      EXPECT_NE(b.message.find("switch leaf-b suspected"), std::string::npos);
    }
  }
}

TEST(FabricLocalize, one_slow_node_under_a_leaf_is_still_the_node) {
  const auto leaf_of = leaves(8, 4);
  std::vector<double> f(8, 1.0);
  f[2] = 0.75;
  const auto v = localize(names(8), run_rounds(8, 3, f, leaf_of), leaf_of);
  EXPECT_TRUE(v.switches.empty());
  EXPECT_EQ(blame(v, "n2").call, FabricCall::kFail) << blame(v, "n2").message;
  EXPECT_EQ(blame(v, "n2").leaf, "leaf-a");
}

}  // namespace
}  // namespace vigil::detect
