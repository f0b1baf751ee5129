// load_leaf_switches(): Slurm's tree topology through slurm_load_topo (no scontrol parsing).
#include <slurm/slurm.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hostlist.h"
#include "libslurm_init.h"
#include "slurm_compat.h"
#include "vigil/slurm/slurm_topology.h"

namespace vigil::slurm {

Result<std::map<std::string, std::string>> load_leaf_switches(const std::string& conf_path) {
  std::lock_guard<std::mutex> lock(libslurm_mutex());
  if (auto init = ensure_libslurm_initialized(conf_path); !init.ok()) return init.error();
  topo_info_response_msg_t* msg = nullptr;
  if (slurm_load_topo(&msg) != SLURM_SUCCESS) {
    const int err = compat::last_error();
    return Error{std::string(slurm_strerror(err)) + " [slurm errno " + std::to_string(err) +
                     "] (is slurmctld running and reachable from this host?)",
                 "slurm_load_topo"};
  }
  // No topology plugin that keeps switches (topology/flat or none): an empty reply, or none.
  if (msg == nullptr) return std::map<std::string, std::string>{};
  std::unique_ptr<topo_info_response_msg_t, void (*)(topo_info_response_msg_t*)> guard(
      msg, slurm_free_topo_info_msg);
  std::map<std::string, std::string> leaf_of;
  for (const compat::SwitchRecord& s : compat::switch_records(msg)) {
    if (s.level != 0) continue;
    for (const std::string& node : expand_hostlist(s.nodes.c_str())) {
      auto [it, added] = leaf_of.emplace(node, s.name);
      if (!added && it->second != s.name)
        return Error{
            "node " + node + " hangs from two leaf switches (" + it->second + ", " + s.name + ")",
            "slurm_load_topo"};
    }
  }
  return leaf_of;
}

}  // namespace vigil::slurm
