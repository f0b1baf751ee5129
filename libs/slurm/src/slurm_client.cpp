// LibslurmApi: the real SlurmApi. Reads node states with slurm_load_node and acts with one
// slurm_update_node RPC per (action, reason) over a whole hostlist. It never shells out.
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "libslurm_init.h"
#include "node_update.h"
#include "slurm_compat.h"
#include "vigil/slurm/scontrol.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::slurm {
namespace {

std::string slurm_error_text(int err) {
  std::string text = slurm_strerror(err);
  if (err == SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT ||
      err == SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR ||
      err == SLURM_COMMUNICATIONS_CONNECTION_ERROR || err == SLURMCTLD_COMMUNICATIONS_SEND_ERROR ||
      err == SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR) {
    text += " (is slurmctld running and reachable from this host?)";
  } else if (err == ESLURM_USER_ID_MISSING || err == ESLURM_ACCESS_DENIED) {
    text += " (the drainer must run as root or SlurmUser to change node states)";
  }
  return text + " [slurm errno " + std::to_string(err) + "]";
}

std::string base_state_name(uint32_t state) {
  switch (state & NODE_STATE_BASE) {
    case NODE_STATE_UNKNOWN:
      return "UNKNOWN";
    case NODE_STATE_DOWN:
      return "DOWN";
    case NODE_STATE_IDLE:
      return "IDLE";
    case NODE_STATE_ALLOCATED:
      return "ALLOCATED";
    case NODE_STATE_ERROR:
      return "ERROR";
    case NODE_STATE_MIXED:
      return "MIXED";
    case NODE_STATE_FUTURE:
      return "FUTURE";
    default:
      return "INVALID";
  }
}

std::vector<std::string> split_commas(const char* s) {
  std::vector<std::string> out;
  if (s == nullptr) return out;
  std::string cur;
  for (const char* p = s; *p != '\0'; ++p) {
    if (*p == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

SlurmNodeInfo to_node_info(const node_info_t& n) {
  SlurmNodeInfo info;
  info.name = n.name;
  info.state = base_state_name(n.node_state);
  info.drain = (n.node_state & NODE_STATE_DRAIN) != 0;
  info.down = (n.node_state & NODE_STATE_BASE) == NODE_STATE_DOWN;
  info.fail = (n.node_state & NODE_STATE_FAIL) != 0;
  info.not_responding = (n.node_state & NODE_STATE_NO_RESPOND) != 0;
  info.maint = (n.node_state & NODE_STATE_MAINT) != 0;
  info.reserved = (n.node_state & NODE_STATE_RES) != 0;
  info.completing = (n.node_state & NODE_STATE_COMPLETING) != 0;
  info.reboot_pending =
      (n.node_state & (NODE_STATE_REBOOT_REQUESTED | NODE_STATE_REBOOT_ISSUED)) != 0;
  info.boot_time = static_cast<int64_t>(n.boot_time);
  if (n.reason != nullptr) info.reason = n.reason;
  info.reason_time = static_cast<int64_t>(n.reason_time);
  info.partitions = split_commas(n.partitions);
  if (n.node_addr != nullptr) info.address = n.node_addr;
  if (n.node_hostname != nullptr) info.hostname = n.node_hostname;
  if (n.gres != nullptr) info.gres = n.gres;
  // node_info_t.features_act: the active features (slurm.h), a comma-separated list or NULL.
  if (n.features_act != nullptr) info.features = split_feature_list(n.features_act);
  return info;
}

class LibslurmApi final : public SlurmApi {
 public:
  explicit LibslurmApi(std::string conf_path) : conf_path_(std::move(conf_path)) {}

  Result<std::vector<SlurmNodeInfo>> load_nodes() override {
    std::lock_guard<std::mutex> lock(libslurm_mutex());
    if (auto init = ensure_libslurm_initialized(conf_path_); !init.ok()) return init.error();
    return load_nodes_locked();
  }

  VoidResult drain(const std::vector<std::string>& nodes, const std::string& reason) override {
    if (nodes.empty()) return ok_result();
    if (auto names = validate_names(nodes, "drain"); !names.ok()) return names.error();
    if (auto text = validate_reason(reason); !text.ok()) return text.error();
    return update(nodes, NODE_STATE_DRAIN, &reason, "DRAIN");
  }

  VoidResult undrain(const std::vector<std::string>& nodes) override {
    if (nodes.empty()) return ok_result();
    if (auto names = validate_names(nodes, "undrain"); !names.ok()) return names.error();
    return update(nodes, NODE_STATE_UNDRAIN, nullptr, "UNDRAIN");
  }

  Result<int64_t> resume_timeout_s() override {
    std::lock_guard<std::mutex> lock(libslurm_mutex());
    if (auto init = ensure_libslurm_initialized(conf_path_); !init.ok()) return init.error();
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS || conf == nullptr)
      return Error{slurm_error_text(compat::last_error()), "slurm_load_ctl_conf"};
    const int64_t t = conf->resume_timeout;
    compat::free_ctl_conf(conf);
    return t;
  }

  // libslurm has no public call that asks for a reboot (scontrol sends the RPC with internal
  // symbols): scontrol of the same installation does it (scontrol_client.cpp).
  VoidResult reboot(const std::vector<std::string>& nodes, const std::string& reason) override {
    return make_scontrol_api(conf_path_)->reboot(nodes, reason);
  }

 private:
  // Called with libslurm_mutex() held and libslurm initialised.
  Result<std::vector<SlurmNodeInfo>> load_nodes_locked() {
    node_info_msg_t* nodes = nullptr;
    if (slurm_load_node(0, &nodes, SHOW_ALL) != SLURM_SUCCESS) {
      return Error{slurm_error_text(compat::last_error()), "slurm_load_node(SHOW_ALL)"};
    }
    std::unique_ptr<node_info_msg_t, void (*)(node_info_msg_t*)> nodes_guard(
        nodes, slurm_free_node_info_msg);
    // Partitions are optional data: without them the node states are still right.
    partition_info_msg_t* parts = nullptr;
    if (slurm_load_partitions(0, &parts, SHOW_ALL) == SLURM_SUCCESS && parts != nullptr) {
      slurm_populate_node_partitions(nodes, parts);
      slurm_free_partition_info_msg(parts);
    }
    std::vector<SlurmNodeInfo> out;
    out.reserve(nodes->record_count);
    for (uint32_t i = 0; i < nodes->record_count; ++i) {
      const node_info_t& n = nodes->node_array[i];
      if (n.name == nullptr) continue;  // hidden / unused slot
      out.push_back(to_node_info(n));
    }
    // The reservations' names, for Vigil's holds (slurm_api.h vigil_hold): 22.05's node_info_t
    // does not name a node's reservation. Unreadable: no node counts as held.
    reserve_info_msg_t* resv = nullptr;
    if (slurm_load_reservations(0, &resv) == SLURM_SUCCESS && resv != nullptr) {
      std::vector<std::string> names;
      for (uint32_t i = 0; i < resv->record_count; ++i)
        if (resv->reservation_array[i].name) names.emplace_back(resv->reservation_array[i].name);
      slurm_free_reservation_info_msg(resv);
      mark_holds(out, names);
    }
    return out;
  }

  // Called with libslurm_mutex() held. Returns the Slurm errno, SLURM_SUCCESS on success.
  static int send_update(const std::string& hostlist, uint32_t state, const std::string* reason) {
    update_node_msg_t msg;
    slurm_init_update_node_msg(&msg);
    std::string names = hostlist;  // libslurm takes char*; keep our strings untouched
    std::string reason_copy = reason != nullptr ? *reason : std::string();
    msg.node_names = names.data();
    msg.node_state = state;
    if (reason != nullptr) msg.reason = reason_copy.data();
    if (slurm_update_node(&msg) == SLURM_SUCCESS) return SLURM_SUCCESS;
    int err = compat::last_error();
    return err == SLURM_SUCCESS ? SLURM_ERROR : err;
  }

  VoidResult update(const std::vector<std::string>& nodes, uint32_t state,
                    const std::string* reason, const char* state_name) {
    const std::string hostlist = to_hostlist(nodes);
    const std::string where = std::string("slurm_update_node(node_names=") +
                              abbreviate(hostlist, nodes.size()) + ", node_state=" + state_name +
                              ")";
    if (hostlist.empty()) return Error{"could not build a hostlist", where};
    std::lock_guard<std::mutex> lock(libslurm_mutex());
    if (auto init = ensure_libslurm_initialized(conf_path_); !init.ok()) return init.error();
    const int err = send_update(hostlist, state, reason);
    if (err == SLURM_SUCCESS) return ok_result();
    if (err != ESLURM_INVALID_NODE_NAME || nodes.size() < 2) {
      return Error{slurm_error_text(err), where};
    }
    // slurmctld stops at the first unknown name, so part of the batch may be applied and the
    // rest not. Apply the action to every known node and name the unknown ones in the error,
    // so one stale name cannot hold a whole batch back.
    return retry_known_nodes(nodes, state, reason, state_name);
  }

  VoidResult retry_known_nodes(const std::vector<std::string>& nodes, uint32_t state,
                               const std::string* reason, const char* state_name) {
    auto all = load_nodes_locked();
    if (!all.ok()) return all.error();
    KnownSplit split = split_known(nodes, *all);
    if (!split.known.empty()) {
      const std::string hostlist = to_hostlist(split.known);
      if (int err = send_update(hostlist, state, reason); err != SLURM_SUCCESS) {
        return Error{slurm_error_text(err) + "; unknown node(s) " + to_hostlist(split.unknown),
                     std::string("slurm_update_node(node_names=") +
                         abbreviate(hostlist, split.known.size()) + ", node_state=" + state_name +
                         ")"};
      }
    }
    return unknown_nodes_error(split, to_hostlist(split.unknown),
                               std::string("slurm_update_node(node_state=") + state_name + ")");
  }

  std::string conf_path_;
};

}  // namespace

std::unique_ptr<SlurmApi> make_libslurm_api(const std::string& conf_path) {
  return std::make_unique<LibslurmApi>(conf_path);
}

}  // namespace vigil::slurm
