#pragma once
// vigil-allreduce options, named like nccl-tests where they overlap (-b -e -f -w -n -c -d).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/ncclbench/bench_result.h"

namespace vigil::ncclbench {

enum class Backend { kHost, kNccl };
// kNvlink: NCCL's own choice (one node's NVLink test); kIb: every byte through the NICs (the
// loopback test); kFabric: a multi-node job with NVLink inside each node and the network between
// nodes, never multi-node NVLink (the fabric jobs; transport_env); kDomain: the trays of one
// NVLink domain (GB200/GB300 NVL72) joined by multi-node NVLink and NVLS, both forced (the
// NVLink domain jobs).
enum class Transport { kNvlink, kIb, kFabric, kDomain };
enum class DataType { kFloat, kBf16 };

inline constexpr EnumName<Backend> kBackendNames[] = {{Backend::kHost, "host"},
                                                      {Backend::kNccl, "nccl"}};
inline constexpr EnumName<Transport> kTransportNames[] = {{Transport::kNvlink, "nvlink"},
                                                          {Transport::kIb, "ib"},
                                                          {Transport::kFabric, "fabric"},
                                                          {Transport::kDomain, "domain"}};
// nccl-tests' names.
inline constexpr EnumName<DataType> kDataTypeNames[] = {{DataType::kFloat, "float"},
                                                        {DataType::kBf16, "bfloat16"}};
inline std::string_view to_string(Backend b) { return name_of(kBackendNames, b, "host"); }
inline std::string_view to_string(Transport t) { return name_of(kTransportNames, t, "nvlink"); }
inline std::string_view to_string(DataType d) { return name_of(kDataTypeNames, d, "float"); }
std::size_t element_size(DataType d);

struct BenchOptions {
  Backend backend = Backend::kHost;
  Transport transport = Transport::kNvlink;
  DataType datatype = DataType::kFloat;
  std::uint64_t min_bytes = 32ull << 20;  // -b
  std::uint64_t max_bytes = 32ull << 20;  // -e
  int step_factor = 2;                    // -f
  std::vector<std::uint64_t> sizes;       // --sizes; overrides -b/-e/-f when not empty
  int warmup_iters = 5;                   // -w
  int iters = 20;                         // -n
  bool check = true;                      // -c
  std::string json_path;                  // --json
  std::optional<double> min_busbw_gb_s;   // --min-busbw
  double timeout_s = 0;                   // --timeout; 0 = no watchdog
  bool print_table = true;                // rank 0 prints the table to stdout

  // Sizes to run, ascending, each rounded down to a whole number of elements (at least one
  // element, except an explicit 0).
  std::vector<std::uint64_t> size_list() const;
  // Empty when consistent, else what is wrong and how to fix it.
  std::string validate() const;
};

// "1048576", "64K", "32M", "8G" (K = 1024, as nccl-tests); nullopt when malformed.
std::optional<std::uint64_t> parse_size(std::string_view s);
// "1M,8M,64M"
std::optional<std::vector<std::uint64_t>> parse_size_list(std::string_view s);

// NCCL settings each --transport applies before the first NCCL call (names and values). ib:
// no NVLink/PCIe peer access, no shared memory, ring only, and no multi-node NVLink, so every
// byte crosses the NICs: on a GB200/GB300 NVL72 rack NCCL would otherwise join two trays of the
// rack over NVLink (NCCL_MNNVL_ENABLE defaults to 2, "auto", used whenever there are several
// nodes: NVIDIA/nccl src/init.cc), and an InfiniBand test would measure no InfiniBand.
// nvlink: P2P and SHM explicitly enabled, so an NCCL_P2P_DISABLE=1 inherited from the job's
// environment cannot turn the NVLink test into a network test without anyone noticing.
// domain: multi-node NVLink and NVLS forced on (NCCL_MNNVL_ENABLE=1, NCCL_NVLS_ENABLE=1), so a
// domain whose IMEX or fabric is broken fails NCCL's init instead of measuring the network.
std::vector<std::pair<std::string, std::string>> transport_env(Transport t);

// NCCL settings that choose the algorithm, protocol, channels or intra-node transports, so that a
// job or site carrying them (sbatch --export=ALL, a module file) would make the check measure
// another mode than the one its SKU floor describes: the H100/H200 NVLink floors are reached with
// NVLS (NVLink SHARP) only (NCCL's environment variable documentation names each).
// vigil-allreduce removes them from its environment before NCCL's first call and reports what it
// removed. Network selection (NCCL_SOCKET_IFNAME, NCCL_IB_HCA, NCCL_IB_GID_INDEX, ...), GPUDirect
// and debug settings are the site's and stay.
const std::vector<std::string>& tuning_env_names();

// The tuning settings (tuning_env_names) a NCCL configuration file sets, as "NAME=value (file)".
// NCCL reads $NCCL_CONF_FILE (else ~/.nccl.conf), then /etc/nccl.conf, one NAME=value per line,
// and applies a value only when the variable is not already in the environment, so vigil-allreduce
// cannot take these back: the check reports them and never fails a figure measured under them.
std::vector<std::string> conf_file_tuning(const std::string& text, const std::string& file);

// Unsets every tuning_env_names() variable of this process; returns them as "NAME=value".
std::vector<std::string> remove_tuning_env();
// The tuning settings NCCL's configuration files will apply to this process: those of
// $NCCL_CONF_FILE (else $HOME/.nccl.conf) and `etc_conf` whose variable is not in the
// environment (conf_file_tuning).
std::vector<std::string> conf_tuning_in_effect(const std::string& etc_conf = "/etc/nccl.conf");

// The configuration files NCCL reads, in its order: $NCCL_CONF_FILE (else $HOME/.nccl.conf),
// then `etc_conf`.
std::vector<std::string> nccl_conf_files(const std::string& etc_conf = "/etc/nccl.conf");
// True when one of those files sets `name` (a "NAME=value" line): the site's choice, which a
// variable in the environment would override.
bool conf_files_set(const std::string& name, const std::string& etc_conf = "/etc/nccl.conf");

// NCCL states its choice only in its debug log: with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=TUNING,
// communicator rank 0 logs every collective it enqueues. The settings that write that log to
// `path` (NCCL_DEBUG_FILE), or none when the job set NCCL_DEBUG itself (the job's debugging
// stays as it asked; the choice is then not recorded).
std::vector<std::pair<std::string, std::string>> tuning_log_env(const std::string& path);
// The AllReduce choices in such a log, one per size (the last one logged for it), by size.
// Lines, after NCCL's "host:pid:tid [dev] NCCL INFO " prefix (NCCL src/enqueue.cc):
//   2.24 and later  "AllReduce: 33554432 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}"
//   2.23            "AllReduce: 1048576 Bytes -> Algo 4 proto 2 time 12.345000"
//   2.20 - 2.22     "1048576 Bytes -> Algo 4 proto 2 time 12.345000"
// Names compare without case or underscores (NVLS_TREE = NVLSTree) and come back as NCCL's
// ncclAlgoStr / ncclProtoStr spell them (src/init.cc); numbers index those tables.
// Other lines, other collectives and unknown numbers are skipped.
std::vector<AlgoChoice> parse_tuning_log(std::string_view text);

// The transports in NCCL's INIT/NET log (tuning_log_env turns those subsystems on too), from
// lines after NCCL's "NCCL INFO " prefix (fixtures and their sources: tests/fixtures/nccl-info):
//   "Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA"   (2.12+; 2.7: "Channel 01 : ...",
//   2.4-2.6: "Ring 00 : ..."; PXN: "NET/IB/0(8)/GDRDMA"; plugins: "NET/IBext_v8/7/GDRDMA",
//   "NET/AWS Libfabric/0"), "via P2P/CUMEM", "via P2P/IPC/read", "via P2P/direct pointer",
//   "via SHM/direct/direct";
//   "Using network IB" / "Using network Socket" (NCCL src/net.cc);
//   "NVLS multicast support is available on dev 0", "NVLS comm 0x...", "Connected NVLS ...".
// A path is the transport and, for P2P and NET, its kind: "P2P/CUMEM", "SHM", "NET/IB".
TransportUse parse_transport_log(std::string_view text);

// The CUDA device a rank uses, given how many devices it sees and its place on the node:
// its node-local rank when it sees at least one GPU per local rank (nccl-tests' rule);
// device 0 when it sees exactly one (srun --gpus-per-task=1 or --gpu-bind gave each rank its
// own GPU; should two ranks still share one, ncclCommInitRank reports the duplicate GPU).
// nullopt: fewer GPUs than local ranks, or none.
std::optional<int> select_device(int visible_devices, int local_rank, int local_ranks);

}  // namespace vigil::ncclbench
