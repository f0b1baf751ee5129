// The fabric rounds on a real, slowed network: simulated nodes are network namespaces cabled to
// leaf bridges and a spine (netns_fabric.sh), ranks of the host backend's all_reduce run inside
// them over TCP (mpirun in a head namespace, netns_rsh.sh as its remote shell), and tc slows one
// node's link or one leaf's uplink. One job must name the slow node, or the slow leaf.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "allreduce/fabric_rounds.h"
#include "scoped_env.h"
#include "temp_dir.h"
#include "vigil/base/process.h"

namespace vigil {
namespace {

const std::string kDir = VIGIL_FABRIC_TEST_DIR;

struct Node {
  std::string ip, leaf, ns;
};

// Builds the fabric on construction, removes it (and every process in it) on destruction.
class NetnsFabric {
 public:
  NetnsFabric(int leaves, int per_leaf) : prefix_("vf" + std::to_string(::getpid() % 1000)) {
    run({"down"});  // leftovers of a killed run with the same pid
    auto out = run({"up", std::to_string(leaves), std::to_string(per_leaf), "400mbit"});
    std::istringstream in(out);
    std::string kind;
    Node n;
    std::ofstream map(map_file());
    while (in >> kind >> n.ip >> n.leaf) {
      if (kind == "node") {
        in >> n.ns;
        nodes_.push_back(n);
        map << n.ip << " " << n.ns << "\n";
      } else {  // head: "head <ip> <ns>"
        head_ = n.leaf;
        map << n.ip << " " << head_ << "\n";
      }
    }
  }
  ~NetnsFabric() { run({"down"}); }

  std::string run(std::vector<std::string> args) {
    std::vector<std::string> argv = {kDir + "/netns_fabric.sh", args.front(), prefix_};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    LaunchOptions lo;
    lo.timeout = std::chrono::seconds(60);
    auto r = run_command(argv, lo);
    if (!r.ok() || r->exit_code != 0) {
      ADD_FAILURE() << "netns_fabric.sh " << args.front() << ": "
                    << (r.ok() ? r->err : r.error().to_string());
      return {};
    }
    return r->out;
  }

  std::string map_file() const { return dir_.path() + "/map"; }
  const std::string& head() const { return head_; }
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  std::string prefix_;
  testing::TempDir dir_;
  std::vector<Node> nodes_;
  std::string head_;
};

class FabricNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root for ip netns and tc";
  }

  FabricRoundsResult run_rounds(NetnsFabric& f, bool with_topology) {
    testing::ScopedEnv head("VIGIL_NETNS_HEAD", f.head());
    testing::ScopedEnv map("VIGIL_NETNS_MAP", f.map_file());
    CheckContext ctx;
    ctx.mpirun = kDir + "/netns_mpirun.sh";
    ctx.allreduce_binary = VIGIL_ALLREDUCE_BIN;
    AllreduceSpec spec;
    spec.check = "fabric_allreduce_ib";
    spec.fault_prefix = "VIGIL-FABRIC";
    spec.backend = "host";
    spec.transport = "ib";
    spec.min_bytes = spec.max_bytes = "2M";
    spec.warmup_iters = 1;
    spec.iters = 3;
    spec.timeout = std::chrono::seconds(90);
    FabricRoundsPlan plan;
    for (const auto& n : f.nodes()) {
      plan.nodes.push_back(n.ip);
      if (with_topology) plan.leaf_of[n.ip] = n.leaf;
    }
    plan.rounds = 3;
    plan.seed = 11;
    return run_fabric_rounds(ctx, spec, plan);
  }
};

std::string describe(const FabricRoundsResult& r) {
  std::string s;
  for (const auto& p : r.pairs)
    s += "  round " + std::to_string(p.round) + " " + p.a + "+" + p.b + " " +
         (p.busbw ? std::to_string(*p.busbw) : "error") + "\n";
  for (const auto& b : r.verdict.nodes)
    s += "  " + b.node + " " + detect::to_string(b.call) + ": " + b.message + "\n";
  for (const auto& e : r.pair_errors) s += "  " + e + "\n";
  return s;
}

TEST_F(FabricNetns, one_job_names_the_node_whose_link_is_slowed_and_passes_the_others) {
  NetnsFabric f(1, 4);
  ASSERT_EQ(f.nodes().size(), 4u);
  f.run({"shape-node", "2", "100mbit"});
  const auto r = run_rounds(f, false);
  ASSERT_TRUE(r.pair_errors.empty()) << describe(r);
  ASSERT_EQ(r.pairs.size(), 6u) << describe(r);  // 4 nodes, 3 rounds: every pair once
  for (const auto& b : r.verdict.nodes) {
    if (b.node == f.nodes()[2].ip) {
      EXPECT_EQ(b.call, detect::FabricCall::kFail) << describe(r);
    } else {
      EXPECT_EQ(b.call, detect::FabricCall::kPass) << describe(r);
    }
  }
  EXPECT_TRUE(r.verdict.switches.empty()) << describe(r);
}

TEST_F(FabricNetns, a_slowed_leaf_uplink_is_named_as_the_switch_and_no_node_is_blamed) {
  NetnsFabric f(3, 2);
  ASSERT_EQ(f.nodes().size(), 6u);
  f.run({"shape-leaf", "1", "100mbit"});
  const auto r = run_rounds(f, true);
  ASSERT_TRUE(r.pair_errors.empty()) << describe(r);
  ASSERT_EQ(r.verdict.switches.size(), 1u) << describe(r);
  EXPECT_EQ(r.verdict.switches.front().leaf, "leaf1") << describe(r);
  for (const auto& b : r.verdict.nodes) EXPECT_NE(b.call, detect::FabricCall::kFail) << describe(r);
}

}  // namespace
}  // namespace vigil
