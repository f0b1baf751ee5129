#pragma once
// The one place that knows how libslurm's C API differs between the Slurm releases Vigil builds
// against (docs/slurm-compat.md). Everything else in libs/slurm uses the names below; a release
// with a new difference gets a branch on SLURM_VERSION_NUMBER here and nowhere else.
//
// Built and tested against: 22.05 (Debian bookworm), 24.11 (Debian trixie) and 26.05 (Debian
// forky), the last two through scripts/slurm-root.sh.
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>

#include <cerrno>
#include <string>
#include <vector>

#include "topology_text.h"

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0)
#error "Vigil's libslurm client needs Slurm 22.05 or newer (slurm_init(), docs/slurm-compat.md)"
#endif

namespace vigil::slurm::compat {

// 23.11 made hostlist_t the opaque struct itself (functions take hostlist_t *); up to 23.02 it
// was a typedef of the pointer.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
using Hostlist = hostlist_t*;
#else
using Hostlist = hostlist_t;
#endif

// Frees what slurm_load_ctl_conf() returned: slurm_free_ctl_conf() up to 24.11 at least,
// slurm_free_conf() in 26.05 (the headers of the trixie and forky roots; the release that renamed
// it is not known here, so whichever the header declares is called, found at instantiation by
// argument-dependent lookup on slurm_conf_t, which lives in the global namespace).
namespace detail {
template <typename Conf>
auto free_conf(Conf* c, int) -> decltype(slurm_free_conf(c)) {
  return slurm_free_conf(c);
}
template <typename Conf>
void free_conf(Conf* c, long) {
  slurm_free_ctl_conf(c);
}
}  // namespace detail
inline void free_ctl_conf(slurm_conf_t* c) { detail::free_conf(c, 0); }

// The Slurm error of the last failed call: slurm_get_errno() up to 23.02; 23.11 removed it and
// libslurm sets errno itself.
inline int last_error() {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
  return errno;
#else
  return slurm_get_errno();
#endif
}

// One switch of Slurm's tree topology (topology/tree): its level (leaf = 0), name and the
// hostlist expression of the nodes directly under it.
using SwitchRecord = slurm::SwitchRecord;  // topology_text.h

// 24.11 sends the switch tree as the topology plugin's own data (topo_info, a
// dynamic_plugin_data_t), and libslurm unpacks it by loading the plugin. topology_tree.so needs
// `topo_conf`, a symbol that only libslurmfull (scontrol's private library) defines, not the
// public libslurm.so: in a program linked with libslurm the plugin fails to load, and
// slurm_load_topo's reply, or printing it, crashes the caller (seen against 24.11.5's
// slurmctld, scripts/slurm-root.sh). So on 24.11 the tree comes from `scontrol show topology`,
// Slurm's own reader. Up to 23.02 the reply's topo_array holds the records and libslurm is
// enough. Releases between 23.02 and 24.11 are not built here (docs/slurm-compat.md).
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
inline constexpr bool kTopologyThroughScontrol = true;
#else
inline constexpr bool kTopologyThroughScontrol = false;

// slurm_load_topo's switch records.
inline std::vector<SwitchRecord> switch_records(const topo_info_response_msg_t* msg) {
  std::vector<SwitchRecord> out;
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const topo_info_t& t = msg->topo_array[i];
    if (t.name == nullptr) continue;
    out.push_back({static_cast<int>(t.level), t.name, t.nodes ? t.nodes : ""});
  }
  return out;
}
#endif

// Release this client was compiled for, "22.05.8": in errors, where the server may be newer.
inline constexpr int kMajor = SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER);
inline constexpr int kMinor = SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);

}  // namespace vigil::slurm::compat
