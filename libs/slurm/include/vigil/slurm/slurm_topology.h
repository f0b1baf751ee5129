#pragma once
// Slurm's switch tree (TopologyPlugin=topology/tree, topology.conf) read through libslurm's
// slurm_load_topo, the same records `scontrol show topology` prints: which leaf switch (level 0)
// each node hangs from. `vigil-check fabric --topology slurm` judges its pairs with it
// (docs/fabric.md). Release differences live in src/slurm_compat.h.
#include <map>
#include <string>

#include "vigil/base/result.h"

namespace vigil::slurm {

// node -> leaf switch. Empty when the cluster has no tree topology (no switch records). An
// error when slurmctld cannot be reached, or when a node hangs from two leaf switches (a
// topology Vigil cannot judge). conf_path: slurm.conf (empty: SLURM_CONF / default).
Result<std::map<std::string, std::string>> load_leaf_switches(const std::string& conf_path = "");

}  // namespace vigil::slurm
