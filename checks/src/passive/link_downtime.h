#pragma once
// ib_link_downtime's kernel-log reading, apart from the check so that it is tested on genuine
// lines (tests/fixtures/kmsg/link-flaps.txt).
//
// What the kernel prints when an RDMA port goes down and comes back (as /dev/kmsg gives the
// record's text, without dmesg's or journald's prefix):
//   - a ConnectX Ethernet / RoCE port, from the netdev: "mlx5_core 0000:53:00.0 enp83s0f0np0:
//     Link down" / "... Link up" (Linux drivers/net/ethernet/mellanox/mlx5/core/en_main.c
//     mlx5e_update_carrier(), on the firmware's port-change events). It can say "Link up" again
//     with no "Link down" between (it reports the carrier event either way);
//   - any RDMA port, InfiniBand included, on kernels with "IB/cache: Add log messages for IB
//     device state changes" (2025): "mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link DOWN" /
//     "... Link INIT" / "ARMED" / "ACTIVE" (drivers/infiniband/core/cache.c ib_cache_update(),
//     printed when the cached state changes); mlx4 prints the same through its own device
//     ("mlx4_core 0000:c3:00.0 ibp195s0: Port: 1 Link INIT"). Before that patch an InfiniBand port
//     leaves no line at the default log level (IPoIB's ipoib_event() logs at debug only).
// A RoCE flap gives both lines, a few ms apart: both are one port, keyed by the PCI function and
// the port number (a ConnectX function has one port, so the netdev's is port 1).
// An outage starts at an explicit down ("Link down", "Link DOWN"); INIT and ARMED while it lasts
// keep it going, and the first up ("Link up", "Link ACTIVE") ends it. A port that trains at boot
// goes INIT -> ACTIVE with no DOWN line (the first state change from NOP is not printed), so
// link training is never an outage.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::link_down {

struct LinkEvent {
  std::string port;  // "0000:53:00.0/1": the PCI function and the port number
  std::string name;  // "enp83s0f0np0" or "mlx5_3": how the line names it
  enum Kind { kDown, kTraining, kUp } kind = kDown;
};

// nullopt for any other message. The text must begin with "mlx5_core " or "mlx4_core ".
std::optional<LinkEvent> parse_link_event(std::string_view message);

struct Outages {
  double down_s = 0;     // time down within the window
  int count = 0;         // outages that started within it
  double longest_s = 0;  // the longest single stretch seen within it
};

// Outages per port over a window of the kernel log; `down_since` carries an outage that lasts
// from one window into the next.
class Tracker {
 public:
  // Ports down when the window starts (usec since boot; the last window's end for one that was
  // counted up to it) and their names.
  std::map<std::string, std::uint64_t> down_since;
  std::map<std::string, std::string> names;  // port -> "mlx5_3, enp83s0f0np0"

  void take(const LinkEvent& e, std::uint64_t usec);
  // Ends the window at now_usec: a port still down is counted up to it and carried on from it.
  void close(std::uint64_t now_usec);
  const std::map<std::string, Outages>& outages() const { return outages_; }

 private:
  std::map<std::string, Outages> outages_;
};

}  // namespace vigil::link_down
