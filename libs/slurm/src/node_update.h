#pragma once
// Rules shared by both Slurm backends (libslurm and slurmrestd) for drain / undrain requests:
// what a node name and a reason may contain, how a failing hostlist is named in an error, and how
// a batch with names slurmctld does not know is split. One copy, so both backends refuse and
// report the same things.
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::slurm {

// Node names go into a hostlist expression: characters that hostlist syntax gives a meaning to
// would silently widen or break the request, so they are refused.
VoidResult validate_names(const std::vector<std::string>& nodes, const char* where);
VoidResult validate_reason(const std::string& reason);

// Long hostlists make unreadable errors; the first part identifies the batch well enough.
std::string abbreviate(const std::string& hostlist, size_t nodes);

struct KnownSplit {
  std::vector<std::string> known;
  std::vector<std::string> unknown;
};
// slurmctld stops at the first unknown name, so part of a batch may be applied and the rest not.
// Both backends then apply the action to the known nodes and name the unknown ones.
KnownSplit split_known(const std::vector<std::string>& nodes,
                       const std::vector<SlurmNodeInfo>& in_slurm);
// unknown_list: split.unknown as the backend names them (a hostlist, or a comma list); where: the
// backend's own call, e.g. "slurm_update_node(node_state=DRAIN)".
Error unknown_nodes_error(const KnownSplit& split, const std::string& unknown_list,
                          std::string where);

}  // namespace vigil::slurm
