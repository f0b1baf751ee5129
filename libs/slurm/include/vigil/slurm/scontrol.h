#pragma once
// SlurmApi over the `scontrol` command, for the binary slurmd runs as Prolog, Epilog and
// HealthCheckProgram (vigil-check): scontrol is always the node's own Slurm release, so the hook
// needs no libslurm.so.NN of one release (a DT_NEEDED libslurm.so.38 makes the loader exit 127
// before main on a Slurm 24.11 node: a failed Prolog). The drainer keeps
// libslurm or slurmrestd (vigil::slurm): it talks to slurmctld all day and is built per release.
//
// Node table: `scontrol -o show node` (one line per node, stable across 22.05-26.05; the JSON
// output's schema changes with every data_parser version). Drain: `scontrol update
// NodeName=a,b State=DRAIN Reason=...`; it never lifts a drain (undrain is an error: see
// scontrol_client.cpp). Topology: `scontrol show topology`, node ranges expanded with
// `scontrol show hostnames`.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::slurm {

// conf_path: slurm.conf to use (SLURM_CONF for scontrol; empty: the caller's environment).
// scontrol is found in PATH.
std::unique_ptr<SlurmApi> make_scontrol_api(const std::string& conf_path = "");

// Pure: the nodes in `scontrol -o show node` text. A line without NodeName= is an error naming it.
// `Reason=... [user@2026-11-26T05:00:00]`: the bracket gives reason_time (local time, as scontrol
// prints it).
Result<std::vector<SlurmNodeInfo>> nodes_from_scontrol(const std::string& text);

// `scontrol show config` as key -> value (cgroup.conf's part included): "(null)" reads as empty;
// Slurm 24.11 and later print several Prolog/Epilog scripts as Prolog[0], Prolog[1]: those are
// joined with ",".
std::map<std::string, std::string> config_from_scontrol(std::string_view text);

// node -> leaf switch through scontrol (see slurm_topology.h for the meaning and errors).
Result<std::map<std::string, std::string>> load_leaf_switches_scontrol(
    const std::string& conf_path = "");

}  // namespace vigil::slurm
