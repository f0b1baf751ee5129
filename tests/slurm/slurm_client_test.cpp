// The SlurmApi backends against the real local Slurm cluster (gpu-[0-3], scripts/local-cluster.sh
// --rest): every behaviour below runs on libslurm and on slurmrestd (JWT), so both backends
// keep the same drain, undrain, ownership and error rules. The cluster runs the Slurm release
// this build's libslurm comes from (22.05 on bookworm, 24.11 in scripts/slurm-root.sh's trixie).
#include <gtest/gtest.h>
#include <httplib.h>
#include <slurm/slurm_version.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "slurm_test_cluster.h"
#include "vigil/slurm/reason.h"
#include "vigil/slurm/scontrol.h"
#include "vigil/slurm/slurm_api.h"
#include "vigil/slurm/slurm_rest.h"

namespace vigil::drainer {
namespace {

using vigil::testing::SlurmTestCluster;

// slurmrestd of 22.05 serves v0.0.38 only, which cannot update nodes (RestOn2205 below).
constexpr bool kRestCanUpdate = SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0);

enum class Backend { kLibslurm, kRest, kScontrol };

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

slurm::RestSettings rest_settings(const SlurmTestCluster& c) {
  slurm::RestSettings s;
  s.url = c.local().rest_url();
  s.token_file = c.local().jwt_token_file();
  return s;
}

class SlurmClientBase {
 protected:
  // Returns false (with a failure recorded) when the backend cannot be made.
  bool make(Backend backend) {
    cluster_ = SlurmTestCluster::get(/*rest=*/true);
    if (cluster_ == nullptr) {
      ADD_FAILURE() << "local Slurm cluster did not start";
      return false;
    }
    if (!cluster_->reset_nodes()) {
      ADD_FAILURE() << cluster_->run("sinfo -N");
      return false;
    }
    if (backend == Backend::kLibslurm) {
      api_ = slurm::make_libslurm_api(cluster_->conf());
      return true;
    }
    if (backend == Backend::kScontrol) {  // what vigil-check's hooks use (scontrol.h)
      api_ = slurm::make_scontrol_api(cluster_->conf());
      return true;
    }
    auto rest = slurm::make_rest_api(rest_settings(*cluster_));
    if (!rest.ok()) {
      ADD_FAILURE() << rest.error().to_string();
      return false;
    }
    api_ = std::move(*rest);
    return true;
  }

  const slurm::SlurmNodeInfo* find(const std::vector<slurm::SlurmNodeInfo>& nodes,
                                   const std::string& name) {
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
  int update_rpcs_seen() { return rpcs_seen("REQUEST_UPDATE_NODE"); }

  // slurmctld's own count of one RPC type (sdiag), -1 when unreadable.
  int rpcs_seen(const std::string& type) {
    std::string out = cluster_->run("sdiag 2>/dev/null");
    std::smatch m;
    if (!std::regex_search(out, m, std::regex(type + R"(\s+\(\s*\d+\)\s+count:(\d+))"))) {
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

class SlurmClient : public SlurmClientBase, public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kRest && !kRestCanUpdate) {
      GTEST_SKIP() << "slurmrestd of this Slurm release cannot update nodes (RestOn2205)";
    }
    ASSERT_TRUE(make(GetParam()));
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, SlurmClient,
                         ::testing::Values(Backend::kLibslurm, Backend::kRest, Backend::kScontrol),
                         [](const auto& info) {
                           return info.param == Backend::kLibslurm ? "libslurm"
                                  : info.param == Backend::kRest   ? "rest"
                                                                   : "scontrol";
                         });

// What only the libslurm backend has: process-global configuration, libslurm's own errors.
class LibslurmClient : public SlurmClientBase, public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(make(Backend::kLibslurm)); }
};

TEST_P(SlurmClient, load_nodes_sees_four_idle_gpu_nodes_with_partitions) {
  auto nodes = api_->load_nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.error().to_string();
  ASSERT_EQ(nodes->size(), 4u);
  for (const char* name : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) {
    const slurm::SlurmNodeInfo* n = find(*nodes, name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->state, "IDLE") << name;
    EXPECT_FALSE(n->drain || n->down || n->fail || n->maint || n->reserved) << name;
    // No reason check: in 24.11, UNDRAIN and RESUME leave the last reason text on the node
    // (22.05 cleared it), so an earlier test's "vigil: ..." may still be there. Without the
    // DRAIN flag it is never taken for a Vigil drain.
    EXPECT_FALSE(slurm::drained_by_vigil(*n)) << name << ": " << n->reason;
    EXPECT_NE(std::find(n->partitions.begin(), n->partitions.end(), "gpu"), n->partitions.end());
    EXPECT_NE(std::find(n->partitions.begin(), n->partitions.end(), "vigil"), n->partitions.end());
    if (!cluster_->local().production()) continue;
    // The production profile declares each node's GPUs and features (scripts/local-cluster.sh):
    // the site's own word the drainer's hardware classes read (classes.h).
    EXPECT_EQ(slurm::gpu_count(n->gres), 8) << name << ": " << n->gres;
    EXPECT_EQ(sorted(n->features), (std::vector<std::string>{"ib", "sim"})) << name;
  }
}

TEST_P(SlurmClient, drain_one_node_shows_vigil_reason_in_sinfo_R) {
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

// The repair ladder's reboot (docs/repair.md) on this cluster's Slurm release (22.05 here, 24.11
// in the trixie root's lean set): slurmctld runs the RebootProgram on the idle drained node
// (scripts/lib/local-reboot.sh: slurmd restarted in a new time namespace, a fresh boot), and the
// node registers with a new boot time, still drained, still with Vigil's reason, so it stays
// Vigil's for the re-check that decides its resume. slurmrestd has no reboot: refused.
TEST_P(SlurmClient, a_reboot_keeps_the_drain_and_vigils_reason_across_the_new_boot) {
  const std::string reason = "vigil: remap gpu3 row remap pending (1)";
  if (GetParam() == Backend::kRest) {
    EXPECT_FALSE(api_->reboot({"gpu-3"}, reason).ok());
    return;
  }
  ASSERT_TRUE(api_->drain({"gpu-3"}, reason).ok());
  const slurm::SlurmNodeInfo before = node("gpu-3");
  ASSERT_GT(before.boot_time, 0);
  auto r = api_->reboot({"gpu-3"}, reason);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  slurm::SlurmNodeInfo after;
  const bool rebooted = eventually(
      [&] {
        after = node("gpu-3");
        return after.boot_time > before.boot_time && !after.reboot_pending &&
               after.state != "DOWN" && !after.not_responding;
      },
      90);
  ASSERT_TRUE(rebooted) << "state " << after.state << " reboot_pending " << after.reboot_pending
                        << " boot " << before.boot_time << " -> " << after.boot_time << " reason '"
                        << after.reason << "'\n"
                        << cluster_->run("cat " + cluster_->dir() + "/log/local-reboot.log");
  EXPECT_TRUE(after.drain) << after.state;
  EXPECT_EQ(after.reason.rfind(reason, 0), 0u) << after.reason;
  EXPECT_TRUE(slurm::drained_by_vigil(after)) << after.reason;
}

// "ALL" is every node to slurm_update_node and scontrol: every backend refuses it, in any
// case, before any RPC, whoever the caller is.
TEST_P(SlurmClient, the_keyword_all_is_refused_as_a_node_name_before_any_rpc) {
  const int before = update_rpcs_seen();
  for (const char* name : {"ALL", "all"}) {
    auto r = api_->drain({"gpu-0", name}, "vigil: test");
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.error().to_string().find("Slurm keyword"), std::string::npos)
        << r.error().to_string();
  }
  EXPECT_EQ(update_rpcs_seen(), before);
  for (const char* n : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) EXPECT_FALSE(node(n).drain) << n;
}

TEST_P(SlurmClient, drain_three_nodes_is_one_rpc_over_a_hostlist) {
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

TEST_P(SlurmClient, undrain_returns_drained_nodes_to_idle) {
  if (GetParam() == Backend::kScontrol) {
    // It refuses (scontrol_client.cpp): on 24.11 this sequence through scontrol left gpu-2 IDLE.
    EXPECT_FALSE(api_->undrain({"gpu-0"}).ok());
    GTEST_SKIP() << "the scontrol backend does not lift drains";
  }
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

TEST_P(SlurmClient, undrain_leaves_a_down_node_down) {
  if (GetParam() == Backend::kScontrol) {
    // It refuses (scontrol_client.cpp): on 24.11 this sequence through scontrol left gpu-2 IDLE.
    EXPECT_FALSE(api_->undrain({"gpu-0"}).ok());
    GTEST_SKIP() << "the scontrol backend does not lift drains";
  }
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

TEST_P(SlurmClient, load_nodes_maps_admin_drain_maint_and_reserved) {
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

TEST_P(SlurmClient, unknown_node_in_batch_is_named_and_the_rest_is_drained) {
  auto r = api_->drain({"gpu-0", "gpu-1", "nosuch-7"}, "vigil: temp 95>90celsius");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nosuch-7"), std::string::npos) << r.error().to_string();
  EXPECT_TRUE(node("gpu-0").drain);
  EXPECT_TRUE(node("gpu-1").drain);
}

TEST_P(SlurmClient, control_characters_and_bad_names_are_refused_before_any_rpc) {
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

TEST_F(LibslurmClient, controller_down_gives_errors_not_crashes_and_recovers) {
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

TEST_F(LibslurmClient, a_second_slurm_conf_in_one_process_is_an_error) {
  ASSERT_TRUE(api_->load_nodes().ok());
  auto other = slurm::make_libslurm_api("/nonexistent/slurm.conf");
  auto r = other->load_nodes();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("already initialised"), std::string::npos)
      << r.error().to_string();
}

// --- slurmrestd only ---------------------------------------------------------------------------

class RestClient : public SlurmClientBase, public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kRestCanUpdate) GTEST_SKIP() << "slurmrestd of this Slurm release: see RestOn2205";
    ASSERT_TRUE(make(Backend::kRest));
  }
};

// The API versions this slurmrestd serves (24.11: v0.0.40-42; 26.05: v0.0.42-45), from its
// OpenAPI document fetched by the test itself, apart from the client's negotiation.
std::set<std::string> versions_served_by(const SlurmTestCluster& c) {
  std::ifstream in(c.local().jwt_token_file());
  std::string token;
  std::getline(in, token);
  httplib::Client cli(c.local().rest_url());
  auto res = cli.Get("/openapi/v3", {{"X-SLURM-USER-TOKEN", token}, {"X-SLURM-USER-NAME", "root"}});
  if (!res || res->status != 200) return {};
  return slurm::served_api_versions(res->body).value_or(std::set<std::string>{});
}

TEST_F(RestClient, every_api_version_vigil_speaks_and_the_server_serves_drains_and_undrains) {
  const std::set<std::string> served = versions_served_by(*cluster_);
  std::vector<std::string> versions;
  for (const std::string& v : slurm::rest_api_versions())
    if (served.count(v)) versions.push_back(v);
  ASSERT_FALSE(versions.empty()) << "slurmrestd serves none of Vigil's API versions";
  std::string tested;
  for (const std::string& v : versions) tested += (tested.empty() ? "" : ", ") + v;
  RecordProperty("api_versions", tested);
  std::cout << "API versions tested against this slurmrestd: " << tested << "\n";
  for (const std::string& version : versions) {
    slurm::RestSettings s = rest_settings(*cluster_);
    s.api_version = version;
    auto api = slurm::make_rest_api(s);
    ASSERT_TRUE(api.ok()) << api.error().to_string();
    const std::string reason = "vigil: api " + version;
    auto drain = (*api)->drain({"gpu-1", "gpu-2"}, reason);
    ASSERT_TRUE(drain.ok()) << version << ": " << drain.error().to_string();
    auto nodes = (*api)->load_nodes();
    ASSERT_TRUE(nodes.ok()) << version << ": " << nodes.error().to_string();
    const slurm::SlurmNodeInfo* n = find(*nodes, "gpu-2");
    ASSERT_NE(n, nullptr) << version;
    EXPECT_TRUE(n->drain) << version;
    EXPECT_EQ(n->reason, reason) << version;
    EXPECT_EQ(n->state, "IDLE") << version;
    // Every version's spelling of active_features (a string before v0.0.39, an array since).
    if (cluster_->local().production())
      EXPECT_EQ(sorted(n->features), (std::vector<std::string>{"ib", "sim"})) << version;
    auto undrain = (*api)->undrain({"gpu-1", "gpu-2"});
    ASSERT_TRUE(undrain.ok()) << version << ": " << undrain.error().to_string();
    EXPECT_FALSE(node("gpu-1").drain) << version;
    EXPECT_FALSE(node("gpu-2").drain) << version;
  }
}

// The drainer's re-check right before acting: only the named nodes, as fresh as the table.
TEST_P(SlurmClient, load_nodes_named_reads_those_nodes_now_and_omits_unknown_names) {
  ASSERT_TRUE(api_->load_nodes().ok());
  ASSERT_EQ(
      cluster_->run("scontrol update nodename=gpu-1 state=drain reason='admin: fan'; echo $?"),
      "0\n");
  auto one = api_->load_nodes_named({"gpu-1"});
  ASSERT_TRUE(one.ok()) << one.error().to_string();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().name, "gpu-1");
  EXPECT_TRUE(one->front().drain);
  EXPECT_EQ(one->front().reason, "admin: fan");
  EXPECT_EQ(one->front().state, "IDLE");
  EXPECT_NE(std::find(one->front().partitions.begin(), one->front().partitions.end(), "gpu"),
            one->front().partitions.end());
  auto some = api_->load_nodes_named({"gpu-3", "ghost-9", "gpu-1"});
  ASSERT_TRUE(some.ok()) << some.error().to_string();
  ASSERT_EQ(some->size(), 2u);
  EXPECT_NE(find(*some, "gpu-1"), nullptr);
  EXPECT_NE(find(*some, "gpu-3"), nullptr);
  EXPECT_FALSE(find(*some, "gpu-3")->drain);
  EXPECT_FALSE(api_->load_nodes_named({"gpu-1", "bad name"}).ok());
}

// After one whole-table read, one node is read with `GET node/<name>` (slurmctld counts a
// REQUEST_NODE_INFO_SINGLE), not the table again.
TEST_F(RestClient, one_named_node_is_read_alone_not_with_the_whole_table) {
  ASSERT_TRUE(api_->load_nodes().ok());
  const int single = rpcs_seen("REQUEST_NODE_INFO_SINGLE");
  ASSERT_GE(single, 0);
  auto one = api_->load_nodes_named({"gpu-2"});
  ASSERT_TRUE(one.ok()) << one.error().to_string();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(rpcs_seen("REQUEST_NODE_INFO_SINGLE"), single + 1);
}

TEST_F(RestClient, a_version_the_server_does_not_serve_is_refused_naming_what_it_serves) {
  slurm::RestSettings s = rest_settings(*cluster_);
  s.api_version = "v0.0.39";
  auto api = slurm::make_rest_api(s);
  ASSERT_TRUE(api.ok());
  auto nodes = (*api)->load_nodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.error().message.find("does not serve v0.0.39"), std::string::npos)
      << nodes.error().to_string();
  EXPECT_NE(nodes.error().message.find("v0.0.42"), std::string::npos) << nodes.error().to_string();
}

TEST_F(RestClient, a_rejected_token_is_an_error_and_a_rotated_token_file_is_read_again) {
  const std::string file = cluster_->dir() + "/etc/rotating.token";
  cluster_->run("echo not-a-jwt > " + file);
  slurm::RestSettings s = rest_settings(*cluster_);
  s.token_file = file;
  auto api = slurm::make_rest_api(s);
  ASSERT_TRUE(api.ok());
  auto bad = (*api)->load_nodes();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("JWT"), std::string::npos) << bad.error().to_string();
  // The operator (or a Kubernetes Secret update) replaces the file: the next call reads it.
  cluster_->run("sleep 0.01; cp " + cluster_->local().jwt_token_file() + " " + file);
  auto good = (*api)->load_nodes();
  EXPECT_TRUE(good.ok()) << good.error().to_string();
}

TEST_F(RestClient, a_token_from_scontrol_token) {
  slurm::RestSettings s = rest_settings(*cluster_);
  s.token_file.clear();
  s.token_command = {"env",           "SLURM_CONF=" + cluster_->conf(),
                     "scontrol",      "token",
                     "username=root", "lifespan=600"};
  auto api = slurm::make_rest_api(s);
  ASSERT_TRUE(api.ok());
  auto nodes = (*api)->load_nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.error().to_string();
  EXPECT_EQ(nodes->size(), 4u);
}

TEST_F(RestClient, an_unreachable_server_and_a_bad_url_are_named) {
  slurm::RestSettings s = rest_settings(*cluster_);
  s.url = "http://127.0.0.1:1";
  s.timeout_ms = 2000;
  auto api = slurm::make_rest_api(s);
  ASSERT_TRUE(api.ok());
  auto nodes = (*api)->load_nodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.error().message.find("cannot reach slurmrestd"), std::string::npos)
      << nodes.error().to_string();
  s.url = "127.0.0.1:6820";
  auto bad = slurm::make_rest_api(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "slurm.rest.url");
}

// 22.05's slurmrestd serves v0.0.36-v0.0.38, whose node endpoint is read-only: the REST backend
// refuses it up front instead of failing at the first drain.
TEST(RestOn2205, slurmrestd_22_05_is_refused_with_what_to_use_instead) {
  if (kRestCanUpdate) GTEST_SKIP() << "this build's Slurm serves v0.0.40+";
  SlurmTestCluster* cluster = SlurmTestCluster::get(/*rest=*/true);
  ASSERT_NE(cluster, nullptr);
  auto api = slurm::make_rest_api(rest_settings(*cluster));
  ASSERT_TRUE(api.ok());
  auto nodes = (*api)->load_nodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.error().message.find("v0.0.38"), std::string::npos) << nodes.error().to_string();
  EXPECT_NE(nodes.error().message.find("slurm.backend: libslurm"), std::string::npos)
      << nodes.error().to_string();
}

// --- the job queue, both backends ----------------------------------------------------------------

TEST_P(SlurmClient, job_reader_sees_a_held_job_with_its_name_comment_and_nodes) {
  if (GetParam() == Backend::kScontrol)
    GTEST_SKIP() << "the scontrol backend reads nodes only: vigil-check's hooks need no jobs";
  std::string failure;
  auto id = cluster_->local().submit({"--hold", "--nodelist=gpu-3", "--job-name=vigil-check",
                                      "--comment=vigil-run-7", "--wrap=true"},
                                     {}, &failure);
  ASSERT_TRUE(id.has_value()) << failure;
  std::unique_ptr<slurm::SlurmJobReader> reader;
  if (GetParam() == Backend::kLibslurm) {
    reader = slurm::make_libslurm_job_reader(cluster_->conf());
  } else {
    auto rest = slurm::make_rest_job_reader(rest_settings(*cluster_));
    ASSERT_TRUE(rest.ok()) << rest.error().to_string();
    reader = std::move(*rest);
  }
  auto jobs = reader->load_jobs();
  cluster_->run("scancel " + std::to_string(*id));
  ASSERT_TRUE(jobs.ok()) << jobs.error().to_string();
  const slurm::SlurmJobInfo* job = nullptr;
  for (const auto& j : *jobs)
    if (j.job_id == static_cast<uint32_t>(*id)) job = &j;
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->name, "vigil-check");
  EXPECT_EQ(job->comment, "vigil-run-7");
  EXPECT_EQ(job->state, "PENDING");
  EXPECT_TRUE(job->active);
  EXPECT_EQ(job->nodes, std::vector<std::string>{"gpu-3"});
}

}  // namespace
}  // namespace vigil::drainer
