#pragma once
// The interface every Slurm backend implements, so the drainer, the hooks and tests can swap
// them: libslurm (slurm_client.cpp: slurm_load_node / slurm_update_node), slurmrestd
// (rest_client.cpp, slurm_rest.h) and scontrol (scontrol_client.cpp, scontrol.h; never lifts
// drains). Every backend refuses a name Slurm would read as more than one node (validate_names).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"

namespace vigil::slurm {

struct SlurmNodeInfo {
  std::string name;
  std::string state;   // base state as Slurm prints it: IDLE, ALLOCATED, MIXED, DOWN, ...
  bool drain = false;  // DRAIN flag set (DRAINING or DRAINED)
  bool down = false;   // base state DOWN
  bool fail = false;   // FAIL flag
  bool not_responding = false;
  bool maint = false;           // MAINT flag (reservation)
  bool reserved = false;        // RESERVED flag
  bool completing = false;      // COMPLETING flag: a job's processes are still being cleaned up
  bool reboot_pending = false;  // REBOOT_REQUESTED or REBOOT_ISSUED (someone asked already)
  int64_t boot_time = 0;        // when slurmd says the node booted (Unix seconds); 0: unknown
  std::string reason;           // current reason, empty if none
  int64_t reason_time = 0;      // when the reason was set (Unix seconds); 0: unknown
  std::vector<std::string> partitions;
  // NodeAddr and NodeHostname as slurm.conf (or slurmctld's node table) has them; what the
  // drainer's `auth: munge` resolves to tell which addresses may speak for the node.
  std::string address;
  std::string hostname;
  // The node's generic resources as Slurm prints them ("gpu:8", "gpu:h100:8(S:0-1)"; empty when
  // none). gpu_count() reads the GPUs out of it.
  std::string gres;
  // The node's active features (slurm.conf NodeName=... Features=, or changeable features a
  // NodeFeatures plugin activated), one per entry, as Slurm lists them; empty when none. What
  // the site declares a node to be: the drainer's hardware classes (drainer classes.h).
  std::vector<std::string> features;
  // A reservation named kHoldReservationPrefix + name exists: vigil-submit holds the node for a
  // re-check (docs/recheck.md "The hold"). For the seconds between its UNDRAIN and the
  // allocation the node is not drained; held_by_vigil() (reason.h) tells that apart from a drain
  // someone lifted.
  bool vigil_hold = false;
};

// The reservation a held re-check of node N creates: kHoldReservationPrefix + N.
inline constexpr const char* kHoldReservationPrefix = "vigil-hold-";

// Sets vigil_hold on every node whose hold reservation is among `reservations` (their names).
void mark_holds(std::vector<SlurmNodeInfo>& nodes, const std::vector<std::string>& reservations);

// The GPUs in a node's Gres ("gpu:8" -> 8, "gpu:h100:4(S:0),gpu:a100:2" -> 6, "(null)" -> 0):
// what an allocation must ask for (--gres=gpu:N) to hold every GPU of the node.
int gpu_count(const std::string& gres);
// The physical GPUs a node's Gres says it has, as NVML lists them (gpu_count's expectation), or
// 0 when it does not say: no GPU, or MIG slices as GRES (a type named after a MIG profile,
// "gpu:a100_1g.5gb:7": Slurm's gres.html "MIG Support"), whose count is not the GPUs'.
int physical_gpu_count(const std::string& gres);
// "ib,ndr" -> {"ib", "ndr"}; "(null)" and "" -> {} (how scontrol and libslurm say "none").
std::vector<std::string> split_feature_list(const std::string& list);

class SlurmApi {
 public:
  virtual ~SlurmApi() = default;
  virtual Result<std::vector<SlurmNodeInfo>> load_nodes() = 0;
  // The current state of `nodes` only, for the re-check right before acting (never older than
  // the call); names Slurm does not know are missing from the result. Default: the whole table,
  // filtered. The REST backend reads a few nodes one by one instead of the whole table.
  virtual Result<std::vector<SlurmNodeInfo>> load_nodes_named(
      const std::vector<std::string>& nodes);
  // One RPC for all nodes (hostlist in node_names). reason is used verbatim (already sanitized).
  virtual VoidResult drain(const std::vector<std::string>& nodes, const std::string& reason) = 0;
  // UNDRAIN: clears the drain flag only, so a DOWN node never becomes IDLE.
  virtual VoidResult undrain(const std::vector<std::string>& nodes) = 0;
  // `scontrol reboot reason=REASON NODES` semantics (no ASAP, no nextstate): slurmctld runs
  // the RebootProgram on each node once it is idle; a drained node keeps its drain, and its
  // reason (REASON, to which Slurm appends " : reboot issued"), after it registers with a new
  // boot time (measured on Slurm 22.05, docs/repair.md). Default: refused, for a backend that
  // cannot (slurmrestd has no reboot operation).
  virtual VoidResult reboot(const std::vector<std::string>& nodes, const std::string& reason);
  // slurm.conf's ResumeTimeout in seconds: how long slurmctld waits for a node it reboots before
  // it marks it DOWN "reboot timed out" (slurm.conf(5); default 60). Default: an error, for a
  // backend that cannot read slurmctld's configuration (slurmrestd).
  virtual Result<int64_t> resume_timeout_s();
};

// Real libslurm client. conf_path: slurm.conf to use (empty: SLURM_CONF / default).
std::unique_ptr<SlurmApi> make_libslurm_api(const std::string& conf_path = "");

// Compresses names into a Slurm hostlist expression ("gpu-[0-3,7]").
std::string to_hostlist(const std::vector<std::string>& nodes);

}  // namespace vigil::slurm
