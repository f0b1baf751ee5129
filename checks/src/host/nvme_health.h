#pragma once
// host_nvme's readers, apart from the check so that they are tested on captured output.
//
// The controllers: /sys/class/nvme/nvme<N> (Linux drivers/nvme/host/core.c): `state` is the
// driver's state of the controller ("live"; "resetting", "connecting" while it recovers; "dead"
// when the driver gave up on it, "deleting" while it goes), `model` and `address` (its PCI
// function) say which drive it is.
//
// The drive's own health: the SMART / Health Information log page (02h) of the NVM Express Base
// Specification 2.1, 5.1.12.1.3, Figure 206, as `nvme smart-log /dev/nvme<N> -o json` (nvme-cli)
// prints it; the controller's device asks for the controller-wide log (NSID FFFFFFFFh, which
// every drive answers; a namespace's may not: netdata#20703). Get Log Page is an admin command:
// the kernel refuses it without CAP_SYS_ADMIN (EACCES; drivers/nvme/host/ioctl.c
// nvme_cmd_allowed). What each nvme-cli prints (its json_smart_log()):
//   - critical_warning: an integer, or with -H / -v (1.11+), and always in 2.11 and 2.12, an
//     object whose "value" is the integer ("Value" in 2.7.0);
//   - the 128-bit counters (media_errors ...): bare numbers, except 2.1-2.3 (Debian 12's
//     "2.4+really2.3"), which print strings, "38313.000000" or, under a locale with grouping,
//     "2,752,848";
//   - temperature in Kelvin ("Temperature" in 2.7.0); avail_spare, spare_thresh, percent_used
//     in percent.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"

namespace vigil::nvme {

struct Controller {
  std::string name;       // "nvme0"
  std::string state;      // "live", "dead", ...; "" when unreadable
  std::string model;      // "CT4000P3PSSD8"
  std::string address;    // "0000:01:00.0"
  std::string transport;  // "pcie" for a local drive; "rdma", "tcp", "fc", "loop": NVMe-oF
};

// Every /sys/class/nvme/nvme<N> under sysfs_root, by name. `transport` (Linux 4.x+: "pcie",
// "rdma", "tcp", "fc", "loop") tells a local drive from an NVMe-over-fabrics controller.
std::vector<Controller> controllers(const std::string& sysfs_root);

struct SmartLog {
  unsigned critical_warning = 0;  // byte 0, bits as below
  unsigned avail_spare = 0;       // percent
  unsigned spare_thresh = 0;      // percent
  unsigned percent_used = 0;      // percent of the rated endurance; may exceed 100
  std::optional<double> media_errors;
  std::optional<double> temperature_c;
};

// nvme-cli's JSON, every form above; an error names what is missing or malformed.
Result<SmartLog> parse_smart_log(std::string_view json);

// Byte 0's bits (Figure 206; bit 6 from NVMe 2.3, 5.2.12.1.3): what each means, whether it
// fails (the drive cannot keep the node's data: spare exhausted, reliability degraded, media
// read-only, backup or persistent memory failed) or warns (a temperature threshold crossed:
// not latched, the drive throttles; an indeterminate personality state).
struct WarningBit {
  unsigned bit;
  const char* what;
  bool fails;
};
std::vector<WarningBit> warning_bits(unsigned critical_warning);

}  // namespace vigil::nvme
