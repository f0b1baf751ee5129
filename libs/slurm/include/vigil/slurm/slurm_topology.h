#pragma once
// Slurm's switch tree (TopologyPlugin=topology/tree, topology.conf): which leaf switch (level 0)
// each node hangs from. Read through libslurm's slurm_load_topo up to 23.02 and through
// `scontrol show topology` on 24.11, where libslurm cannot unpack the reply (src/slurm_compat.h).
// `vigil-check fabric --topology slurm` judges its pairs with it (docs/fabric.md).
#include <map>
#include <string>

#include "vigil/base/result.h"

namespace vigil::slurm {

// node -> leaf switch. Empty when the cluster has no tree topology (no switch records). An
// error when slurmctld cannot be reached, or when a node hangs from two leaf switches (a
// topology Vigil cannot judge). conf_path: slurm.conf (empty: SLURM_CONF / default).
Result<std::map<std::string, std::string>> load_leaf_switches(const std::string& conf_path = "");

// The same map from the text `scontrol show topology` prints (one "SwitchName=... Level=...
// Nodes=..." line per switch; other lines are skipped), with the same error for a node under two
// leaf switches.
Result<std::map<std::string, std::string>> leaf_switches_from_scontrol(const std::string& text);

// Slurm's blocks (TopologyPlugin=topology/block, Slurm 23.11+): node -> its base block, read
// from `scontrol show topology` on every release (libslurm's topology reply is plugin-specific
// from 23.11 on). On GB200/GB300 NVL72 clusters a block is one NVLink domain: SchedMD's topology
// guide describes topology/block for such racks, and CoreWeave's SUNK writes one block per
// NVLink domain from the node's `ds.coreweave.com/nvlink.domain` label (CoreWeave docs, "Topology/
// Block Scheduling in Slurm"). vigil-submit --nvlink-domains slurm groups its domain jobs by it
// (docs/fabric.md). Empty when Slurm has no blocks; an error when slurmctld cannot be reached or a
// node is in two blocks.
Result<std::map<std::string, std::string>> load_blocks(const std::string& conf_path = "");

// The same map from `scontrol show topology` text.
Result<std::map<std::string, std::string>> blocks_from_scontrol(const std::string& text);

}  // namespace vigil::slurm
