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

// Release this client was compiled for, "22.05.8": in errors, where the server may be newer.
inline constexpr int kMajor = SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER);
inline constexpr int kMinor = SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);

}  // namespace vigil::slurm::compat
