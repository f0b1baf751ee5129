#pragma once
// Per-SKU configuration: how to recognise the SKU and the thresholds its checks use.
// One YAML file per SKU in a thresholds directory (checks/thresholds/*.yaml), documented in
// docs/thresholds.md. Loading is parse -> defaults -> validate; errors name file, line, field.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vigil/checks/site_check.h"
#include "vigil/checks/xid_catalogue.h"
#include "vigil/config/config_error.h"
#include "vigil/detect/config.h"
#include "vigil/report/threshold.h"

namespace vigil {

struct SkuMatch {
  std::vector<std::string> gpu_names;  // full nvmlDeviceGetName names, e.g. "NVIDIA H100 80GB HBM3"
  std::vector<unsigned> pci_device_ids;  // PCI device id (upper 16 bits of pciDeviceId)
  int gpu_count = 0;                     // GPUs per node
};

struct InfinibandSpec {
  int ports = 0;         // expected active IB ports (compute fabric) per node; 0 = no IB expected
  double rate_gbps = 0;  // expected link rate per port in Gb/s (400 for NDR)
  // The compute fabric's link layer as sysfs spells it (ports/<n>/link_layer): "InfiniBand",
  // or "Ethernet" for RoCE (Spectrum-X, RoCE GB300 clusters). Only ports of this layer count.
  std::string link_layer = "InfiniBand";
  // The HCAs (sysfs /sys/class/infiniband/<name>, fnmatch patterns such as "mlx5_*") whose ports
  // form the compute fabric; empty: every HCA of link_layer. On RoCE nodes the storage and
  // north-south NICs are Ethernet RDMA ports too: the list keeps them out of the fabric checks.
  std::vector<std::string> devices;
  // The fabric is used with GPUDirect RDMA (NICs reading GPU memory): ib_gpudirect then wants
  // nvidia_peermem or a dma-buf path on the node.
  bool gpudirect = false;
};

// The NVLink domain of the SKU (docs/checks-nvml.md, nvlink_imex).
struct NvlinkSpec {
  // Multi-node NVLink (GB200 / GB300 NVL72): CUDA's fabric memory handles across the trays of a
  // rack need the IMEX daemon (nvidia-imex) and its channel device on every node; nvlink_imex
  // judges both. False: single-node NVLink (HGX), where IMEX is not used.
  bool imex = false;
  // The site runs nvidia-imex as a resident service (systemd), not per job (a Slurm prolog, or
  // NVIDIA's DRA driver's ComputeDomains): only then is a daemon that is not running a fault.
  bool imex_resident = false;
};

// The systemd units host_services judges on nodes of this SKU (docs/checks-host.md).
struct ServicesSpec {
  // Units the node must have installed and active, with their suffix ("nvidia-fabricmanager
  // .service"): one that is missing, stopped or failed fails. Fabric Manager, persistenced and
  // IMEX are also watched without being listed, but only where they are installed and in use.
  std::vector<std::string> required;
};

// A filesystem host_mounts requires on nodes of this SKU (docs/checks-host.md).
struct MountSpec {
  std::string path;    // the mount point, absolute
  std::string fstype;  // as /proc/self/mountinfo spells it (lustre, nfs4, gpfs, ...); "": any
  bool rw = true;      // mounted read-write
  std::optional<double> min_free_percent;  // free space below it fails
};

struct SkuConfig {
  std::string name;  // e.g. "H100-SXM5-80GB"
  std::string description;
  SkuMatch match;
  InfinibandSpec infiniband;
  NvlinkSpec nvlink;
  ServicesSpec services;
  std::vector<MountSpec> mounts;
  // check name -> measurement name -> threshold
  std::map<std::string, std::map<std::string, Threshold>> thresholds;
  std::string file;  // where it was loaded from

  const Threshold* find(std::string_view check, std::string_view measurement) const;
};

struct SkuSet {
  std::vector<SkuConfig> skus;
  // The site's detection settings, `detection.json` beside the SKU files
  // (detect::kDetectionFileName): what the confirmation repeats are planned with, the file the
  // drainer's detection.engine_file names. Null when there is none: the defaults.
  std::shared_ptr<const detect::DetectConfig> detection;
  // The site's xid-policy.json beside the SKU files over the built-in XID catalogue (docs/xid.md);
  // null when there is none: the built-in one.
  std::shared_ptr<const XidCatalogue> xid;
  // The site's own checks, `site-checks/*.yaml` beside the SKU files (site_check.h), by name.
  std::vector<SiteCheckSpec> site_checks;
  const SkuConfig* by_name(std::string_view name) const;
};

template <typename T>
struct Loaded {
  std::optional<T> value;
  std::vector<ConfigError> errors;  // all errors found, not just the first
  explicit operator bool() const { return value.has_value() && errors.empty(); }
};

// known_checks: the check names a threshold may name (registry.h known_check_names()); any
// other name is an error, so a misspelt check cannot silently lose its bound.
Loaded<SkuConfig> load_sku_file(const std::string& path, const std::set<std::string>& known_checks);
// Every *.yaml / *.yml in dir, and detection.json, xid-policy.json and site-checks/*.yaml when
// there are; duplicate SKU or site check names and an invalid detection.json, xid-policy.json or
// site check are errors. The site checks' names join `known_checks` for the SKU files.
Loaded<SkuSet> load_sku_dir(const std::string& dir, const std::set<std::string>& known_checks);

// Every *.yaml / *.yml in `dir` (a site-checks directory) as a site check; a missing directory
// is no site checks.
Loaded<std::vector<SiteCheckSpec>> load_site_checks(const std::string& dir);

// What the node looks like, for SKU matching.
struct GpuInventory {
  std::vector<std::string> gpu_names;
  std::vector<unsigned> pci_device_ids;  // same order as gpu_names
  // Which part sits in each slot (NVML index), same order; empty strings where the driver does
  // not say (nvmlDeviceGetSerial: boards with an inforom; nvmlDeviceGetUUID: every GPU).
  std::vector<std::string> serials, uuids;
  // nvmlDeviceGetVbiosVersion per GPU, same order ("" where the driver does not say), and
  // nvmlSystemGetDriverVersion ("580.95.05"; "" when unread): what classes compare.
  std::vector<std::string> vbios;
  std::string driver;
  // The NVML index of each entry: a GPU whose handle fails is left out of the lists above, so
  // position and index differ after it (the report's `gpus` use the index, as the checks do).
  std::vector<int> indices;
};

// First SKU whose name or device id matches every GPU and whose gpu_count equals the count.
// nullptr when none matches (checks that need thresholds then report skipped).
const SkuConfig* detect_sku(const SkuSet& set, const GpuInventory& inv);

}  // namespace vigil
