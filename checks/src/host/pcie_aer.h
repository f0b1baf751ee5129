#pragma once
// pcie_aer's sysfs reader, apart from the check so that it is tested on captured files.
//
// The kernel counts the PCIe errors each AER-capable device reported since boot in
// /sys/bus/pci/devices/<bdf>/aer_dev_{correctable,fatal,nonfatal} (Linux 4.19+,
// Documentation/ABI/testing/sysfs-bus-pci-devices-aer): one "<error name> <count>" per line,
// ending with TOTAL_ERR_COR, TOTAL_ERR_FATAL or TOTAL_ERR_NONFATAL. Error names differ between
// kernels ("Receiver Error 2" in the ABI document's sample, "RxErr 0" in a capture from a 5.x
// desktop, hakandundar34coding/system-monitoring-center#45), so only the TOTAL_ERR_* line is
// read. The same document says an endpoint's errors may be counted at its link partner instead:
// the port above each watched device is read too.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"

namespace vigil::aer {

// The TOTAL_ERR_* count of one aer_dev_* file's text; nullopt when it has no such line.
std::optional<std::uint64_t> total_errors(std::string_view text);

// A device pcie_aer watches: an NVIDIA GPU (vendor 0x10de, class 0x03xxxx) or NVSwitch
// (0x10de, class 0x0680xx), an NVIDIA networking / Mellanox NIC (0x15b3, class 0x02xxxx) or an
// NVMe drive (class 0x010802); or the port above one of them (role "port above <bdf>").
struct Device {
  std::string bdf;      // "0000:1b:00.0"
  std::string role;     // gpu, nvswitch, nic, nvme, "port above 0000:1b:00.0"
  std::string dir;      // its sysfs directory
  bool port = false;    // the port above a watched device
  bool nvidia = false;  // a GPU or NVSwitch: the NVIDIA driver does not recover its fatal errors
};

// The watched devices with AER counters under `sysfs_root` (its sys/bus/pci/devices), each
// upstream port once, in bus order. Devices without aer_dev_* files are left out.
std::vector<Device> watched_devices(const std::string& sysfs_root);

// How many PCI functions under `sysfs_root` have `role` (gpu, nvswitch, nic, nvme), counters or
// not: host_services asks for NVSwitches, where Fabric Manager must run.
int count_functions(const std::string& sysfs_root, std::string_view role);

struct Counts {
  std::uint64_t fatal = 0, nonfatal = 0, correctable = 0;
};
// The three totals of a device; an error names the unreadable or malformed file.
Result<Counts> read_counts(const Device& d);

}  // namespace vigil::aer
