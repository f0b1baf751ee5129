#pragma once
// The one place that knows how libslurm's C API differs between the Slurm releases Vigil builds
// against (docs/slurm-compat.md). Everything else in libs/slurm uses the names below; a release
// with a new difference gets a branch on SLURM_VERSION_NUMBER here and nowhere else.
//
// Built and tested against: 22.05 (Debian bookworm) and 24.11 (Debian trixie, through
// scripts/slurm-root.sh).
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

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

// The Slurm error of the last failed call: slurm_get_errno() up to 23.02; 23.11 removed it and
// libslurm sets errno itself.
inline int last_error() {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
  return errno;
#else
  return slurm_get_errno();
#endif
}

// One switch of slurm_load_topo's reply (topology/tree): its level (leaf = 0), name and the
// hostlist expression of the nodes directly under it.
struct SwitchRecord {
  int level = 0;
  std::string name;
  std::string nodes;
};

// Up to 23.02 the reply's topo_array holds the switch records. 24.11's reply carries the
// plugin's own data (topo_info, a dynamic_plugin_data_t that no public call unpacks) beside an
// empty topo_array; the one public reader is slurm_print_topo_info_msg, so there the records are
// read back from its text, the lines `scontrol show topology` prints
// ("SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[0-1] Switches=..."). Releases between 23.02
// and 24.11 are not built here (docs/slurm-compat.md).
inline std::vector<SwitchRecord> switch_records(topo_info_response_msg_t* msg) {
  std::vector<SwitchRecord> out;
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (f == nullptr) return out;
  slurm_print_topo_info_msg(f, msg, nullptr, 1);
  std::fclose(f);
  std::istringstream lines(text ? std::string(text, size) : std::string());
  std::free(text);
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
#else
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const topo_info_t& t = msg->topo_array[i];
    if (t.name == nullptr) continue;
    out.push_back({t.level, t.name, t.nodes ? t.nodes : ""});
  }
#endif
  return out;
}

// Release this client was compiled for, "22.05.8": in errors, where the server may be newer.
inline constexpr int kMajor = SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER);
inline constexpr int kMinor = SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);

}  // namespace vigil::slurm::compat
