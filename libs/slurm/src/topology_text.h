#pragma once
// The leaf switch of each node, from switch records: the lines `scontrol show topology` prints
// ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[0-1]") or libslurm's topo_info records. No
// libslurm here: node ranges are expanded by the caller's function (libslurm's hostlist code in
// vigil::slurm, `scontrol show hostnames` in vigil::slurm_cli).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "vigil/base/result.h"

namespace vigil::slurm {

struct SwitchRecord {
  int level = 0;
  std::string name;
  std::string nodes;  // a hostlist expression
};

std::vector<SwitchRecord> parse_switch_lines(const std::string& text);

using ExpandHostlist = std::function<Result<std::vector<std::string>>(const std::string& expr)>;

// node -> its level-0 switch; an error naming `where` when a node hangs from two leaf switches.
Result<std::map<std::string, std::string>> leaves_of(const std::vector<SwitchRecord>& records,
                                                     const ExpandHostlist& expand,
                                                     const char* where);

}  // namespace vigil::slurm
