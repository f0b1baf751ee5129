#pragma once
// Hardware classes learned from Slurm and the fleet (docs/thresholds.md
// "Classes"). A SKU file guesses a GPU model's node (8 GPUs, 8 InfiniBand ports at 400 Gb/s for
// any H100); the site's own declaration says what each node is: its Slurm Gres ("gpu:h100:4")
// and its active features ("ib,ndr" or "roce"), which slurm.conf gives every node and which users
// already select nodes by. A class is the nodes that share the checker's SKU, their Gres and their
// active features. Inside a class the drainer learns, from the latest report of every node, the
// consensus of each inventory figure (kInventoryFigures). A node below a strong consensus of the
// OTHER nodes of its class fails that check with VIGIL-CLASS-BELOW; a class's own configuration
// (every node has 4 GPUs, or no InfiniBand, or ports at 200 Gb/s) never fails anyone, and above
// the consensus is never a fault.
//
// Pure: no I/O, no clock; time comes in as Unix seconds. Not persisted: after a restart the
// consensus is learned again from the next reports, and until min_nodes other nodes of a class
// have reported, only what the site declares (ClassSettings::declared) is judged.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/drainer/config.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

inline constexpr std::string_view kClassBelowFaultCode = "VIGIL-CLASS-BELOW";
inline constexpr std::string_view kClassVersionFaultCode = "VIGIL-CLASS-VERSION";
// The result the drainer adds to a report with versions (`vigil-check run`'s; the hooks' carry
// none): its own check, so that a node drained for a version is resumed only by reports that
// compared versions again, never by the hooks' passing gpu_count or ib_port.
inline constexpr std::string_view kClassVersionCheck = "class_version";
// A node whose units run different versions teaches its class this, not a version.
inline constexpr std::string_view kMixedVersions = "(mixed)";

// A figure of a node's inventory: what a healthy node of its class has as many of as its peers.
// Per-unit figures (per GPU or port) are reduced to the node's lowest one.
struct InventoryFigure {
  std::string_view check;
  std::string_view measurement;
  bool per_unit;
  // Per-unit only: units whose figure is 0 are left out (a port that is not ACTIVE reports rate
  // 0; its fault is "down", which ib_port's port_active judges on its own).
  bool skip_zero;
};
// gpu_count (GPUs NVML lists), ib_port active_ports and the lowest port_rate of an active port,
// nvml_nvlink's lowest nvlink_link_count of a GPU (NVML_FI_DEV_NVLINK_LINK_COUNT) and nvml_pcie's
// lowest current pcie_link_width. Not pcie_link_gen: GPUs lower their PCIe generation at idle
// (nvml_pcie.cpp), so the figure says nothing about the hardware.
inline constexpr InventoryFigure kInventoryFigures[] = {
    {"gpu_count", "gpu_count", false, false},
    {"ib_port", "active_ports", false, false},
    {"ib_port", "port_rate", true, true},
    {"nvml_nvlink", "nvlink_link_count", true, false},
    {"nvml_pcie", "pcie_link_width", true, false},
};

// The versions a node runs, from the report's `driver`, `gpus` and `nics`: figure -> one
// (unit, version) per unit. Figures: "driver" (unit "node"), "vbios" (units "gpu0".."gpuN") and
// "nic_firmware <board_id>" (units "mlx5_0"...; NICs of one board, the PSID, run one firmware
// line: a ConnectX-7 and a storage ConnectX-6 on one node are two figures). Units the report
// gives no version for are left out.
struct UnitVersion {
  std::string unit;
  std::string version;
};
std::map<std::string, std::vector<UnitVersion>> versions_of(const NodeReport& report);
// The check a version figure's verdict is folded into: class_version, for every figure.
std::string_view version_check(std::string_view figure);
// What `classes.declared` may name: an inventory figure ("ib_port/active_ports", a number) or a
// version figure ("driver", "vbios", "nic_firmware <board_id>", a version).
bool is_inventory_figure(std::string_view figure);
bool is_version_figure(std::string_view figure);

// What Slurm declares a node to be: "gpu:8 [ib,ndr]", its Gres without socket bindings
// ("(S:0-1)"; "no-gres" when it has none) and its active features, sorted.
std::string declaration(const slurm::SlurmNodeInfo& info);
// The class a node belongs to: "H100-SXM5-80GB gpu:8 [ib,ndr]" (SKU and declaration); "" when
// Slurm does not know the node (no class: the node is neither judged nor learned from).
std::string class_name(const std::string& sku, const slurm::SlurmNodeInfo* info);

// The node's inventory figures in `report` (checks that are pass, warn or fail), keyed
// "check/measurement".
std::map<std::string, double> inventory_of(const NodeReport& report);

struct ClassVerdict {
  std::string check;
  std::string measurement;
  // fail (VIGIL-CLASS-BELOW, or VIGIL-CLASS-VERSION for a node whose units disagree where its
  // class runs one version), warn (VIGIL-CLASS-VERSION: the whole node runs another version, as
  // a node updated ahead of its class does), or pass (a version figure compared, no finding).
  Status status = Status::kFail;
  std::string_view fault_code = kClassBelowFaultCode;
  double value = 0;      // the node's figure
  double consensus = 0;  // what the class has
  int agree = 0;         // other nodes of the class with exactly the consensus
  int nodes = 0;         // other nodes of the class with the figure
  std::string message;   // "active_ports 7, its class has 8 on 41 of 42 nodes"
};

struct ClassSummary {
  std::string name;
  int nodes = 0;
  // "check/measurement" -> the consensus value, where one holds.
  std::map<std::string, double> consensus;
  // version figure ("driver", "vbios", "nic_firmware MT_0000000838") -> the consensus version.
  std::map<std::string, std::string> versions;
  // What the site declares for the class (classes.declared), listed even when no node of the
  // class has reported (nodes 0: a name no node matches, a typo, shows so).
  ClassSettings::Declared declared;
};

class ClassInventory {
 public:
  explicit ClassInventory(ClassSettings settings) : settings_(settings) {}

  // The report's inventory against what the site declares for class `cls`, else the consensus of
  // its other nodes (one verdict per figure below it, and one per version figure compared), a
  // consensus judged only once the nodes with the figure (this one included) are at
  // least min_share of the `declared` nodes Slurm declares alike: a class whose nodes have not
  // all reported yet (after a restart, say) may hold a second configuration Slurm does not tell
  // apart, and its first reporters must not outvote it. Then, when `learn`, the figures become the
  // node's latest (figures the report lacks keep their last value). An empty `cls` (Slurm does not
  // know the node, or could not be read) judges and learns nothing. Nodes not heard from for
  // forget_after_s are dropped first.
  std::vector<ClassVerdict> judge(const NodeReport& report, const std::string& cls, int declared,
                                  std::int64_t now, bool learn);

  // Each class with its nodes and the consensus of each figure where one holds (no node left
  // out), for GET /v1/classes.
  std::vector<ClassSummary> summary() const;
  std::size_t nodes() const { return nodes_.size(); }

 private:
  template <typename V>
  struct Consensus {
    V value{};
    int agree = 0;
    int nodes = 0;
    bool declared = false;  // the site's value (ClassSettings::declared), not the fleet's
  };
  struct Entry {
    std::string cls;
    std::int64_t at = 0;
    std::map<std::string, double> figures;
    std::map<std::string, std::string> versions;  // figure -> the node's most common version
  };
  // figure value -> nodes with it, per (class, figure)
  template <typename V>
  using Tallies = std::map<std::pair<std::string, std::string>, std::map<V, int>>;
  // The consensus of `figure` in `cls` among its nodes, less one node's own value when given.
  template <typename V>
  std::optional<Consensus<V>> consensus(const Tallies<V>& tallies, const std::string& cls,
                                        const std::string& figure, const V* own) const;
  template <typename V>
  bool covers(const Consensus<V>& c, int declared) const;
  // What a node's figure is judged against: the site's declared value, else the consensus of
  // the other nodes when it covers the `declared` nodes Slurm declares alike.
  template <typename V>
  std::optional<Consensus<V>> reference(const Tallies<V>& tallies,
                                        const std::map<std::string, V>* site,
                                        const std::string& cls, const std::string& figure,
                                        const std::map<std::string, V>* own, int declared) const;
  const ClassSettings::Declared* declared_for(const std::string& cls) const;
  void judge_versions(const NodeReport& report, const std::string& cls, int declared,
                      const Entry* own, std::vector<ClassVerdict>& out) const;
  void learn(const NodeReport& report, const std::string& cls, std::int64_t now, bool known);
  void forget(const std::string& node);
  void forget_old(std::int64_t now);

  ClassSettings settings_;
  std::map<std::string, Entry> nodes_;
  Tallies<double> tallies_;
  Tallies<std::string> version_tallies_;
  std::int64_t last_sweep_ = 0;
};

// Folds the verdicts into the report the policy decides on: for a failing verdict the check
// becomes `fail` with the verdict's code and message, unless it already fails with a code that
// drains as soon or sooner under `policy` (a fatal finding is never weakened); a warning verdict
// turns a passing check into `warn`. error and skipped results are never touched.
void fold_class_verdicts(NodeReport& report, const std::vector<ClassVerdict>& verdicts,
                         const PolicyConfig& policy);

}  // namespace vigil::drainer
