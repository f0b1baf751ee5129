// LibslurmApi against the real local Slurm cluster (gpu-[0-3], scripts/local-cluster.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "slurm_test_cluster.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {
namespace {

using vigil::testing::SlurmTestCluster;

class SlurmClient : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = SlurmTestCluster::get();
    ASSERT_NE(cluster_, nullptr) << "local Slurm cluster did not start";
    ASSERT_TRUE(cluster_->reset_nodes()) << cluster_->run("sinfo -N");
    api_ = slurm::make_libslurm_api(cluster_->conf());
  }

  const slurm::SlurmNodeInfo* find(const std::vector<slurm::SlurmNodeInfo>& nodes, const std::string& name) {
    for (const auto& n : nodes) {
      if (n.name == name) return &n;
    }
    return nullptr;
  }

  slurm::SlurmNodeInfo node(const std::string& name) {
    auto nodes = api_->load_nodes();
    EXPECT_TRUE(nodes.ok()) << nodes.error().to_string();
    if (!nodes.ok()) return {};
    const slurm::SlurmNodeInfo* n = find(*nodes, name);
    EXPECT_NE(n, nullptr) << name;
    return n != nullptr ? *n : slurm::SlurmNodeInfo{};
  }

  // slurmctld's own count of REQUEST_UPDATE_NODE RPCs (sdiag), -1 when unreadable.
  int update_rpcs_seen() {
    std::string out = cluster_->run("sdiag 2>/dev/null");
    std::smatch m;
    if (!std::regex_search(out, m,
                           std::regex(R"(REQUEST_UPDATE_NODE\s+\(\s*\d+\)\s+count:(\d+))"))) {
      return out.find("Remote Procedure Call statistics") != std::string::npos ? 0 : -1;
    }
    return std::stoi(m[1].str());
  }

  template <typename Pred>
  bool eventually(Pred pred, int seconds = 30) {
    for (int i = 0; i < seconds * 5; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return pred();
  }

  SlurmTestCluster* cluster_ = nullptr;
  std::unique_ptr<slurm::SlurmApi> api_;
};

TEST_F(SlurmClient, load_nodes_sees_four_idle_gpu_nodes_with_partitions) {
  auto nodes = api_->load_nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.error().to_string();
  ASSERT_EQ(nodes->size(), 4u);
  for (const char* name : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) {
    const slurm::SlurmNodeInfo* n = find(*nodes, name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->state, "IDLE") << name;
    EXPECT_FALSE(n->drain || n->down || n->fail || n->maint || n->reserved) << name;
    EXPECT_TRUE(n->reason.empty()) << name << ": " << n->reason;
    EXPECT_NE(std::find(n->partitions.begin(), n->partitions.end(), "gpu"), n->partitions.end());
    EXPECT_NE(std::find(n->partitions.begin(), n->partitions.end(), "vigil"), n->partitions.end());
  }
}

TEST_F(SlurmClient, drain_one_node_shows_vigil_reason_in_sinfo_R) {
  const std::string reason = "vigil: nccl-ib busbw 151<180GB/s";
  auto r = api_->drain({"gpu-0"}, reason);
  ASSERT_TRUE(r.ok()) << r.error().to_string();

  slurm::SlurmNodeInfo n = node("gpu-0");
  EXPECT_TRUE(n.drain);
  EXPECT_FALSE(n.down);
  EXPECT_EQ(n.reason, reason);  // scontrol show node / load_nodes carry it whole
  // Plain `sinfo -R` prints the first 20 characters: prefix and check short name fit there.
  std::string sinfo = cluster_->run("sinfo -R");
  EXPECT_NE(sinfo.find(reason.substr(0, 20)), std::string::npos) << sinfo;
  EXPECT_NE(sinfo.find("gpu-0"), std::string::npos) << sinfo;
  EXPECT_EQ(node("gpu-1").drain, false);
}

TEST_F(SlurmClient, drain_three_nodes_is_one_rpc_over_a_hostlist) {
  const int before = update_rpcs_seen();
  ASSERT_GE(before, 0) << cluster_->run("sdiag 2>&1");
  auto r = api_->drain({"gpu-3", "gpu-1", "gpu-2"}, "vigil: gemm 100<700TFLOP/s");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  for (const char* name : {"gpu-1", "gpu-2", "gpu-3"}) {
    slurm::SlurmNodeInfo n = node(name);
    EXPECT_TRUE(n.drain) << name;
    EXPECT_EQ(n.reason, "vigil: gemm 100<700TFLOP/s") << name;
  }
  EXPECT_FALSE(node("gpu-0").drain);
  EXPECT_EQ(update_rpcs_seen() - before, 1);
  EXPECT_NE(cluster_->run("sinfo -R -h -o '%N'").find("gpu-[1-3]"), std::string::npos);
}

TEST_F(SlurmClient, undrain_returns_drained_nodes_to_idle) {
  ASSERT_TRUE(api_->drain({"gpu-0", "gpu-1"}, "vigil: ecc gpu3 dbe 1>0count").ok());
  ASSERT_TRUE(node("gpu-0").drain);
  auto r = api_->undrain({"gpu-0", "gpu-1"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  for (const char* name : {"gpu-0", "gpu-1"}) {
    slurm::SlurmNodeInfo n = node(name);
    EXPECT_FALSE(n.drain) << name;
    EXPECT_EQ(n.state, "IDLE") << name;
  }
  EXPECT_EQ(cluster_->run("sinfo -R -h"), "");
}

TEST_F(SlurmClient, undrain_leaves_a_down_node_down) {
  ASSERT_TRUE(api_->drain({"gpu-2"}, "vigil: ib port_active 0<1bool").ok());
  // The node then goes DOWN for another reason (an admin, a dead slurmd).
  int rc = 0;
  cluster_->run("scontrol update nodename=gpu-2 state=down reason=admin-down 2>&1", &rc);
  ASSERT_EQ(rc, 0);
  slurm::SlurmNodeInfo before = node("gpu-2");
  ASSERT_TRUE(before.down);
  ASSERT_EQ(before.state, "DOWN");

  ASSERT_TRUE(api_->drain({"gpu-2"}, "vigil: ib port_active 0<1bool").ok());
  ASSERT_TRUE(node("gpu-2").drain);
  auto r = api_->undrain({"gpu-2"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  slurm::SlurmNodeInfo after = node("gpu-2");
  EXPECT_FALSE(after.drain);
  EXPECT_TRUE(after.down);  // NODE_RESUME would have made it IDLE; UNDRAIN must not
  EXPECT_EQ(after.state, "DOWN");
}

TEST_F(SlurmClient, load_nodes_maps_admin_drain_maint_and_reserved) {
  int rc = 0;
  cluster_->run("scontrol update nodename=gpu-0 state=drain reason='hw ticket 42' 2>&1", &rc);
  ASSERT_EQ(rc, 0);
  cluster_->run(
      "scontrol create reservation reservationname=vigil_test_maint flags=maint nodes=gpu-1 "
      "starttime=now duration=10 users=root 2>&1",
      &rc);
  ASSERT_EQ(rc, 0);
  slurm::SlurmNodeInfo admin = node("gpu-0");
  EXPECT_TRUE(admin.drain);
  EXPECT_EQ(admin.reason, "hw ticket 42");
  EXPECT_EQ(admin.state, "IDLE");
  // slurmctld flags reserved nodes on its next pass over the reservations (a few seconds).
  EXPECT_TRUE(eventually([&] {
    slurm::SlurmNodeInfo n = node("gpu-1");
    return n.maint && n.reserved;
  })) << cluster_->run("scontrol show node gpu-1");
  EXPECT_FALSE(node("gpu-2").maint);
  cluster_->run("scontrol delete reservationname=vigil_test_maint 2>&1");
}

TEST_F(SlurmClient, unknown_node_in_batch_is_named_and_the_rest_is_drained) {
  auto r = api_->drain({"gpu-0", "gpu-1", "nosuch-7"}, "vigil: temp 95>90celsius");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nosuch-7"), std::string::npos) << r.error().to_string();
  EXPECT_TRUE(node("gpu-0").drain);
  EXPECT_TRUE(node("gpu-1").drain);
}

TEST_F(SlurmClient, control_characters_and_bad_names_are_refused_before_any_rpc) {
  const int before = update_rpcs_seen();
  ASSERT_GE(before, 0);
  auto newline = api_->drain({"gpu-0"}, "vigil: x\nforged line");
  ASSERT_FALSE(newline.ok());
  EXPECT_NE(newline.error().message.find("control character"), std::string::npos);
  EXPECT_FALSE(api_->drain({"gpu-0"}, "").ok());
  EXPECT_FALSE(api_->drain({"gpu-[0-3]"}, "vigil: x").ok());  // would widen to 4 nodes
  EXPECT_FALSE(api_->drain({"gpu-0,gpu-1"}, "vigil: x").ok());
  EXPECT_FALSE(api_->undrain({""}).ok());
  EXPECT_TRUE(api_->drain({}, "vigil: x").ok());  // nothing to do, no RPC
  EXPECT_EQ(update_rpcs_seen(), before);
  EXPECT_FALSE(node("gpu-0").drain);
}

TEST_F(SlurmClient, controller_down_gives_errors_not_crashes_and_recovers) {
  ASSERT_TRUE(cluster_->stop_controller());
  auto nodes = api_->load_nodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.error().where.find("slurm_load_node"), std::string::npos);
  EXPECT_NE(nodes.error().message.find("Unable to contact slurm controller"), std::string::npos)
      << nodes.error().to_string();
  auto drain = api_->drain({"gpu-0"}, "vigil: x");
  ASSERT_FALSE(drain.ok());
  EXPECT_NE(drain.error().where.find("slurm_update_node(node_names=gpu-0"), std::string::npos)
      << drain.error().to_string();
  // (Each call waits out libslurm's connect retries, about MessageTimeout seconds: keep few.)

  ASSERT_TRUE(cluster_->start_controller());
  EXPECT_TRUE(eventually([&] { return api_->load_nodes().ok(); }));
  auto again = api_->drain({"gpu-0"}, "vigil: x");
  EXPECT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_TRUE(node("gpu-0").drain);
}

TEST_F(SlurmClient, a_second_slurm_conf_in_one_process_is_an_error) {
  ASSERT_TRUE(api_->load_nodes().ok());
  auto other = slurm::make_libslurm_api("/nonexistent/slurm.conf");
  auto r = other->load_nodes();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("already initialised"), std::string::npos)
      << r.error().to_string();
}

}  // namespace
}  // namespace vigil::drainer
