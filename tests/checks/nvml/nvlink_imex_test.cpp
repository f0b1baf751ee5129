// nvlink_imex against a stand-in nvidia-imex-ctl (a shell script printing what the real one
// prints for `-q`: one state word, the words DCGM's DcgmImexManager.cpp parses) and built
// /dev and /proc roots: READY passes, the waiting states warn, a daemon down fails only past the
// boot grace, and every setup problem (not installed, not configured, a failing or unknown
// answer) is an error, never a fail.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "check_factories.h"
#include "temp_dir.h"
#include "vigil/checks/check.h"
#include "vigil/checks/sku.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct Node {
  TempDir dir;
  SkuConfig sku;
  CheckContext ctx;
  Node() {
    sku.name = "GB200-NVL72-TRAY";
    sku.nvlink.imex = true;
    sku.nvlink.imex_resident = true;  // the site's service runs always (tests below say otherwise)
    ctx.sku = &sku;
    ctx.imex.dev_root = dir / "dev";
    ctx.proc_root = dir / "proc";
    ctx.imex.ctl = dir / "nvidia-imex-ctl";
    ctx.fabric_wait.grace = std::chrono::seconds(600);
    uptime(3600);
  }
  // The stand-in prints `text` and exits with `rc`.
  void imex_says(const std::string& text, int rc = 0) {
    std::ofstream(ctx.imex.ctl) << "#!/bin/sh\n[ \"$1\" = -q ] || exit 9\nprintf '%s\\n' '" << text
                                << "'\nexit " << rc << "\n";
    ::chmod(ctx.imex.ctl.c_str(), 0755);
  }
  void uptime(double s) {
    fs::create_directories(ctx.proc_root);
    std::ofstream(ctx.proc_root + "/uptime") << s << " 1.00\n";
  }
  void channel(int n) {
    fs::create_directories(ctx.imex.dev_root + "/nvidia-caps-imex-channels");
    std::ofstream(ctx.imex.dev_root + "/nvidia-caps-imex-channels/channel" + std::to_string(n));
  }
  CheckResult run() { return make_nvlink_imex_check()->run(ctx); }
};

const Measurement* find(const CheckResult& r, const std::string& name) {
  for (const auto& m : r.measurements)
    if (m.name == name) return &m;
  return nullptr;
}

TEST(nvlink_imex, applies_only_to_a_sku_with_a_multi_node_nvlink_domain) {
  Node n;
  EXPECT_TRUE(make_nvlink_imex_check()->applies(n.ctx).yes);
  n.sku.nvlink.imex = false;  // HGX: single-node NVLink, no IMEX
  EXPECT_FALSE(make_nvlink_imex_check()->applies(n.ctx).yes);
  n.ctx.sku = nullptr;
  EXPECT_FALSE(make_nvlink_imex_check()->applies(n.ctx).yes);
}

TEST(nvlink_imex, a_ready_daemon_passes_with_its_state_and_channels_as_figures) {
  Node n;
  n.imex_says("READY");
  n.channel(0);
  const CheckResult r = n.run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "IMEX daemon READY, 1 IMEX channel(s)");
  ASSERT_NE(find(r, "imex_daemon_state"), nullptr);
  EXPECT_EQ(find(r, "imex_daemon_state")->value, 5);  // DCGM's READY
  EXPECT_EQ(find(r, "imex_channels")->value, 1);
}

// Channels may be made per job (NVIDIA's DRA driver): none is a figure, unless the site's SKU
// file bounds it.
TEST(nvlink_imex, no_channel_is_a_figure_unless_the_sku_bounds_it) {
  Node n;
  n.imex_says("READY");
  EXPECT_EQ(n.run().status, Status::kPass);
  Threshold at_least_one;
  at_least_one.op = Op::kGe;
  at_least_one.fail = 1;
  at_least_one.unit = "count";
  n.sku.thresholds["nvlink_imex"]["imex_channels"] = at_least_one;
  const CheckResult r = n.run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
}

TEST(nvlink_imex, waiting_states_warn_whatever_the_uptime) {
  for (const char* state : {"INITIALIZING", "STARTING_AUTH_SERVER", "WAITING_FOR_PEERS",
                            "WAITING_FOR_RECOVERY", "INIT_GPU"}) {
    Node n;
    n.imex_says(state);
    const CheckResult r = n.run();
    EXPECT_EQ(r.status, Status::kWarn) << state << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-IMEX-PENDING") << state;
  }
}

TEST(nvlink_imex, a_daemon_down_fails_only_past_the_boot_grace) {
  for (const char* state : {"UNAVAILABLE", "SHUTTING_DOWN"}) {
    Node n;
    n.imex_says(state);
    CheckResult r = n.run();
    EXPECT_EQ(r.status, Status::kFail) << state << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-IMEX-DOWN");
    EXPECT_EQ(r.message,
              std::string("IMEX daemon ") + state + ": multi-node NVLink jobs fail on this node");
    n.uptime(120);  // two minutes after boot: still starting
    r = n.run();
    EXPECT_EQ(r.status, Status::kWarn) << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-IMEX-PENDING");
  }
}

// Where IMEX runs per job (a Slurm prolog, NVIDIA's DRA driver), no daemon between jobs is
// normal: it warns, and never fails, whatever the uptime.
TEST(nvlink_imex, without_a_resident_service_a_daemon_not_running_only_warns) {
  Node n;
  n.sku.nvlink.imex_resident = false;
  n.imex_says("UNAVAILABLE");
  const CheckResult r = n.run();
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-IMEX-PENDING");
  EXPECT_NE(r.message.find("unless the job starts its own IMEX daemon"), std::string::npos);
}

TEST(nvlink_imex, setup_problems_are_errors_never_fails) {
  Node n;  // no nvidia-imex-ctl at the configured path
  n.ctx.imex.ctl = n.dir / "missing/nvidia-imex-ctl";
  EXPECT_EQ(n.run().status, Status::kError);
  Node not_configured;
  not_configured.imex_says(
      "Failed to read node configuration file /etc/nvidia-imex/nodes_config.cfg", 1);
  CheckResult r = not_configured.run();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("IMEX is not configured"), std::string::npos) << r.message;
  Node failing;
  failing.imex_says("connection refused", 2);
  EXPECT_EQ(failing.run().status, Status::kError);
  Node unknown;
  unknown.imex_says("SOMETHING_NEW");
  r = unknown.run();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("unknown to Vigil"), std::string::npos) << r.message;
  for (Node* node : {&n, &not_configured, &failing, &unknown})
    EXPECT_EQ(node->run().fault_code, "VIGIL-IMEX-SETUP");
}

}  // namespace
}  // namespace vigil
