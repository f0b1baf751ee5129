// load_leaf_switches(): Slurm's tree topology, through slurm_load_topo up to 23.02 and through
// `scontrol show topology` on 24.11 (why: slurm_compat.h, kTopologyThroughScontrol).
#include <slurm/slurm.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "hostlist.h"
#include "libslurm_init.h"
#include "slurm_compat.h"
#include "topology_text.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/slurm/slurm_topology.h"

namespace vigil::slurm {

namespace {

constexpr const char* kWhere = "load_leaf_switches";

// The text of `scontrol show topology`.
Result<std::string> scontrol_topology(const std::string& conf_path, const char* where = kWhere) {
  LaunchOptions o;
  o.timeout = std::chrono::seconds(30);
  if (!conf_path.empty()) o.env.emplace_back("SLURM_CONF", conf_path);
  auto run = run_command({"scontrol", "show", "topology"}, o);
  if (!run.ok()) return Error{run.error().message, where};
  if (run->exit_code != 0 || run->timed_out) {
    const std::string why = run->timed_out ? "timed out after 30 s" : tail_lines(run->err, 3);
    return Error{"`scontrol show topology` failed (exit " + std::to_string(shell_status(*run)) +
                     "): " + why + " (is slurmctld running and reachable from this host?)",
                 where};
  }
  return run->out;
}

Result<std::vector<SwitchRecord>> records_from_scontrol(const std::string& conf_path) {
  VIGIL_TRY(auto text, scontrol_topology(conf_path));
  return parse_switch_lines(text);
}

Result<std::vector<SwitchRecord>> records_from_libslurm(const std::string& conf_path) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
  (void)conf_path;
  return Error{"slurm_load_topo is not used on this release", kWhere};
#else
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
  if (msg == nullptr) return std::vector<compat::SwitchRecord>{};
  std::unique_ptr<topo_info_response_msg_t, void (*)(topo_info_response_msg_t*)> guard(
      msg, slurm_free_topo_info_msg);
  return compat::switch_records(msg);
#endif
}

Result<std::map<std::string, std::string>> leaves_of(const std::vector<SwitchRecord>& records,
                                                     const char* where = kWhere,
                                                     std::string_view kind = "leaf switches") {
  return slurm::leaves_of(
      records,
      [](const std::string& expr) -> Result<std::vector<std::string>> {
        return expand_hostlist(expr.c_str());
      },
      where, kind);
}

constexpr const char* kBlocksWhere = "load_blocks";

}  // namespace

Result<std::map<std::string, std::string>> leaf_switches_from_scontrol(const std::string& text) {
  return leaves_of(parse_switch_lines(text));
}

Result<std::map<std::string, std::string>> blocks_from_scontrol(const std::string& text) {
  return leaves_of(parse_block_lines(text), kBlocksWhere, "blocks");
}

Result<std::map<std::string, std::string>> load_blocks(const std::string& conf_path) {
  VIGIL_TRY(auto text, scontrol_topology(conf_path, kBlocksWhere));
  return blocks_from_scontrol(text);
}

Result<std::map<std::string, std::string>> load_leaf_switches(const std::string& conf_path) {
  auto records = compat::kTopologyThroughScontrol ? records_from_scontrol(conf_path)
                                                  : records_from_libslurm(conf_path);
  if (!records.ok()) return records.error();
  return leaves_of(*records);
}

}  // namespace vigil::slurm
