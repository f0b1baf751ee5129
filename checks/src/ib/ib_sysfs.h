#pragma once
// Private InfiniBand sysfs reader shared by the ib_port and ib_counters checks.
//
// Everything is read below an injectable root (CheckContext::sysfs_root, "/" in production,
// a fixture tree in tests): <root>/sys/class/infiniband/<hca>/ports/<n>/ with the files state
// ("4: ACTIVE"), phys_state ("5: LinkUp"), rate ("400 Gb/sec (4X NDR)"), link_layer
// ("InfiniBand" | "Ethernet") and counters/<name> (decimal). See
// Documentation/ABI/stable/sysfs-class-infiniband in the Linux tree.
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/report/report.h"

namespace vigil::ib {

// An error counter as exposed in counters/ (InfiniBand) or hw_counters/ (RoCE). The kernel reads it
// from the HCA's performance management agent; the hardware counter is `bits` wide and
// saturates (stops) at its maximum instead of wrapping (linux drivers/infiniband/core/sysfs.c,
// PORT_PMA_ATTR widths).
struct CounterSpec {
  std::string_view name;
  int bits;
  std::uint64_t saturated() const {
    return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  }
};

inline constexpr std::array<CounterSpec, 8> kErrorCounterArray = {{
    {"symbol_error", 16},
    {"link_error_recovery", 8},
    {"link_downed", 8},
    {"port_rcv_errors", 16},
    {"port_rcv_remote_physical_errors", 16},
    {"local_link_integrity_errors", 4},
    {"excessive_buffer_overrun_errors", 4},
    {"port_xmit_discards", 16},
}};

// RoCE ports (link_layer Ethernet): the InfiniBand PortCounters in counters/ do not describe an
// Ethernet link; the mlx5 driver's hw_counters/ do. The transport errors of a lossy or
// congested fabric, as deltas like the IB counters (Linux drivers/infiniband/hw/mlx5/
// counters.c: out_of_seq_q_cnts, retrans_q_cnts, cong_cnts; meaning: NVIDIA "Understanding mlx5
// Linux Counters and Status Parameters"):
//   out_of_sequence: packets that arrived out of order (a drop in the path);
//   packet_seq_err: NAK-sequence errors received (the peer saw a gap);
//   local_ack_timeout_err: the ACK timer expired (a retransmission);
//   rnr_nak_retry_err: receiver-not-ready retries exhausted;
//   np_cnp_sent / rp_cnp_handled: congestion notifications sent / acted on (DCQCN).
// The first four are the HCA's 32-bit queue counters (counters.c reads them with be32_to_cpu),
// the congestion ones 64-bit. The driver only creates those the HCA has (capabilities
// out_of_seq_cnt, retransmission_q_counters, cc_query_allowed): a missing file is a counter
// this HCA does not have, not an error.
inline constexpr std::array<CounterSpec, 6> kRoceCounterArray = {{
    {"out_of_sequence", 32},
    {"packet_seq_err", 32},
    {"local_ack_timeout_err", 32},
    {"rnr_nak_retry_err", 32},
    {"np_cnp_sent", 64},
    {"rp_cnp_handled", 64},
}};

// The counters a link layer's ports are judged by, and the directory they live in.
struct CounterSet {
  std::string_view dir;  // "counters" / "hw_counters"
  std::span<const CounterSpec> specs;
  bool missing_ok = false;  // a counter whose file is absent is left out, not an error
};
inline constexpr CounterSet kErrorCounters{"counters", kErrorCounterArray};
inline constexpr CounterSet kRoceCounters{"hw_counters", kRoceCounterArray, true};
// "InfiniBand" -> kErrorCounters, "Ethernet" -> kRoceCounters.
const CounterSet& counters_for(std::string_view link_layer);
// "InfiniBand" / "RoCE", for messages.
std::string_view fabric_name(std::string_view link_layer);

// IB port states (state file) and physical states (phys_state file) that the checks name.
inline constexpr int kStateActive = 4;
inline constexpr int kPhysLinkUp = 5;
inline constexpr int kPhysDisabled = 3;  // administratively disabled on the host side

// "4: ACTIVE" -> {4, "ACTIVE"}.
struct NumberedState {
  int code = 0;
  std::string text;
};

// Pure parsers (std::from_chars, no locale). nullopt on anything unexpected.
std::optional<NumberedState> parse_numbered_state(std::string_view s);
// "400 Gb/sec (4X NDR)" -> 400; "2.5 Gb/sec (1X SDR)" -> 2.5.
std::optional<double> parse_rate_gbps(std::string_view s);
// "123\n" -> 123.
std::optional<std::uint64_t> parse_counter(std::string_view s);

// Reads a whole sysfs attribute. nullopt when it cannot be read; *why (if given) then says
// why (strerror text, e.g. "Is a directory", "No such file or directory").
std::optional<std::string> read_attribute(const std::filesystem::path& path,
                                          std::string* why = nullptr);

// One port directory, <root>/sys/class/infiniband/<hca>/ports/<port>.
struct PortDir {
  std::string hca;   // "mlx5_0"
  std::string port;  // "1"
  std::filesystem::path dir;
  std::string id() const { return hca + "/" + port; }  // "mlx5_0/1", the measurement port
};

struct Scan {
  std::filesystem::path class_dir;  // <root>/sys/class/infiniband
  bool class_dir_present = false;   // false: no HCA driver loaded (or no HCA at all)
  std::vector<PortDir> ports;       // the asked link layer only, in natural order
  // other link layers, e.g. "mlx5_8/1 (Ethernet)", and HCAs outside the SKU's devices list
  // ("mlx5_9/1 (not in infiniband.devices)")
  std::vector<std::string> ignored;
  std::vector<Error> errors;  // unreadable entries inside existing HCA/port dirs
};

// True when `hca` (a directory name under /sys/class/infiniband) is a fabric HCA: it matches one
// of the SKU's infiniband.devices fnmatch patterns, or the SKU lists none.
bool is_fabric_hca(const std::string& hca, const std::vector<std::string>& devices);

// The fabric ports below root as NCCL_IB_HCA names them ("mlx5_0:1"): the ports of the SKU's link
// layer on the HCAs its infiniband.devices name, the ports ib_port judges (scan_ports), in
// natural order; a VPI HCA's port of the other link layer is left out. Empty when the SKU lists
// no devices or sysfs has none of them.
std::vector<std::string> listed_hca_ports(const std::filesystem::path& root,
                                          std::string_view link_layer,
                                          const std::vector<std::string>& devices);

// Lists the ports of `link_layer` ("InfiniBand", or "Ethernet": RoCE) below root. Returns an Error
// (naming the path) only when root is not a sysfs tree at all (root or <root>/sys/class missing) or
// the class dir cannot be listed: those are setup problems, not hardware findings. A missing
// <root>/sys/class/infiniband is a valid scan with class_dir_present = false.
// devices: fnmatch patterns of the HCAs to scan (InfinibandSpec::devices); empty: every HCA.
Result<Scan> scan_ports(const std::filesystem::path& root,
                        std::string_view link_layer = "InfiniBand",
                        const std::vector<std::string>& devices = {});

struct PortStatus {
  NumberedState state;       // logical state, ACTIVE when usable
  NumberedState phys_state;  // physical state, LinkUp when the cable trained
  // Effective rate; nullopt when the port is not ACTIVE and its rate file could not be read
  // or parsed (the kernel answers EINVAL for the rate of a port without a trained link).
  std::optional<double> rate_gbps;
  bool active() const { return state.code == kStateActive; }
  bool link_up() const { return phys_state.code == kPhysLinkUp; }
  bool disabled() const { return phys_state.code == kPhysDisabled; }
};

// Reads state, phys_state and rate. Error names the unreadable or malformed file.
Result<PortStatus> read_port_status(const PortDir& port);

// counter name -> value, for every counter of `set` (with missing_ok, those whose file exists).
// Error names the first unreadable or malformed file.
using Counters = std::map<std::string, std::uint64_t, std::less<>>;
Result<Counters> read_error_counters(const PortDir& port, const CounterSet& set = kErrorCounters);

// "mlx5_2" < "mlx5_10": compares embedded decimal numbers by value.
bool natural_less(std::string_view a, std::string_view b);

// The node's RDMA devices and their firmware, the report's "nics": every directory of
// <root>/sys/class/infiniband in natural order, with its fw_ver and board_id (the kernel's
// Documentation/ABI/stable/sysfs-class-infiniband; e.g. "28.41.1000" and "MT_0000000838" on a
// ConnectX-7, as GPUd's InfiniBand reader documents them). A file that cannot be read, or whose
// text is not an identifier (is_part_identifier), leaves its field empty. Empty without the
// class directory.
std::vector<NicPart> nic_parts(const std::filesystem::path& root);

inline constexpr std::string_view kFaultSysfsUnreadable = "VIGIL-IB-SYSFS-UNREADABLE";

// Folds unreadable sysfs files into a result: a fail seen on the readable ports stands (fail
// outranks error) and names the files as well; otherwise the check could not do its job and
// becomes error, naming the first file that stopped it.
void merge_read_errors(CheckResult& r, const std::vector<Error>& errors);

}  // namespace vigil::ib
