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
// Each line names its port its own way: the netdev by the PCI function ("0000:53:00.0/1": a
// ConnectX function has one port), ib_core by the RDMA device ("mlx5_3/1"). The check resolves
// both to the fabric port ib_port judges (its HCA's `device` link in sysfs gives the function);
// a RoCE flap prints both lines a few ms apart, and they are one outage, not two.
// An outage starts at an explicit down ("Link down", "Link DOWN"); INIT and ARMED while it lasts
// keep it going, and the first up ("Link up", "Link ACTIVE") ends it. Its length is measured
// between the two lines' own timestamps, never against another clock.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::link_down {

struct LinkEvent {
  std::string port;  // "0000:53:00.0/1" (a netdev line) or "mlx5_3/1" (an ib_core line)
  std::string name;  // "enp83s0f0np0" or "mlx5_3": how the line names it
  enum Kind { kDown, kTraining, kUp } kind = kDown;
};

// nullopt for any other message. The text must begin with "mlx5_core " or "mlx4_core ".
std::optional<LinkEvent> parse_link_event(std::string_view message);

struct Outages {
  double down_s = 0;     // the whole length of the outages that ended in the window
  int count = 0;         // how many
  double longest_s = 0;  // the longest of them
};

// Outages per port key over a window of the kernel log. `down_since` carries an outage that has
// not ended (usec since boot, by the log's clock) from one window into the next.
class Tracker {
 public:
  std::map<std::string, std::uint64_t> down_since;
  std::map<std::string, std::string> names;  // port key -> "enp83s0f0np0, mlx5_3"

  void take(const LinkEvent& e, std::uint64_t usec);
  // Outages that ended in this window, by port key.
  const std::map<std::string, Outages>& ended() const { return ended_; }

 private:
  std::map<std::string, Outages> ended_;
};

}  // namespace vigil::link_down
