#include "vigil/ncclbench/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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
                     {"NCCL_P2P_DISABLE", "1"},
                     {"NCCL_SHM_DISABLE", "1"},
                     {"NCCL_ALGO", "Ring"},
                     {"NCCL_MNNVL_ENABLE", "0"}}));  // NVL72: trays of one rack, not over NVLink
}

// A fabric job: NVLink inside each node, the network between nodes, never multi-node NVLink.
TEST(Options, fabric_transport_keeps_nvlink_inside_nodes_and_the_nics_between_them) {
  EXPECT_EQ(nb::transport_env(nb::Transport::kFabric),
            (std::vector<std::pair<std::string, std::string>>{
                {"NCCL_P2P_DISABLE", "0"}, {"NCCL_SHM_DISABLE", "0"}, {"NCCL_MNNVL_ENABLE", "0"}}));
  for (auto t :
       {nb::Transport::kNvlink, nb::Transport::kIb, nb::Transport::kFabric, nb::Transport::kDomain})
    EXPECT_EQ(value_of(nb::kTransportNames, nb::to_string(t)), t);
  EXPECT_FALSE(value_of(nb::kTransportNames, "mnnvl"));
}

// An NVLink domain job: the trays meet over multi-node NVLink with NVLS, both forced, so a
// broken IMEX domain fails NCCL's init rather than measuring the network.
TEST(Options, domain_transport_forces_multi_node_nvlink_and_nvls) {
  EXPECT_EQ(nb::transport_env(nb::Transport::kDomain),
            (std::vector<std::pair<std::string, std::string>>{{"NCCL_P2P_DISABLE", "0"},
                                                              {"NCCL_SHM_DISABLE", "0"},
                                                              {"NCCL_MNNVL_ENABLE", "1"},
                                                              {"NCCL_NVLS_ENABLE", "1"}}));
  EXPECT_EQ(nb::to_string(nb::Transport::kDomain), "domain");
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
  EXPECT_EQ(
      conf_file_tuning("# site\nNCCL_ALGO=Ring\nNCCL_SOCKET_IFNAME=eth0\n  NCCL_PROTO=Simple\r\n",
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

// A genuine NCCL INFO log from a public source (tests/fixtures/nccl-info/SOURCES.md).
std::string nccl_info_log(const std::string& name) {
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nccl-info/" + name);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// NCCL 2.24+ print the choice in upper case (ncclAlgoToString: RING, TREE, NVLS_TREE; proto
// SIMPLE), as genuine 2.27.5 and 2.30 lines show; Vigil reports the names of ncclAlgoStr /
// ncclProtoStr, which the SKU files use (review W6: these lines used to be dropped).
TEST(NcclTuningLog, the_upper_case_names_of_nccl_2_24_and_later_are_read) {
  // Two runs of one job: the default (TREE, LL), then NCCL_ALGO=Ring NCCL_PROTO=Simple; the last
  // line logged for a size wins. The opCount lines of the same collective are not choices.
  EXPECT_EQ(parse_tuning_log(nccl_info_log("tuning-2.27.5-allreduce.log")),
            (std::vector<AlgoChoice>{{4, "Ring", "Simple"}}));
  EXPECT_EQ(parse_tuning_log(nccl_info_log("tuning-userguide-2.30.log")),
            (std::vector<AlgoChoice>{{33554432, "Ring", "Simple"}}));
  // Another collective's lines, and the tuning table's mixed-case header, are not ours.
  EXPECT_TRUE(parse_tuning_log(nccl_info_log("tuning-2.29.7-broadcast.log")).empty());
  // Every name ncclAlgoToString / ncclProtoToString return (src/collectives.cc, v2.26.2-1
  // lines 55-75), in the genuine line's shape; the 2.29.7 log's Broadcast line, as AllReduce.
  std::string log = nccl_info_log("tuning-2.29.7-broadcast.log");
  const std::string one = "lab:3038984:3038984 [0] NCCL INFO AllReduce: ";
  const std::vector<std::pair<std::string, AlgoChoice>> names = {
      {"1 Bytes -> Algo TREE proto LL128", {1, "Tree", "LL128"}},
      {"2 Bytes -> Algo COLLNET_DIRECT proto SIMPLE", {2, "CollNetDirect", "Simple"}},
      {"3 Bytes -> Algo COLLNET_CHAIN proto SIMPLE", {3, "CollNetChain", "Simple"}},
      {"4 Bytes -> Algo NVLS proto SIMPLE", {4, "NVLS", "Simple"}},
      {"5 Bytes -> Algo NVLS_TREE proto SIMPLE", {5, "NVLSTree", "Simple"}},
      {"6 Bytes -> Algo PAT proto LL", {6, "PAT", "LL"}},
      {"7 Bytes -> Algo Unknown proto SIMPLE", {}}};  // NCCL's word for a value it cannot name
  std::vector<AlgoChoice> want;
  for (const auto& [words, choice] : names) {
    log += one + words + " channel{Lo..Hi}={0..31}\n";
    if (!choice.algorithm.empty()) want.push_back(choice);
  }
  EXPECT_EQ(parse_tuning_log(log), want);
}

// NCCL 2.20-2.23 printed numbers indexing ncclAlgoStr / ncclProtoStr; 2.20-2.22 without the
// collective's name, as in this genuine log (behind a launcher's "[0] " prefix).
TEST(NcclTuningLog, the_numbers_of_nccl_2_20_to_2_23_are_read) {
  EXPECT_EQ(parse_tuning_log(nccl_info_log("tuning-numeric-1453.log")),
            (std::vector<AlgoChoice>{{262144, "Tree", "LL128"}, {8589934592, "Ring", "Simple"}}));
  // 2.23 adds the name (src/enqueue.cc v2.23.4-1 line 1855).
  EXPECT_EQ(parse_tuning_log("h:1:2 [3] NCCL INFO AllReduce: 4096 Bytes -> Algo 4 proto 2 time "
                             "12.500000\n"),
            (std::vector<AlgoChoice>{{4096, "NVLS", "Simple"}}));
  // Unknown numbers and malformed lines are skipped, not guessed.
  EXPECT_TRUE(
      parse_tuning_log("h:1:2 [3] NCCL INFO AllReduce: 4096 Bytes -> Algo 9 proto 2 time 1\n"
                       "h:1:2 [3] NCCL INFO AllReduce: x Bytes -> Algo 1 proto 2\n"
                       "h:1:2 [3] NCCL WARN AllReduce: 4096 Bytes -> Algo 1 proto 2\n")
          .empty());
}

TEST(NcclTuningLog, a_job_that_sets_nccl_debug_keeps_it_and_nothing_is_recorded) {
  unsetenv("NCCL_DEBUG");
  EXPECT_EQ(tuning_log_env("/tmp/t.log"), (std::vector<std::pair<std::string, std::string>>{
                                              {"NCCL_DEBUG", "INFO"},
                                              {"NCCL_DEBUG_SUBSYS", "INIT,NET,TUNING"},
                                              {"NCCL_DEBUG_FILE", "/tmp/t.log"}}));
  setenv("NCCL_DEBUG", "WARN", 1);
  EXPECT_TRUE(tuning_log_env("/tmp/t.log").empty());
  unsetenv("NCCL_DEBUG");
}

// Genuine NCCL INFO lines from public issues (tests/fixtures/nccl-info/SOURCES.md).
TransportUse transport_of(const std::string& name) {
  return parse_transport_log(nccl_info_log(name));
}

TEST(TransportLog, inter_node_ib_with_gpudirect_rdma_in_every_release_form) {
  for (const char* f : {"nccl-707-ib-gdr-2.7.6.log", "nccl-133-v2.1-ib-gdr.log"}) {
    const TransportUse t = transport_of(f);
    EXPECT_EQ(t.paths, std::vector<std::string>{"NET/IB"}) << f;
    EXPECT_GT(t.net_connections, 0) << f;
    EXPECT_EQ(t.gdr_connections, t.net_connections) << f;
  }
  const TransportUse pxn = transport_of("pxn-roce-2.27.5.log");  // "NET/IB/0(8)/GDRDMA", RoCE
  EXPECT_EQ(pxn.network, "IB");
  EXPECT_EQ(pxn.paths, std::vector<std::string>{"NET/IB"});
  EXPECT_EQ(pxn.net_connections, 2);
  EXPECT_EQ(pxn.gdr_connections, 2);
  const TransportUse ext = transport_of("nccl-1453-ibext-gdr.log");  // a launcher's "[0] " too
  EXPECT_EQ(ext.paths, std::vector<std::string>{"NET/IBext_v8"});
  EXPECT_EQ(ext.gdr_connections, 2);
}

TEST(TransportLog, ib_without_gdr_and_socket_fallbacks_are_told_apart) {
  const TransportUse no_gdr = transport_of("nccl-1412-ib-no-gdr.log");
  EXPECT_EQ(no_gdr.paths, (std::vector<std::string>{"NET/IB", "P2P/direct pointer"}));
  EXPECT_EQ(no_gdr.net_connections, 2);
  EXPECT_EQ(no_gdr.gdr_connections, 0);
  const TransportUse socket = transport_of("nccl-1267-socket-2.19.3.log");
  EXPECT_EQ(socket.network, "Socket");
  EXPECT_TRUE(socket.paths.empty());  // "NET/Socket : Using ..." is not a connection
  const TransportUse via = transport_of("nccl-952-socket-via.log");
  EXPECT_EQ(via.paths, (std::vector<std::string>{"NET/Socket", "P2P/IPC"}));
  EXPECT_EQ(via.net_connections, 1);
  EXPECT_EQ(via.gdr_connections, 0);
  EXPECT_EQ(transport_of("nccl-226-socket-2.4.7.log").paths,
            std::vector<std::string>{"NET/Socket"});  // "Ring 00 : 43 -> 44 ..." (2.4)
}

// NCCL 2.26+ prints extras after GDRDMA (src/net.cc: "%s/GDRDMA%s%s" with "(PCI)" and
// "/Shared"); these lines are written as that format string prints them, not taken from a log.
TEST(TransportLog, gdrdma_with_the_extras_of_newer_releases_counts) {
  const TransportUse t = parse_transport_log(
      "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA(PCI)\n"
      "h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA/Shared\n");
  EXPECT_EQ(t.net_connections, 2);
  EXPECT_EQ(t.gdr_connections, 2);
}

TEST(TransportLog, intra_node_paths_and_nvls) {
  const TransportUse t = transport_of("nccl-1538-intra-2.22.3.log");
  EXPECT_EQ(t.paths, std::vector<std::string>{"P2P/CUMEM"});
  EXPECT_EQ(t.net_connections, 0);
  EXPECT_TRUE(t.nvls);
  EXPECT_EQ(t.network, "IBext_v8");
  EXPECT_EQ(transport_of("nccl-tests-228-shm.log").paths, std::vector<std::string>{"SHM"});
  EXPECT_TRUE(transport_of("nccl-tests-213-nvls-comm.log").nvls);
  EXPECT_TRUE(parse_transport_log("no NCCL here\nINFO without a prefix\n").empty());
}

}  // namespace vigil::ncclbench
