// The NVLink domain jobs (issue 27 item 2, GB200/GB300 NVL72): the 2-tray check and the k-tray
// job over multi-node NVLink, judged by what NCCL's own log says it connected over, with a
// stand-in vigil-allreduce (FAKE_TRANSPORT) and the fake NVML's idle GPUs. Also the fabric job's
// rule that a pair measured over another path than the job's is no figure, and the HCAs a
// network test is limited to (NCCL_IB_HCA from the SKU's infiniband.devices).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "allreduce/allreduce_launch.h"
#include "allreduce/fabric_job.h"
#include "scoped_env.h"
#include "temp_dir.h"
#include "vigil/checks/registry.h"
#include "vigil/ncclbench/options.h"

namespace {

using vigil::testing::ScopedEnv;

const std::string kDir = VIGIL_ALLREDUCE_TEST_DIR;

std::string transport(const std::string& paths, int net, bool nvls) {
  return R"({"network": "IB", "paths": [)" + paths + R"(], "net_connections": )" +
         std::to_string(net) + R"(, "gdr_connections": )" + std::to_string(net) + R"(, "nvls": )" +
         (nvls ? "true" : "false") + "}";
}

class DomainAllreduce : public ::testing::Test {
 protected:
  DomainAllreduce()
      : nvml_("VIGIL_FAKE_NVML_FIXTURE",
              std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nvml/healthy_8x_h100.json") {
    ctx_.node = "tray-1";
    ctx_.nvml_library = VIGIL_FAKE_NVML_LIBRARY;
    ctx_.proc_root = "/nonexistent/proc";
    ctx_.allreduce.mpirun = kDir + "/fake_mpirun.sh";
    ctx_.allreduce.binary = kDir + "/vigil-allreduce-fake.sh";
    ctx_.has_gpu_runtime = true;
    ctx_.gpu_count = 4;
    ctx_.allreduce.backend = "nccl";
    ctx_.allreduce.ranks = 8;
    ctx_.allreduce.nodes = {"tray-1", "tray-2"};
  }
  vigil::CheckContext ctx_;

 private:
  ScopedEnv nvml_;
};

// Two trays: the check of its own name, the trays joined over NVLink with NVLS (recorded), and
// the figure not judged when NCCL went over the network instead (IMEX down, the fabric not set up).
TEST_F(DomainAllreduce, two_trays_must_meet_over_nvlink_not_the_network) {
  auto checks = vigil::domain_checks();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0]->name(), "domain_allreduce_nvlink");
  EXPECT_EQ(checks[0]->short_name(), "nvl-domain");
  ScopedEnv busbw("FAKE_BUSBW", "700");
  {
    ScopedEnv t("FAKE_TRANSPORT", transport(R"("P2P/CUMEM")", 0, true));
    auto r = checks[0]->run(ctx_);
    EXPECT_EQ(r.status, vigil::Status::kPass) << r.message;
    EXPECT_NE(r.message.find("NCCL connected via P2P/CUMEM, NVLS"), std::string::npos) << r.message;
  }
  ScopedEnv t("FAKE_TRANSPORT", transport(R"("NET/IB/0/GDRDMA")", 8, false));
  auto r = checks[0]->run(ctx_);
  EXPECT_EQ(r.status, vigil::Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-DOMAIN-NO-MNNVL");
  EXPECT_EQ(r.message.rfind("NCCL joined the trays over the network", 0), 0u) << r.message;
}

// The command line asks vigil-allreduce for the domain transport (MNNVL and NVLS forced).
TEST_F(DomainAllreduce, the_domain_job_runs_vigil_allreduce_with_the_domain_transport) {
  const auto spec = vigil::fabric_spec(ctx_, vigil::kNvlinkDomain, {});
  EXPECT_EQ(spec.check, "domain_allreduce_nvlink");
  EXPECT_EQ(spec.fault_prefix, "VIGIL-DOMAIN");
  const auto argv = vigil::allreduce_command(ctx_, spec, "vigil-allreduce", "/tmp/x.json");
  bool domain = false;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    domain = domain || (argv[i] == "--transport" && argv[i + 1] == "domain");
  EXPECT_TRUE(domain);
}

// Four trays: rounds of pairs, then all four at once, whose figure every node's result records
// as domain_busbw. Pairs that went over the network give no figure, so nobody is blamed.
TEST_F(DomainAllreduce, a_k_tray_job_records_the_whole_domain_figure_and_blames_no_one_for_a_path) {
  ctx_.allreduce.nodes = {"tray-1", "tray-2", "tray-3", "tray-4"};
  ctx_.allreduce.ranks = 16;
  ScopedEnv busbw("FAKE_BUSBW", "640");
  {
    ScopedEnv t("FAKE_TRANSPORT", transport(R"("P2P/CUMEM")", 0, true));
    auto results = vigil::run_fabric_job(ctx_, 3, 7, {}, {}, vigil::kNvlinkDomain);
    ASSERT_EQ(results.size(), 4u);
    for (const auto& [node, r] : results) {
      EXPECT_EQ(r.check, "domain_allreduce_nvlink");
      EXPECT_EQ(r.short_name, "nvl-domain");
      EXPECT_EQ(r.status, vigil::Status::kPass) << node << ": " << r.message;
      EXPECT_NE(r.message.find("4-node NVLink domain job"), std::string::npos) << r.message;
      EXPECT_NE(r.message.find("all 4 nodes at once: pass"), std::string::npos) << r.message;
      std::optional<double> whole;
      for (const auto& m : r.measurements)
        if (m.name == "domain_busbw" && m.port == "domain:4-nodes") whole = m.value;
      EXPECT_EQ(whole, 640) << node;
    }
  }
  ScopedEnv t("FAKE_TRANSPORT", transport(R"("NET/IB/0/GDRDMA")", 8, false));
  for (const auto& [node, r] : vigil::run_fabric_job(ctx_, 3, 7, {}, {}, vigil::kNvlinkDomain)) {
    EXPECT_EQ(r.status, vigil::Status::kError) << node << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-DOMAIN-LAUNCH");
    EXPECT_NE(r.message.find("NCCL joined the trays over the network"), std::string::npos)
        << r.message;
  }
}

// The InfiniBand fabric job: a pair NCCL ran over TCP sockets is no figure either. Counted as a
// slow pair it would blame a node for a missing rdma-core in the job's image.
TEST_F(DomainAllreduce, a_fabric_pair_over_sockets_is_no_figure) {
  ctx_.allreduce.nodes = {"n1", "n2", "n3", "n4"};
  ctx_.allreduce.ranks = 32;
  ScopedEnv busbw("FAKE_BUSBW", "3");
  ScopedEnv t("FAKE_TRANSPORT", R"({"network": "Socket", "paths": ["NET/Socket"], )"
                                R"("net_connections": 8, "gdr_connections": 0, "nvls": false})");
  for (const auto& [node, r] : vigil::run_fabric_job(ctx_, 3, 7, {})) {
    EXPECT_EQ(r.status, vigil::Status::kError) << node << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-FABRIC-LAUNCH");
    EXPECT_NE(r.message.find("fell back to TCP sockets"), std::string::npos) << r.message;
  }
}

// Issue 27: a SKU that names its fabric HCAs (infiniband.devices) limits NCCL to them, so an IB
// or fabric test measures the HCAs ib_port judges: those the patterns match with a port of the
// SKU's link layer (mlx5_2 below matches the pattern but is an Ethernet storage NIC). The site's
// own NCCL_IB_HCA wins, in the environment or a NCCL configuration file; the NVLink domain test
// crosses no network and gets none.
using NetworkHcas = DomainAllreduce;

TEST_F(NetworkHcas, a_network_test_uses_only_the_skus_fabric_hcas) {
  if (vigil::ncclbench::conf_files_set("NCCL_IB_HCA", "/etc/nccl.conf"))
    GTEST_SKIP() << "this host's /etc/nccl.conf sets NCCL_IB_HCA (the site's choice wins)";
  vigil::testing::TempDir root;
  std::ofstream(root.path() + "/empty.conf") << "";
  ScopedEnv no_user_conf("NCCL_CONF_FILE", root.path() + "/empty.conf");
  auto port = [&](const std::string& hca, const std::string& layer) {
    const std::string dir = root.path() + "/sys/class/infiniband/" + hca + "/ports/1";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/link_layer") << layer << "\n";
  };
  for (const char* hca : {"mlx5_0", "mlx5_1", "mlx5_10"}) port(hca, "InfiniBand");
  port("mlx5_2", "Ethernet");
  std::filesystem::create_directories(root.path() + "/sys/class/infiniband/mlx5_10/ports/2");
  std::ofstream(root.path() + "/sys/class/infiniband/mlx5_10/ports/2/link_layer")
      << "Ethernet\n";           // a VPI HCA's Ethernet port: not the fabric
  port("mlx5_9", "InfiniBand");  // not in the list
  vigil::SkuConfig sku;
  sku.name = "TEST-SKU";
  sku.infiniband.ports = 3;
  sku.infiniband.devices = {"mlx5_[012]", "mlx5_1?"};
  ctx_.sku = &sku;
  ctx_.sysfs_root = root.path();
  ctx_.allreduce.nodes = {"n1", "n2", "n3", "n4"};
  const auto spec = vigil::fabric_spec(ctx_, vigil::kInfinibandFabric, {});
  EXPECT_EQ(vigil::fabric_hca_setting(ctx_, spec), "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_10:1");
  const auto argv = vigil::allreduce_command(ctx_, spec, "vigil-allreduce", "/tmp/x.json");
  bool passed = false;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    passed =
        passed || (argv[i] == "-x" && argv[i + 1] == "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_10:1");
  EXPECT_TRUE(passed);
  {
    ScopedEnv busbw("FAKE_BUSBW", "380");
    ctx_.allreduce.nodes = {"n1", "n2"};
    auto r = vigil::fabric_checks().front()->run(ctx_);
    EXPECT_NE(r.message.find("ran with NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_10:1 (the SKU's "
                             "infiniband.devices)"),
              std::string::npos)
        << r.message;
  }
  EXPECT_FALSE(vigil::fabric_hca_setting(ctx_, vigil::fabric_spec(ctx_, vigil::kNvlinkDomain, {})));
  {
    ScopedEnv site("NCCL_IB_HCA", "mlx5_0");
    EXPECT_FALSE(vigil::fabric_hca_setting(ctx_, spec));
  }
  {
    const std::string conf = root.path() + "/nccl.conf";
    std::ofstream(conf) << "# site\nNCCL_IB_HCA=mlx5_1\n";
    ScopedEnv file("NCCL_CONF_FILE", conf);
    EXPECT_FALSE(vigil::fabric_hca_setting(ctx_, spec));
  }
  sku.infiniband.devices.clear();
  EXPECT_FALSE(vigil::fabric_hca_setting(ctx_, spec));
}

}  // namespace
