// A k-node fabric job's per-node results from the localization (fabric_job.h).
#include "allreduce/fabric_job.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

FabricRoundsResult rounds_of(const std::vector<std::string>& nodes,
                             std::vector<detect::PairFigure> pairs,
                             const std::map<std::string, std::string>& leaf_of = {}) {
  FabricRoundsResult r;
  r.pairs = std::move(pairs);
  r.verdict = detect::localize(nodes, r.pairs, leaf_of);
  return r;
}

const Measurement* find_measurement(const CheckResult& r, const std::string& name) {
  for (const auto& m : r.measurements)
    if (m.name == name) return &m;
  return nullptr;
}

TEST(FabricJob, the_localized_node_fails_with_its_pairs_and_the_others_pass) {
  // n3 is slow with all three partners; each partner is fine with someone else.
  const auto r = fabric_job_results(rounds_of({"n0", "n1", "n2", "n3"}, {{"n0", "n3", 0, 30},
                                                                         {"n1", "n2", 0, 40},
                                                                         {"n1", "n3", 1, 29},
                                                                         {"n0", "n2", 1, 41},
                                                                         {"n2", "n3", 2, 30},
                                                                         {"n0", "n1", 2, 40}}),
                                    {});
  ASSERT_EQ(r.size(), 4u);
  const CheckResult& bad = r.at("n3");
  EXPECT_EQ(bad.status, Status::kFail);
  EXPECT_EQ(bad.fault_code, "VIGIL-FABRIC-LOCALIZED");
  EXPECT_EQ(bad.check, "fabric_allreduce_ib");
  EXPECT_NE(bad.message.find("4-node fabric job: slow with 3 partners"), std::string::npos)
      << bad.message;
  ASSERT_EQ(bad.measurements.size(), 3u);
  EXPECT_EQ(bad.measurements[0].name, "pair_busbw");
  EXPECT_EQ(bad.measurements[0].port, "pair:n0");
  EXPECT_EQ(bad.measurements[0].value, 30);
  for (const char* n : {"n0", "n1", "n2"}) {
    EXPECT_EQ(r.at(n).status, Status::kPass) << n << ": " << r.at(n).message;
    EXPECT_EQ(r.at(n).measurements.size(), 3u);
  }
}

// An NVLink domain job localizes the same way and reports as its own check (nvl-domain reasons,
// VIGIL-DOMAIN-* codes), so a slow tray drains with a reason that says which network it was.
TEST(FabricJob, an_nvlink_domain_job_blames_a_tray_under_its_own_check) {
  const auto r = fabric_job_results(rounds_of({"t0", "t1", "t2", "t3"}, {{"t0", "t3", 0, 300},
                                                                         {"t1", "t2", 0, 640},
                                                                         {"t1", "t3", 1, 290},
                                                                         {"t0", "t2", 1, 650},
                                                                         {"t2", "t3", 2, 300},
                                                                         {"t0", "t1", 2, 645}}),
                                    {}, kNvlinkDomain);
  const CheckResult& bad = r.at("t3");
  EXPECT_EQ(bad.status, Status::kFail);
  EXPECT_EQ(bad.fault_code, "VIGIL-DOMAIN-LOCALIZED");
  EXPECT_EQ(bad.check, "domain_allreduce_nvlink");
  EXPECT_EQ(bad.short_name, "nvl-domain");
  EXPECT_NE(bad.message.find("4-node NVLink domain job: slow with 3 partners"), std::string::npos)
      << bad.message;
  EXPECT_EQ(r.at("t0").status, Status::kPass) << r.at("t0").message;
}

TEST(FabricJob, a_node_without_a_measured_pair_is_an_error_naming_the_failed_runs) {
  FabricRoundsResult rounds =
      rounds_of({"n0", "n1", "n2", "n3"}, {{"n0", "n1", 0, std::nullopt}, {"n2", "n3", 0, 40}});
  rounds.pair_errors[0] = "vigil-allreduce: exited 1 with no result";
  const auto r = fabric_job_results(rounds, {});
  EXPECT_EQ(r.at("n0").status, Status::kError);
  EXPECT_EQ(r.at("n0").fault_code, "VIGIL-FABRIC-LAUNCH");
  EXPECT_NE(r.at("n0").message.find("round 1 n0+n1"), std::string::npos) << r.at("n0").message;
  EXPECT_EQ(r.at("n2").status, Status::kPass);
  EXPECT_EQ(r.at("n2").message.find("round 1"), std::string::npos) << r.at("n2").message;
}

TEST(FabricJob, a_node_with_a_good_pair_and_a_failed_one_passes_and_names_the_failed_run) {
  // n10 must not pick up n1's failed pair.
  FabricRoundsResult rounds = rounds_of({"n1", "n2", "n3", "n10"}, {{"n1", "n2", 0, 40},
                                                                    {"n3", "n10", 0, 40},
                                                                    {"n1", "n3", 1, std::nullopt},
                                                                    {"n2", "n10", 1, 41}});
  rounds.pair_errors[2] = "mpirun: timed out";
  const auto r = fabric_job_results(rounds, {});
  EXPECT_EQ(r.at("n1").status, Status::kPass);
  EXPECT_NE(r.at("n1").message.find("; round 2 n1+n3: mpirun: timed out"), std::string::npos)
      << r.at("n1").message;
  EXPECT_NE(r.at("n3").message.find("round 2 n1+n3"), std::string::npos) << r.at("n3").message;
  EXPECT_EQ(r.at("n10").message.find("round 2"), std::string::npos) << r.at("n10").message;
  EXPECT_EQ(r.at("n2").message.find("round 2"), std::string::npos) << r.at("n2").message;
}

TEST(FabricJob, nodes_under_a_suspected_switch_warn_and_are_not_failed) {
  std::map<std::string, std::string> leaf_of;
  std::vector<std::string> nodes;
  for (int i = 0; i < 6; ++i) {
    nodes.push_back("n" + std::to_string(i));
    leaf_of[nodes.back()] = "leaf" + std::to_string(i / 2);
  }
  // leaf1 = {n2, n3}: every pair that leaves it is slow, the pair inside it and the pairs
  // between leaf0 and leaf2 are fine.
  const auto r = fabric_job_results(rounds_of(nodes,
                                              {{"n2", "n0", 0, 20},
                                               {"n3", "n4", 0, 21},
                                               {"n1", "n5", 0, 40},
                                               {"n2", "n5", 1, 20},
                                               {"n3", "n1", 1, 21},
                                               {"n0", "n4", 1, 40},
                                               {"n2", "n3", 2, 41},
                                               {"n0", "n5", 2, 40},
                                               {"n1", "n4", 2, 40}},
                                              leaf_of),
                                    leaf_of);
  for (const char* n : {"n2", "n3"}) {
    EXPECT_EQ(r.at(n).status, Status::kWarn) << r.at(n).message;
    EXPECT_EQ(r.at(n).fault_code, "VIGIL-FABRIC-SWITCH");
    EXPECT_NE(r.at(n).message.find("switch leaf1 suspected"), std::string::npos);
  }
  for (const char* n : {"n0", "n1", "n4", "n5"}) EXPECT_NE(r.at(n).status, Status::kFail) << n;
  // The switch verdict travels as a measurement: 1 under the suspected leaf...
  for (const char* n : {"n2", "n3"}) {
    const Measurement* m = find_measurement(r.at(n), "switch_suspected");
    ASSERT_NE(m, nullptr) << n;
    EXPECT_EQ(m->value, 1) << n;
    EXPECT_EQ(m->unit, "bool");
    EXPECT_EQ(m->port, "switch:leaf1");
  }
  // ...and 0 (clearing evidence) for a node with a good pair leaving its own leaf.
  for (const char* n : {"n0", "n1", "n4", "n5"}) {
    const Measurement* m = find_measurement(r.at(n), "switch_suspected");
    ASSERT_NE(m, nullptr) << n;
    EXPECT_EQ(m->value, 0) << n;
    EXPECT_EQ(m->port, "switch:" + leaf_of.at(n));
  }
}

TEST(FabricJob, a_node_with_only_pairs_inside_its_leaf_carries_no_switch_evidence) {
  const std::map<std::string, std::string> leaf_of = {
      {"n0", "leaf0"}, {"n1", "leaf0"}, {"n2", "leaf1"}, {"n3", "leaf1"}};
  // n0 and n1 only met each other (and a failed run): nothing about leaf0's uplink.
  const auto r = fabric_job_results(rounds_of({"n0", "n1", "n2", "n3"},
                                              {{"n0", "n1", 0, 40},
                                               {"n2", "n3", 0, 40},
                                               {"n0", "n2", 1, std::nullopt},
                                               {"n1", "n3", 1, 40}},
                                              leaf_of),
                                    leaf_of);
  EXPECT_EQ(find_measurement(r.at("n0"), "switch_suspected"), nullptr);
  const Measurement* m = find_measurement(r.at("n1"), "switch_suspected");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->value, 0);
  EXPECT_EQ(m->port, "switch:leaf0");
  // Without a topology no node carries switch evidence.
  const auto plain = fabric_job_results(
      rounds_of({"n0", "n1", "n2", "n3"}, {{"n0", "n2", 0, 40}, {"n1", "n3", 0, 40}}), {});
  for (const auto& [node, res] : plain)
    EXPECT_EQ(find_measurement(res, "switch_suspected"), nullptr);
}

}  // namespace
}  // namespace vigil
