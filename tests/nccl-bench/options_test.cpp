#include "vigil/ncclbench/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace nb = vigil::ncclbench;

TEST(Options, sizes_accept_nccl_tests_suffixes) {
  EXPECT_EQ(nb::parse_size("1048576"), 1048576u);
  EXPECT_EQ(nb::parse_size("64K"), 65536u);
  EXPECT_EQ(nb::parse_size("32M"), 33554432u);
  EXPECT_EQ(nb::parse_size("8G"), 8589934592u);
  EXPECT_FALSE(nb::parse_size("8Q"));
  EXPECT_FALSE(nb::parse_size("M"));
  EXPECT_FALSE(nb::parse_size("-1"));
  EXPECT_FALSE(nb::parse_size("99999999999999999999T"));
  EXPECT_EQ(nb::parse_size_list("1M,64M"), (std::vector<std::uint64_t>{1u << 20, 64u << 20}));
  EXPECT_FALSE(nb::parse_size_list("1M,,2M"));
}

TEST(Options, sweep_multiplies_by_the_factor_up_to_maxbytes) {
  nb::BenchOptions o;
  o.min_bytes = 1 << 20;
  o.max_bytes = 16 << 20;
  o.step_factor = 4;
  EXPECT_EQ(o.size_list(), (std::vector<std::uint64_t>{1 << 20, 4 << 20, 16 << 20}));
  o.max_bytes = 15 << 20;
  EXPECT_EQ(o.size_list(), (std::vector<std::uint64_t>{1 << 20, 4 << 20}));
}

TEST(Options, sizes_are_rounded_down_to_whole_elements) {
  nb::BenchOptions o;
  o.sizes = {10, 1, 4096};
  EXPECT_EQ(o.size_list(), (std::vector<std::uint64_t>{4, 8, 4096}));
  o.datatype = nb::DataType::kBf16;
  o.backend = nb::Backend::kNccl;
  EXPECT_EQ(o.size_list(), (std::vector<std::uint64_t>{2, 10, 4096}));
}

TEST(Options, validate_explains_bad_combinations) {
  nb::BenchOptions o;
  EXPECT_EQ(o.validate(), "");
  o.datatype = nb::DataType::kBf16;
  EXPECT_NE(o.validate().find("bf16 needs --backend nccl"), std::string::npos);
  o = {};
  o.min_bytes = 2 << 20;
  o.max_bytes = 1 << 20;
  EXPECT_NE(o.validate().find("-b"), std::string::npos);
  o = {};
  o.iters = 0;
  EXPECT_NE(o.validate().find("-n"), std::string::npos);
  o = {};
  o.timeout_s = -1;
  EXPECT_NE(o.validate().find("--timeout"), std::string::npos);
}

TEST(Options, ib_transport_forces_traffic_through_the_nics) {
  auto env = nb::transport_env(nb::Transport::kIb);
  EXPECT_EQ(env, (std::vector<std::pair<std::string, std::string>>{
                     {"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_ALGO", "Ring"}}));
}

TEST(Options, nvlink_transport_overrides_an_inherited_p2p_disable) {
  EXPECT_EQ(nb::transport_env(nb::Transport::kNvlink),
            (std::vector<std::pair<std::string, std::string>>{{"NCCL_P2P_DISABLE", "0"},
                                                              {"NCCL_SHM_DISABLE", "0"}}));
}

TEST(Options, device_is_the_local_rank_or_the_one_gpu_bound_to_the_rank) {
  EXPECT_EQ(nb::select_device(8, 3, 8), 3);  // 8 ranks, all 8 GPUs visible to each
  EXPECT_EQ(nb::select_device(8, 1, 2), 1);  // 2 ranks on an 8-GPU node
  EXPECT_EQ(nb::select_device(1, 5, 8), 0);  // srun --gpus-per-task=1: one GPU per rank
  EXPECT_EQ(nb::select_device(1, 0, 1), 0);
  EXPECT_EQ(nb::select_device(4, 5, 8), std::nullopt);  // 8 ranks, 4 GPUs each
  EXPECT_EQ(nb::select_device(0, 0, 1), std::nullopt);  // no GPU
  EXPECT_EQ(nb::select_device(8, 8, 8), std::nullopt);  // inconsistent rank info
}

namespace vigil::ncclbench {

// Review F06: what a job or site can set to change the mode NCCL measures in.
TEST(NcclTuningEnv, inherited_tuning_is_removed_and_network_settings_stay) {
  setenv("NCCL_ALGO", "Ring", 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("NCCL_IB_HCA", "mlx5_0,mlx5_1", 1);
  const auto removed = remove_tuning_env();
  EXPECT_EQ(removed, (std::vector<std::string>{"NCCL_ALGO=Ring", "NCCL_NVLS_ENABLE=0"}));
  EXPECT_EQ(std::getenv("NCCL_ALGO"), nullptr);
  EXPECT_EQ(std::getenv("NCCL_NVLS_ENABLE"), nullptr);
  ASSERT_NE(std::getenv("NCCL_IB_HCA"), nullptr);
  unsetenv("NCCL_IB_HCA");
}

TEST(NcclTuningEnv, conf_files_are_read_as_nccl_reads_them) {
  EXPECT_EQ(conf_file_tuning("# site\nNCCL_ALGO=Ring\nNCCL_SOCKET_IFNAME=eth0\n  NCCL_PROTO=Simple\r\n",
                             "/etc/nccl.conf"),
            (std::vector<std::string>{"NCCL_ALGO=Ring (/etc/nccl.conf)",
                                      "NCCL_PROTO=Simple (/etc/nccl.conf)"}));
  char tmpl[] = "/tmp/nccl-conf-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  std::ofstream(dir + "/user.conf") << "NCCL_ALGO=Tree\n";
  std::ofstream(dir + "/etc.conf") << "NCCL_ALGO=Ring\nNCCL_P2P_DISABLE=1\nNCCL_MAX_NCHANNELS=4\n";
  setenv("NCCL_CONF_FILE", (dir + "/user.conf").c_str(), 1);
  setenv("NCCL_P2P_DISABLE", "0", 1);  // the transport mode's own value wins over the file
  const auto in_effect = conf_tuning_in_effect(dir + "/etc.conf");
  // The first file to set a variable wins, as in NCCL (it never overwrites a set variable).
  EXPECT_EQ(in_effect, (std::vector<std::string>{"NCCL_ALGO=Tree (" + dir + "/user.conf)",
                                                 "NCCL_MAX_NCHANNELS=4 (" + dir + "/etc.conf)"}));
  unsetenv("NCCL_CONF_FILE");
  unsetenv("NCCL_P2P_DISABLE");
  std::filesystem::remove_all(dir);
}

}  // namespace vigil::ncclbench
