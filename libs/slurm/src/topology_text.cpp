#include "topology_text.h"

#include <cstdlib>
#include <sstream>

namespace vigil::slurm {

namespace {

// The records of one kind of `scontrol show topology` line: `name_key` ("SwitchName=",
// "BlockName=") names the record; a switch line also needs its Level=, a block line its Nodes=.
std::vector<SwitchRecord> parse_records(const std::string& text, std::string_view name_key,
                                        bool needs_level) {
  std::vector<SwitchRecord> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    SwitchRecord r;
    r.level = needs_level ? -1 : 0;
    for (std::string w; words >> w;) {
      if (w.starts_with(name_key)) r.name = w.substr(name_key.size());
      if (needs_level && w.starts_with("Level=")) r.level = std::atoi(w.c_str() + 6);
      if (w.starts_with("Nodes=")) r.nodes = w.substr(6);
    }
    if (!r.name.empty() && r.level >= 0 && (needs_level || !r.nodes.empty()))
      out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<SwitchRecord> parse_switch_lines(const std::string& text) {
  return parse_records(text, "SwitchName=", true);
}

std::vector<SwitchRecord> parse_block_lines(const std::string& text) {
  return parse_records(text, "BlockName=", false);
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
