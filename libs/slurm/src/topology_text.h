#pragma once
// The leaf switch of each node, from switch records: the lines `scontrol show topology` prints
// ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[0-1]") or libslurm's topo_info records. No
// libslurm here: node ranges are expanded by the caller's function (libslurm's hostlist code in
// vigil::slurm, `scontrol show hostnames` in vigil::slurm_cli).
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"

namespace vigil::slurm {

struct SwitchRecord {
  int level = 0;
  std::string name;
  std::string nodes;  // a hostlist expression
};

std::vector<SwitchRecord> parse_switch_lines(const std::string& text);

// The base blocks `scontrol show topology` prints under TopologyPlugin=topology/block (Slurm
// 23.11+), one "BlockName=b1 BlockIndex=0 Nodes=gb-[01-18]" line each (the format of
// _print_topo_record in SchedMD's src/plugins/topology/block/topology_block.c), as level-0
// records named after the block; other lines are skipped.
std::vector<SwitchRecord> parse_block_lines(const std::string& text);

using ExpandHostlist = std::function<Result<std::vector<std::string>>(const std::string& expr)>;

// node -> its level-0 record (leaf switch or block); an error naming `where` when a node is in
// two of them (`kind`: "leaf switches", "blocks").
Result<std::map<std::string, std::string>> leaves_of(const std::vector<SwitchRecord>& records,
                                                     const ExpandHostlist& expand,
                                                     const char* where,
                                                     std::string_view kind = "leaf switches");

}  // namespace vigil::slurm
