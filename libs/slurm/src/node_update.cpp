#include "node_update.h"

#include <unordered_set>

#include "vigil/base/slurm_names.h"

namespace vigil::slurm {

VoidResult validate_names(const std::vector<std::string>& nodes, const char* where) {
  for (const std::string& n : nodes) {
    bool bad = n.empty();
    for (unsigned char c : n) {
      if (c <= ' ' || c >= 0x7f || c == ',' || c == '[' || c == ']') bad = true;
    }
    if (bad) {
      return Error{
          "invalid node name '" + n + "' (empty, whitespace, control or hostlist character)",
          where};
    }
    // Refused here, for every caller and backend: slurm_update_node and scontrol read "ALL"
    // as every node of the cluster.
    if (auto why = slurm_name_problem(n)) return Error{"invalid node name: " + *why, where};
  }
  return ok_result();
}

VoidResult validate_reason(const std::string& reason) {
  if (reason.empty()) return Error{"empty drain reason (Slurm requires one)", "drain"};
  for (unsigned char c : reason) {
    if (c < 0x20 || c == 0x7f) {
      return Error{"drain reason contains a control character; build it with vigil::slurm_reason",
                   "drain"};
    }
  }
  return ok_result();
}

std::string abbreviate(const std::string& hostlist, size_t nodes) {
  constexpr size_t kMax = 120;
  if (hostlist.size() <= kMax) return hostlist;
  return hostlist.substr(0, kMax) + "... (" + std::to_string(nodes) + " nodes)";
}

KnownSplit split_known(const std::vector<std::string>& nodes,
                       const std::vector<SlurmNodeInfo>& in_slurm) {
  std::unordered_set<std::string> names;
  for (const SlurmNodeInfo& info : in_slurm) names.insert(info.name);
  KnownSplit split;
  for (const std::string& n : nodes) (names.count(n) ? split.known : split.unknown).push_back(n);
  return split;
}

Result<std::vector<SlurmNodeInfo>> SlurmApi::load_nodes_named(
    const std::vector<std::string>& nodes) {
  if (auto names = validate_names(nodes, "load_nodes_named"); !names.ok()) return names.error();
  VIGIL_TRY(auto all, load_nodes());
  const std::unordered_set<std::string> wanted(nodes.begin(), nodes.end());
  std::erase_if(all, [&](const SlurmNodeInfo& n) { return !wanted.count(n.name); });
  return all;
}

VoidResult SlurmApi::reboot(const std::vector<std::string>& nodes, const std::string&) {
  if (nodes.empty()) return ok_result();
  return Error{"this Slurm backend cannot reboot nodes (slurmrestd has no reboot operation)",
               "reboot"};
}

Result<int64_t> SlurmApi::resume_timeout_s() {
  return Error{"this Slurm backend cannot read slurmctld's configuration (slurmrestd)",
               "ResumeTimeout"};
}

Error unknown_nodes_error(const KnownSplit& split, const std::string& unknown_list,
                          std::string where) {
  return Error{"node(s) " + abbreviate(unknown_list, split.unknown.size()) +
                   " unknown to slurmctld (check the node names in the reports); applied to the "
                   "other " +
                   std::to_string(split.known.size()) + " node(s)",
               std::move(where)};
}

}  // namespace vigil::slurm
