// The all_reduce checks against a site's all_reduce_perf (stand-in printing genuine nccl-tests
// logs), their applies() rules, and the command lines they build.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "allreduce/allreduce_launch.h"
#include "check_factories.h"
#include "scoped_env.h"
#include "temp_dir.h"
#include "vigil/checks/check.h"
#include "vigil/checks/gpu_probe.h"
#include "vigil/checks/registry.h"

using namespace std::chrono_literals;

namespace {

using vigil::testing::ScopedEnv;

const std::string kDir = VIGIL_ALLREDUCE_TEST_DIR;
const std::string kLogs = std::string(VIGIL_NCCL_TESTS_LOGS) + "/";

vigil::SkuConfig sku_with_busbw(const std::string& check, double fail) {
  vigil::SkuConfig sku;
  sku.name = "TEST-SKU";
  sku.infiniband.ports = 8;
  vigil::Threshold t;
  t.op = vigil::Op::kGe;
  t.fail = fail;
  t.unit = "GB/s";
  sku.thresholds[check]["busbw"] = t;
  return sku;
}

std::string nvml_fixture(const std::string& name) {
  return std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nvml/" + name + ".json";
}

// Every test sees an idle 8-GPU node through the fake NVML unless it selects another fixture.
class IdleGpusThroughFakeNvml : public ::testing::Environment {
 public:
  void SetUp() override {
    env_.emplace("VIGIL_FAKE_NVML_FIXTURE", nvml_fixture("healthy_8x_h100"));
  }
  void TearDown() override { env_.reset(); }

 private:
  std::optional<ScopedEnv> env_;
};
[[maybe_unused]] const auto* const kIdleGpus =
    ::testing::AddGlobalTestEnvironment(new IdleGpusThroughFakeNvml);

vigil::CheckContext site_ctx() {
  vigil::CheckContext ctx;
  ctx.node = "gpu-0";
  ctx.nvml_library = VIGIL_FAKE_NVML_LIBRARY;
  ctx.proc_root = "/nonexistent/proc";  // process names come from the fixture
  ctx.allreduce.mpirun = kDir + "/fake_mpirun.sh";
  ctx.allreduce.binary = kDir + "/fake_all_reduce_perf.sh";
  ctx.has_gpu_runtime = true;
  ctx.gpu_count = 2;
  return ctx;
}

const vigil::Measurement* busbw_of(const vigil::CheckResult& r) {
  for (const auto& m : r.measurements)
    if (m.name == "busbw") return &m;
  return nullptr;
}

}  // namespace

TEST(AllreduceChecks, site_all_reduce_perf_below_sku_threshold_fails_with_figures) {
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt");
  auto sku = sku_with_busbw("nccl_allreduce_nvlink", 20);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  auto check = vigil::make_nccl_allreduce_nvlink_check();
  auto r = check->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-BUSBW");
  const auto* m = busbw_of(r);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->value, 14.9966);  // the log's "# Avg bus bandwidth" footer
  EXPECT_EQ(m->unit, "GB/s");
  ASSERT_TRUE(m->threshold);
  EXPECT_DOUBLE_EQ(m->threshold->fail, 20);
}

// Review F06: a figure measured under a NCCL configuration file's algorithm or protocol is not the
// mode the SKU floor describes: reported, never failed. Inherited job settings were removed by
// vigil-allreduce and are named.
TEST(AllreduceChecks, a_site_nccl_conf_setting_turns_a_below_floor_figure_into_a_warning) {
  auto sku = sku_with_busbw("nccl_allreduce_nvlink", 420);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  ctx.allreduce.binary = kDir + "/vigil-allreduce-fake.sh";
  ScopedEnv busbw("FAKE_BUSBW", "380");
  {
    auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;  // no site setting: the floor holds
  }
  ScopedEnv conf("FAKE_CONF_TUNING", "NCCL_ALGO=Ring (/etc/nccl.conf)");
  ScopedEnv removed("FAKE_ENV_REMOVED", "NCCL_NVLS_ENABLE=0");
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-SITE-TUNING");
  EXPECT_NE(r.message.find("NCCL_ALGO=Ring (/etc/nccl.conf)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("ignored the job's NCCL_NVLS_ENABLE=0"), std::string::npos) << r.message;
}

// Issue 22 item 4: the report says which algorithm NCCL chose; when it is not the one the floor
// was measured with (Threshold::nccl_algorithm), a below-floor figure keeps its verdict (the
// fallback from NVLS is a node problem too) and says why in its fault code and reason.
TEST(AllreduceChecks, the_algorithm_nccl_chose_is_reported_and_judged_against_the_floors_mode) {
  auto sku = sku_with_busbw("nccl_allreduce_nvlink", 420);
  sku.thresholds["nccl_allreduce_nvlink"]["busbw"].nccl_algorithm = "NVLS";
  auto ctx = site_ctx();
  ctx.sku = &sku;
  ctx.allreduce.binary = kDir + "/vigil-allreduce-fake.sh";
  ScopedEnv busbw("FAKE_BUSBW", "380");
  {
    ScopedEnv algo("FAKE_ALGO", "NVLS/Simple");  // the floor's own mode: the floor holds
    auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
    EXPECT_NE(r.message.find("NCCL chose NVLS/Simple at 1 GiB"), std::string::npos) << r.message;
  }
  ScopedEnv algo("FAKE_ALGO", "Ring/LL128");
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-ALGORITHM");
  EXPECT_NE(r.message.find("NCCL chose Ring/LL128 at 1 GiB, not NVLS as the SKU floor assumes"),
            std::string::npos)
      << r.message;
  sku.thresholds["nccl_allreduce_nvlink"]["busbw"].nccl_algorithm.clear();  // no stated mode
  r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
  EXPECT_NE(r.fault_code, "VIGIL-NCCL-ALGORITHM");
  ScopedEnv fast("FAKE_BUSBW", "480");  // above the floor: a pass says what NCCL chose, no more
  sku.thresholds["nccl_allreduce_nvlink"]["busbw"].nccl_algorithm = "NVLS";
  r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
  EXPECT_TRUE(r.fault_code.empty()) << r.fault_code;
}

// Review F19: a slow IB loopback on a node without nvidia_peermem names that cause and its fix.
TEST(AllreduceChecks, a_slow_ib_loopback_without_peermem_names_the_missing_gpudirect_module) {
  char tmpl[] = "/tmp/vigil-peermem-XXXXXX";
  const std::string root = ::mkdtemp(tmpl);
  std::filesystem::create_directories(root + "/sys/class/infiniband/mlx5_0");
  auto sku = sku_with_busbw("nccl_allreduce_ib", 36);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  ctx.sysfs_root = root;
  ctx.allreduce.binary = kDir + "/vigil-allreduce-fake.sh";
  ScopedEnv busbw("FAKE_BUSBW", "12");
  auto r = vigil::make_nccl_allreduce_ib_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-IB-NO-PEERMEM");
  EXPECT_NE(r.message.find("modprobe nvidia_peermem"), std::string::npos) << r.message;
  std::filesystem::create_directories(root + "/sys/module/nvidia_peermem");
  r = vigil::make_nccl_allreduce_ib_check()->run(ctx);
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-BUSBW") << r.message;  // GPUDirect present: the fabric
  std::filesystem::remove_all(root);
}

// Issue 27 item 4: what NCCL connected over (its own log, nb::parse_transport_log) decides whether
// the figure is the fabric's. Socket fallback or no network connection on the IB test, and an
// NVLink test without P2P: not judged (error, never a drain), with the cause in the reason.
std::string transport(const std::string& network, const std::string& paths, int net, int gdr) {
  return R"({"network": ")" + network + R"(", "paths": [)" + paths + R"(], "net_connections": )" +
         std::to_string(net) + R"(, "gdr_connections": )" + std::to_string(gdr) +
         R"(, "nvls": false})";
}

TEST(AllreduceChecks, the_transport_nccl_used_decides_whether_the_figure_is_judged) {
  char tmpl[] = "/tmp/vigil-transport-XXXXXX";
  const std::string root = ::mkdtemp(tmpl);
  std::filesystem::create_directories(root + "/sys/class/infiniband/mlx5_0");
  auto sku = sku_with_busbw("nccl_allreduce_ib", 36);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  ctx.sysfs_root = root;  // no nvidia_peermem: only NCCL's log may blame GPUDirect here
  ctx.allreduce.binary = kDir + "/vigil-allreduce-fake.sh";
  ScopedEnv busbw("FAKE_BUSBW", "3");
  {
    ScopedEnv t("FAKE_TRANSPORT", transport("Socket", R"("NET/Socket")", 8, 0));
    auto r = vigil::make_nccl_allreduce_ib_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-NCCL-SOCKET-FALLBACK");
    EXPECT_EQ(r.message.rfind("NCCL fell back to TCP sockets instead of InfiniBand", 0), 0u)
        << r.message;
  }
  {
    ScopedEnv t("FAKE_TRANSPORT", transport("IB", R"("P2P/CUMEM")", 0, 0));
    auto r = vigil::make_nccl_allreduce_ib_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-NCCL-NO-NET");
  }
  {
    ScopedEnv t("FAKE_TRANSPORT", transport("IB", R"("NET/IB")", 8, 2));
    auto r = vigil::make_nccl_allreduce_ib_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;  // the node's jobs are this slow too
    EXPECT_EQ(r.fault_code, "VIGIL-NCCL-IB-NO-GDR");
    EXPECT_NE(r.message.find("GDRDMA on 2 of 8 network connections"), std::string::npos)
        << r.message;
    // ... and the same counts as figures, for the fabric dashboard's GPUDirect panel.
    auto figure = [&](const std::string& name) {
      for (const auto& m : r.measurements)
        if (m.name == name) return m.value;
      return -1.0;
    };
    EXPECT_EQ(figure("net_connections"), 8);
    EXPECT_EQ(figure("gdr_connections"), 2);
    EXPECT_EQ(figure("nvls"), 0);
  }
  {
    ScopedEnv t("FAKE_TRANSPORT", transport("IB", R"("NET/IB")", 8, 8));
    auto r = vigil::make_nccl_allreduce_ib_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-NCCL-BUSBW");  // GDR proven (dma-buf): the fabric, no peermem
  }
  std::filesystem::remove_all(root);
  auto nvl = sku_with_busbw("nccl_allreduce_nvlink", 420);
  ctx.sku = &nvl;
  ScopedEnv fast("FAKE_BUSBW", "480");
  {
    ScopedEnv t("FAKE_TRANSPORT", transport("IB", R"("SHM")", 0, 0));
    auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-NCCL-NO-P2P");
  }
  {
    // NVLS(Tree) connects only what it uses (NCCL_RUNTIME_CONNECT): no P2P line is no fault.
    std::string nvls = transport("IB", R"("NET/IB")", 2, 2);
    nvls.replace(nvls.find(R"("nvls": false)"), 13, R"("nvls": true)");
    ScopedEnv t("FAKE_TRANSPORT", nvls);
    auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
    EXPECT_NE(r.message.find(", NVLS"), std::string::npos) << r.message;
  }
  ScopedEnv t("FAKE_TRANSPORT", transport("IB", R"("P2P/CUMEM")", 0, 0));
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
  EXPECT_NE(r.message.find("NCCL connected via P2P/CUMEM"), std::string::npos) << r.message;
}

// A job across nodes (a fabric pair: ranks mapped by node) is judged by the network rules
// whatever its intra-node transport, never by the single-node NVLink rule (GH200 nodes with one
// GPU connect everything over the network).
TEST(AllreduceChecks, a_job_across_nodes_is_judged_by_the_network_rules) {
  auto ctx = site_ctx();
  ctx.allreduce.binary = kDir + "/vigil-allreduce-fake.sh";
  vigil::AllreduceSpec spec;
  spec.check = "fabric_allreduce_ib";
  spec.fault_prefix = "VIGIL-FABRIC";
  spec.backend = "nccl";
  spec.transport = "nvlink";
  spec.ranks = 2;
  spec.map_by_node = true;
  spec.min_bytes = spec.max_bytes = "1G";
  ScopedEnv busbw("FAKE_BUSBW", "40");
  {
    ScopedEnv t("FAKE_TRANSPORT", transport("IB", R"("NET/IB")", 4, 4));
    auto r = vigil::run_allreduce_check(ctx, spec);
    EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;  // no NO-P2P for one GPU a node
  }
  ScopedEnv t("FAKE_TRANSPORT", transport("Socket", R"("NET/Socket")", 4, 0));
  auto r = vigil::run_allreduce_check(ctx, spec);
  EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-FABRIC-SOCKET-FALLBACK");
}

TEST(AllreduceChecks, site_all_reduce_perf_above_threshold_passes) {
  ScopedEnv mode("FAKE_PERF_MODE", "log:" + kLogs + "01-dgx2-v100x12-old-format-allreduce.txt");
  auto sku = sku_with_busbw("nccl_allreduce_nvlink", 40);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
  ASSERT_NE(busbw_of(r), nullptr);
  EXPECT_DOUBLE_EQ(busbw_of(r)->value, 42.5578);
}

TEST(AllreduceChecks, site_log_with_failed_data_check_fails_as_wrong_results) {
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "02-dgx2-v100x12-old-format-allgather-FAILED.txt");
  auto ctx = site_ctx();  // no SKU: wrong results need no threshold to fail
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-WRONG-RESULTS");
  EXPECT_NE(r.message.find("4 wrong values"), std::string::npos) << r.message;
}

TEST(AllreduceChecks, unknown_sku_reports_busbw_without_failing) {
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt");
  auto ctx = site_ctx();
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
  ASSERT_NE(busbw_of(r), nullptr);
  EXPECT_FALSE(busbw_of(r)->threshold);
}

TEST(AllreduceChecks, hung_site_binary_is_a_fail_with_timeout_within_the_deadline) {
  ScopedEnv mode("FAKE_PERF_MODE", "hang");
  auto ctx = site_ctx();
  vigil::AllreduceTuning tuning;
  tuning.timeout = 2s;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = vigil::make_nccl_allreduce_nvlink_check(tuning)->run(ctx);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, vigil::Status::kFail);
  EXPECT_EQ(r.message.rfind("timeout after 2 s", 0), 0u) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-TIMEOUT");
  EXPECT_LT(wall, 2.0 + 4.0);
}

TEST(AllreduceChecks, crash_without_a_table_is_an_error_not_a_fail) {
  ScopedEnv mode("FAKE_PERF_MODE", "crash");
  auto r = vigil::make_nccl_allreduce_ib_check()->run(site_ctx());
  EXPECT_EQ(r.status, vigil::Status::kError);
  EXPECT_NE(r.message.find("exited with code 1"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("unhandled system error"), std::string::npos) << r.message;
}

TEST(AllreduceChecks, missing_binary_is_an_error_with_a_hint) {
  auto ctx = site_ctx();
  ctx.allreduce.binary = "/nonexistent/vigil-allreduce";
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kError);
  EXPECT_NE(r.message.find("--allreduce-binary"), std::string::npos) << r.message;
}

// Runs `check` against the stand-in all_reduce_perf (a genuine healthy 2-node log) and returns
// what the stand-in saw: its arguments and the NCCL_* environment mpirun gave it.
static std::string site_binary_sees(vigil::Check& check, const vigil::CheckContext& ctx) {
  char tmpl[] = "/tmp/vigil-allreduce-args-XXXXXX";
  int fd = mkstemp(tmpl);
  EXPECT_GE(fd, 0);
  close(fd);
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt");
  ScopedEnv args("FAKE_PERF_ARGS_FILE", tmpl);
  auto r = check.run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
  std::ifstream f(tmpl);
  std::stringstream ss;
  ss << f.rdbuf();
  std::remove(tmpl);
  return ss.str();
}

TEST(AllreduceChecks, ib_mode_exports_nccl_settings_to_a_site_binary) {
  const std::string seen = site_binary_sees(*vigil::make_nccl_allreduce_ib_check(), site_ctx());
  EXPECT_NE(seen.find("-g 1"), std::string::npos) << seen;
  EXPECT_NE(seen.find("NCCL_P2P_DISABLE=1"), std::string::npos) << seen;
  EXPECT_NE(seen.find("NCCL_SHM_DISABLE=1"), std::string::npos) << seen;
  EXPECT_NE(seen.find("NCCL_ALGO=Ring"), std::string::npos) << seen;
}

TEST(AllreduceChecks, command_for_vigil_allreduce_uses_json_timeout_and_one_rank_per_gpu) {
  vigil::CheckContext ctx;
  vigil::AllreduceSpec spec;
  spec.check = "nccl_allreduce_ib";
  spec.backend = "nccl";
  spec.transport = "ib";
  spec.ranks = 8;
  spec.min_bytes = "1G";
  spec.max_bytes = "4G";
  spec.timeout = 120s;
  auto argv = vigil::allreduce_command(ctx, spec, "/opt/vigil/bin/vigil-allreduce", "/tmp/x.json");
  std::string joined;
  for (const auto& a : argv) joined += a + " ";
  EXPECT_EQ(joined,
            "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 8 "
            "/opt/vigil/bin/vigil-allreduce -b 1G "
            "-e 4G -f 2 -w 5 -n 20 -c 1 --backend nccl --transport ib --json /tmp/x.json "
            "--timeout 120 ");
  EXPECT_FALSE(vigil::is_nccl_tests_binary("/opt/vigil/bin/vigil-allreduce"));
  EXPECT_TRUE(vigil::is_nccl_tests_binary("/opt/nccl-tests/build/all_reduce_perf"));
  // A fabric job spreads its ranks over the pair's nodes.
  spec.ranks = 16;
  spec.map_by_node = true;
  joined.clear();
  for (const auto& a : vigil::allreduce_command(ctx, spec, "vigil-allreduce", "/tmp/x.json"))
    joined += a + " ";
  EXPECT_EQ(joined.rfind("mpirun --allow-run-as-root --oversubscribe --bind-to none -np 16 "
                         "--map-by node "
                         "vigil-allreduce -b 1G ",
                         0),
            0u)
      << joined;
}

TEST(AllreduceChecks, nccl_checks_need_a_gpu_runtime_and_host_check_needs_none) {
  vigil::CheckContext ctx;
  ctx.gpu_count = 8;
  ctx.has_gpu_runtime = false;
  EXPECT_FALSE(vigil::make_nccl_allreduce_nvlink_check()->applies(ctx).yes);
  EXPECT_FALSE(vigil::make_nccl_allreduce_ib_check()->applies(ctx).yes);
  EXPECT_TRUE(vigil::make_host_allreduce_check()->applies(ctx).yes);
  ctx.has_gpu_runtime = true;
  EXPECT_FALSE(vigil::make_host_allreduce_check()->applies(ctx).yes);
  EXPECT_EQ(vigil::make_nccl_allreduce_nvlink_check()->applies(ctx).yes, vigil::cuda_built_in());
  // IB loopback also needs InfiniBand devices under the sysfs root.
  ctx.sysfs_root = "/nonexistent";
  EXPECT_FALSE(vigil::make_nccl_allreduce_ib_check()->applies(ctx).yes);
  ctx.gpu_count = 1;
  EXPECT_FALSE(vigil::make_nccl_allreduce_nvlink_check()->applies(ctx).yes);
}

TEST(AllreduceChecks, fabric_check_runs_only_for_a_pair_and_needs_a_gpu_runtime_for_nccl) {
  auto fabric = vigil::fabric_checks();
  auto& check = fabric.front();
  EXPECT_EQ(check->name(), "fabric_allreduce_ib");
  vigil::CheckContext ctx;
  ctx.has_gpu_runtime = true;
  ctx.allreduce.ranks = 16;
  EXPECT_FALSE(check->applies(ctx).yes);  // not a fabric job: `vigil-check run` never runs it
  ctx.allreduce.nodes = {"gpu-0", "gpu-1"};
  EXPECT_EQ(check->applies(ctx).yes, vigil::cuda_built_in());
  ctx.has_gpu_runtime = false;
  EXPECT_FALSE(check->applies(ctx).yes);
  ctx.allreduce.backend = "host";
  EXPECT_TRUE(check->applies(ctx).yes);
  ctx.allreduce.ranks = 1;
  EXPECT_FALSE(check->applies(ctx).yes);
}

// Review F01: the fabric check must not disable P2P and SHM. With them off NCCL routes every
// intra-node hop through the GPU's own NIC (NCCL src/graph/paths.cc marks the pair PATH_NET),
// so busbw is one NIC, far below a floor measured with NVLink inside each node: every healthy
// pair would fail. And it must not let two trays of one NVL72 rack meet over multi-node NVLink
// (NCCL's MNNVL default is "auto" across nodes): then no byte crosses the fabric it judges.
TEST(AllreduceChecks, fabric_check_keeps_p2p_and_shm_on_and_multi_node_nvlink_off) {
  auto ctx = site_ctx();
  ctx.allreduce.nodes = {"gpu-0", "gpu-1"};
  ctx.allreduce.ranks = 2;
  const std::string seen = site_binary_sees(*vigil::fabric_checks().front(), ctx);
  EXPECT_EQ(seen.find("NCCL_P2P_DISABLE=1"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("NCCL_SHM_DISABLE=1"), std::string::npos) << seen;
  EXPECT_NE(seen.find("NCCL_MNNVL_ENABLE=0"), std::string::npos) << seen;
  EXPECT_STREQ(vigil::kFabricTransport, "fabric");
}

TEST(AllreduceChecks, fabric_check_judges_a_genuine_2_node_log_against_the_fabric_threshold) {
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt");
  auto sku = sku_with_busbw("fabric_allreduce_ib", 20);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  ctx.allreduce.nodes = {"gpu-0", "gpu-1"};
  ctx.allreduce.ranks = 2;
  auto r = vigil::fabric_checks().front()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-FABRIC-BUSBW");
  const auto* m = busbw_of(r);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->value, 14.9966);
  sku = sku_with_busbw("fabric_allreduce_ib", 10);
  EXPECT_EQ(vigil::fabric_checks().front()->run(ctx).status, vigil::Status::kPass);
}

TEST(AllreduceChecks, binary_defaults_to_the_one_next_to_the_running_program) {
  vigil::CheckContext ctx;
  ctx.allreduce.binary = "/site/all_reduce_perf";
  EXPECT_EQ(vigil::find_allreduce_binary(ctx), "/site/all_reduce_perf");
  ctx.allreduce.binary.clear();
  const std::string found = vigil::find_allreduce_binary(ctx);
  EXPECT_NE(found.find("vigil-allreduce"), std::string::npos) << found;
}

// ---- GPUs busy with other work (nvml/gpu_busy.h) -----------------------------------------------

namespace {

// A temp file that the stand-in all_reduce_perf writes its arguments to when it is launched.
class LaunchRecorder {
 public:
  LaunchRecorder() {
    char tmpl[] = "/tmp/vigil-allreduce-launch-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    path_ = tmpl;
    env_.emplace("FAKE_PERF_ARGS_FILE", path_);
  }
  ~LaunchRecorder() { std::remove(path_.c_str()); }
  bool launched() const {
    std::ifstream f(path_);
    return f.peek() != std::ifstream::traits_type::eof();
  }

 private:
  std::string path_;
  std::optional<ScopedEnv> env_;
};

}  // namespace

TEST(AllreduceChecks, foreign_process_on_gpu2_is_error_gpu_busy_and_the_benchmark_never_starts) {
  // The same run as site_all_reduce_perf_below_sku_threshold_fails_with_figures, but someone
  // else's job holds gpu2: the slow figure it would cause must never be a fail.
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt");
  ScopedEnv nvml("VIGIL_FAKE_NVML_FIXTURE", nvml_fixture("busy_gpu2"));
  LaunchRecorder recorder;
  auto sku = sku_with_busbw("nccl_allreduce_nvlink", 20);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  for (auto make : {+[] { return vigil::make_nccl_allreduce_nvlink_check(); },
                    +[] { return vigil::make_nccl_allreduce_ib_check(); }}) {
    auto check = make();
    auto r = check->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kError) << check->name() << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-GPU-BUSY") << check->name();
    EXPECT_EQ(r.message.rfind("GPU busy: gpu2 pid 4194305 python 40 GiB", 0), 0u) << r.message;
    EXPECT_EQ(busbw_of(r), nullptr) << check->name();
  }
  EXPECT_FALSE(recorder.launched());
}

TEST(AllreduceChecks, load_with_no_process_visible_is_also_busy) {
  // A job in another container: NVML lists no process we can see, but the GPU is at 88%.
  nlohmann::json j;
  std::ifstream(nvml_fixture("healthy_8x_h100")) >> j;
  j["gpus"][5]["utilization"] = {{"gpu", 88}, {"memory", 30}};
  char tmpl[] = "/tmp/vigil-busy-fixture-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(tmpl) << j.dump();
  ScopedEnv nvml("VIGIL_FAKE_NVML_FIXTURE", std::string(tmpl));
  ScopedEnv mode("FAKE_PERF_MODE", "log:" + kLogs + "01-dgx2-v100x12-old-format-allreduce.txt");
  LaunchRecorder recorder;
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(site_ctx());
  std::remove(tmpl);
  EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-GPU-BUSY");
  EXPECT_NE(r.message.find("gpu5 88% utilization with no compute process visible"),
            std::string::npos)
      << r.message;
  EXPECT_FALSE(recorder.launched());
}

TEST(AllreduceChecks, idle_gpus_run_the_benchmark_as_before) {
  ScopedEnv mode("FAKE_PERF_MODE", "log:" + kLogs + "01-dgx2-v100x12-old-format-allreduce.txt");
  LaunchRecorder recorder;
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(site_ctx());
  EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
  EXPECT_EQ(r.message.find("busy"), std::string::npos) << r.message;
  EXPECT_TRUE(recorder.launched());
}

TEST(AllreduceChecks, without_nvml_the_benchmark_runs_and_the_message_says_busy_was_not_checked) {
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt");
  auto sku = sku_with_busbw("nccl_allreduce_nvlink", 20);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  ctx.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(r.status, vigil::Status::kFail) << r.message;  // as before this change
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-BUSBW");
  EXPECT_NE(r.message.find("cannot tell whether the GPUs are busy: NVML not available"),
            std::string::npos)
      << r.message;
}

TEST(AllreduceChecks, host_allreduce_uses_no_gpu_and_ignores_busy_gpus) {
  ScopedEnv mode("FAKE_PERF_MODE", "log:" + kLogs + "01-dgx2-v100x12-old-format-allreduce.txt");
  ScopedEnv nvml("VIGIL_FAKE_NVML_FIXTURE", nvml_fixture("busy_gpu2"));
  LaunchRecorder recorder;
  auto ctx = site_ctx();
  ctx.has_gpu_runtime = false;
  auto r = vigil::make_host_allreduce_check()->run(ctx);
  EXPECT_NE(r.fault_code, "VIGIL-GPU-BUSY") << r.message;
  EXPECT_TRUE(recorder.launched());
}

TEST(AllreduceChecks, fabric_check_on_nccl_refuses_busy_local_gpus_and_on_host_does_not) {
  ScopedEnv mode("FAKE_PERF_MODE",
                 "log:" + kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt");
  ScopedEnv nvml("VIGIL_FAKE_NVML_FIXTURE", nvml_fixture("busy_gpu2"));
  auto sku = sku_with_busbw("fabric_allreduce_ib", 20);
  auto ctx = site_ctx();
  ctx.sku = &sku;
  ctx.allreduce.nodes = {"gpu-0", "gpu-1"};
  ctx.allreduce.ranks = 2;
  {
    LaunchRecorder recorder;
    auto r = vigil::fabric_checks().front()->run(ctx);
    EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-GPU-BUSY");
    EXPECT_FALSE(recorder.launched());
  }
  ctx.allreduce.backend = "host";
  LaunchRecorder recorder;
  auto r = vigil::fabric_checks().front()->run(ctx);
  EXPECT_EQ(r.fault_code, "VIGIL-FABRIC-BUSBW") << r.message;
  EXPECT_TRUE(recorder.launched());
}

// ---- confirmation inside the job (docs/detection.md): repeats of a suspicious busbw ----------

namespace {

const std::string kFast = kLogs + "01-dgx2-v100x12-old-format-allreduce.txt";  // 42.56
const std::string kSlow =
    kLogs + "10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt";  // 15.00

struct StateDir {
  vigil::testing::TempDir dir;
  std::string file() const { return dir.path() + "/nccl_allreduce_nvlink.gpu-0.json"; }
  void write_recent(const std::vector<double>& figures) const {
    nlohmann::json j = {{"schema_version", 1},
                        {"check", "nccl_allreduce_nvlink"},
                        {"counters", nlohmann::json::object()},
                        {"figures", {{"busbw", figures}}}};
    std::ofstream(file()) << j.dump();
  }
  std::vector<double> recent() const {
    std::ifstream in(file());
    if (!in) return {};
    return nlohmann::json::parse(in)["figures"]["busbw"].get<std::vector<double>>();
  }
  int calls() const {
    std::ifstream in(dir.path() + "/calls");
    int n = 0;
    in >> n;
    return n;
  }
};

vigil::CheckResult run_sequence(const StateDir& s, const std::string& logs,
                                const vigil::SkuConfig* sku = nullptr) {
  ScopedEnv mode("FAKE_PERF_MODE", "logs:" + logs);
  ScopedEnv calls("FAKE_PERF_CALLS", s.dir.path() + "/calls");
  auto ctx = site_ctx();
  ctx.sku = sku;
  ctx.state_dir = s.dir.path();
  return vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
}

}  // namespace

TEST(AllreduceRepeats, a_figure_far_below_the_nodes_own_recent_runs_is_run_three_times_more) {
  StateDir s;
  s.write_recent({42.0, 42.5, 42.7});
  auto r = run_sequence(s, kSlow);
  const auto* m = busbw_of(r);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(s.calls(), 4);
  EXPECT_EQ(m->repeats, (std::vector<double>{14.9966, 14.9966, 14.9966}));
  EXPECT_NE(r.message.find("repeated: 15.00, 15.00, 15.00 GB/s"), std::string::npos) << r.message;
  EXPECT_EQ(s.recent(), (std::vector<double>{42.0, 42.5, 42.7}))
      << "a figure 65% below the node's own runs must not become its expectation";
}

TEST(AllreduceRepeats, a_transient_dip_is_repeated_and_the_repeats_are_healthy) {
  StateDir s;
  s.write_recent({42.0, 42.5, 42.7});
  auto r = run_sequence(s, kSlow + "," + kFast);
  ASSERT_NE(busbw_of(r), nullptr);
  EXPECT_DOUBLE_EQ(busbw_of(r)->value, 14.9966);
  EXPECT_EQ(busbw_of(r)->repeats, (std::vector<double>{42.5578, 42.5578, 42.5578}));
  // The judged figure (median of the four) is healthy: it joins the node's recent figures.
  EXPECT_EQ(s.recent(), (std::vector<double>{42.0, 42.5, 42.7, 42.5578}));
}

TEST(AllreduceRepeats, a_figure_like_the_recent_runs_is_not_repeated_and_is_remembered) {
  StateDir s;
  s.write_recent({42.0, 42.5, 42.7});
  auto r = run_sequence(s, kFast);
  EXPECT_EQ(s.calls(), 1);
  EXPECT_TRUE(busbw_of(r)->repeats.empty());
  EXPECT_EQ(s.recent(), (std::vector<double>{42.0, 42.5, 42.7, 42.5578}));
}

TEST(AllreduceRepeats, without_three_recent_runs_only_a_figure_past_its_sku_bound_is_repeated) {
  StateDir s;
  s.write_recent({42.0, 42.5});
  auto unknown_sku = run_sequence(s, kSlow);
  EXPECT_EQ(s.calls(), 1) << "no expectation yet: nothing to be suspicious of";
  EXPECT_TRUE(busbw_of(unknown_sku)->repeats.empty());

  StateDir bound;
  auto sku = sku_with_busbw("nccl_allreduce_nvlink", 20);
  auto r = run_sequence(bound, kSlow, &sku);
  EXPECT_EQ(r.status, vigil::Status::kFail);
  EXPECT_EQ(bound.calls(), 4);
  EXPECT_EQ(busbw_of(r)->repeats.size(), 3u);
  EXPECT_TRUE(bound.recent().empty()) << "a failing figure is never remembered";
}

TEST(AllreduceRepeats, the_node_keeps_only_its_latest_eight_figures) {
  StateDir s;
  s.write_recent({42.1, 42.2, 42.3, 42.4, 42.5, 42.6, 42.7, 42.8});
  run_sequence(s, kFast);
  EXPECT_EQ(s.recent(), (std::vector<double>{42.2, 42.3, 42.4, 42.5, 42.6, 42.7, 42.8, 42.5578}));
}

TEST(AllreduceRepeats, a_repeat_that_might_not_finish_inside_the_checks_limit_is_not_started) {
  // Each run takes 1 s and the check may take 3 s: the runner would kill a check that ran its
  // three repeats (4 s), losing every figure. At most one repeat fits with room to spare.
  StateDir s;
  s.write_recent({42.0, 42.5, 42.7});
  ScopedEnv mode("FAKE_PERF_MODE", "sleep:1");
  ScopedEnv log("FAKE_PERF_LOG", kSlow);
  ScopedEnv calls("FAKE_PERF_CALLS", s.dir.path() + "/calls");
  auto ctx = site_ctx();
  ctx.state_dir = s.dir.path();
  ctx.time_limit = std::chrono::seconds(3);  // as the runner sets it
  const auto t0 = std::chrono::steady_clock::now();
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_NE(busbw_of(r), nullptr) << r.message;
  EXPECT_LE(s.calls(), 2) << r.message;
  EXPECT_EQ(busbw_of(r)->repeats.size(), static_cast<std::size_t>(s.calls() - 1));
  EXPECT_NE(r.message.find(" of 3: another might pass the check's 3 s limit"), std::string::npos)
      << r.message;
  // Four runs (no guard) take >= 4 s; the guarded check ends near 2 s (up to the 3 s limit).
  EXPECT_LT(took, std::chrono::seconds(4)) << r.message;
}

// The repeats of a suspicious figure start ctx.repeat_spacing after the first run (a minute of
// a noisy host is gone by then); when the wait would not fit the limit, no repeat runs and the
// figure stands unconfirmed for the drainer.
TEST(AllreduceRepeats, spaced_repeats_wait_first_and_are_dropped_when_the_wait_does_not_fit) {
  StateDir s;
  s.write_recent({42.0, 42.5, 42.7});
  ScopedEnv mode("FAKE_PERF_MODE", "logs:" + kSlow);
  ScopedEnv calls("FAKE_PERF_CALLS", s.dir.path() + "/calls");
  auto ctx = site_ctx();
  ctx.state_dir = s.dir.path();
  ctx.repeat_spacing = std::chrono::seconds(1);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(s.calls(), 4);
  EXPECT_NE(r.message.find("repeated 1 s later: 15.00, 15.00, 15.00 GB/s"), std::string::npos)
      << r.message;

  StateDir tight;
  tight.write_recent({42.0, 42.5, 42.7});
  ScopedEnv calls2("FAKE_PERF_CALLS", tight.dir.path() + "/calls");
  ctx.state_dir = tight.dir.path();
  ctx.repeat_spacing = std::chrono::seconds(120);
  ctx.time_limit = std::chrono::seconds(60);
  r = vigil::make_nccl_allreduce_nvlink_check()->run(ctx);
  EXPECT_EQ(tight.calls(), 1);
  ASSERT_NE(busbw_of(r), nullptr);
  EXPECT_TRUE(busbw_of(r)->repeats.empty());
  EXPECT_NE(
      r.message.find("repeats not run: waiting 120 s first would pass the check's 60 s limit"),
      std::string::npos)
      << r.message;
}

TEST(AllreduceRepeats, wrong_results_are_not_repeated) {
  StateDir s;
  auto r = run_sequence(s, kLogs + "02-dgx2-v100x12-old-format-allgather-FAILED.txt");
  EXPECT_EQ(r.fault_code, "VIGIL-NCCL-WRONG-RESULTS");
  EXPECT_EQ(s.calls(), 1);
}

TEST(AllreduceRepeats, a_malformed_recent_figure_is_ignored_like_a_first_run) {
  StateDir s;
  std::ofstream(s.file()) << R"({"schema_version":1,"counters":{},"figures":{"busbw":[42,-1,42]}})";
  auto r = run_sequence(s, kSlow);
  EXPECT_EQ(s.calls(), 1) << r.message;
  EXPECT_EQ(s.recent(), (std::vector<double>{14.9966}));
}
