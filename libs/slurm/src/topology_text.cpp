#include "topology_text.h"

#include <cstdlib>
#include <sstream>

namespace vigil::slurm {

std::vector<SwitchRecord> parse_switch_lines(const std::string& text) {
  std::vector<SwitchRecord> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    SwitchRecord r;
    r.level = -1;
    for (std::string w; words >> w;) {
      if (w.starts_with("SwitchName=")) r.name = w.substr(11);
      if (w.starts_with("Level=")) r.level = std::atoi(w.c_str() + 6);
      if (w.starts_with("Nodes=")) r.nodes = w.substr(6);
    }
    if (!r.name.empty() && r.level >= 0) out.push_back(std::move(r));
  }
  return out;
}

std::vector<SwitchRecord> parse_block_lines(const std::string& text) {
  std::vector<SwitchRecord> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    SwitchRecord r;
    for (std::string w; words >> w;) {
      if (w.starts_with("BlockName=")) r.name = w.substr(10);
      if (w.starts_with("Nodes=")) r.nodes = w.substr(6);
    }
    if (!r.name.empty() && !r.nodes.empty()) out.push_back(std::move(r));
  }
  return out;
}

Result<std::map<std::string, std::string>> leaves_of(const std::vector<SwitchRecord>& records,
                                                     const ExpandHostlist& expand,
                                                     const char* where, std::string_view kind) {
  std::map<std::string, std::string> leaf_of;
  for (const SwitchRecord& s : records) {
    if (s.level != 0) continue;
    auto nodes = expand(s.nodes);
    if (!nodes.ok()) return nodes.error();
    for (const std::string& node : *nodes) {
      auto [it, added] = leaf_of.emplace(node, s.name);
      if (!added && it->second != s.name)
        return Error{
            (kind == "leaf switches" ? "node " + node + " hangs from two leaf switches ("
                                     : "node " + node + " is in two " + std::string(kind) + " (") +
                it->second + ", " + s.name + ")",
            where};
    }
  }
  return leaf_of;
}

}  // namespace vigil::slurm
