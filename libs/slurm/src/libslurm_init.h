#pragma once
// libslurm keeps process-global configuration: it is initialised once per process, with one
// slurm.conf, and its RPC helpers are serialised so concurrent users (the Slurm sink, the job
// reader of vigil-submit) cannot race inside it. Every libslurm caller in Vigil goes through here.
#include <mutex>
#include <string>

#include "vigil/base/result.h"

namespace vigil::slurm {

// Held around every libslurm call.
std::mutex& libslurm_mutex();

// Call with libslurm_mutex() held. slurm_init() calls fatal() (process exit) when it cannot read
// its configuration, so the file is checked first and a missing one becomes an Error. A second,
// different slurm.conf in the same process is an error.
VoidResult ensure_libslurm_initialized(const std::string& conf_path);

}  // namespace vigil::slurm
