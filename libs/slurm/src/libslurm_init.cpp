#include "libslurm_init.h"

#include <slurm/slurm.h>
#include <unistd.h>

#include <cstdlib>

namespace vigil::slurm {

namespace {
bool g_initialized = false;
std::string g_conf_in_use;

std::string resolve_conf(const std::string& conf_path) {
  if (!conf_path.empty()) return conf_path;
  if (const char* env = std::getenv("SLURM_CONF"); env != nullptr && *env != '\0') return env;
  return "/etc/slurm/slurm.conf";
}
}  // namespace

std::mutex& libslurm_mutex() {
  static std::mutex mu;
  return mu;
}

VoidResult ensure_libslurm_initialized(const std::string& conf_path) {
  const std::string conf = resolve_conf(conf_path);
  if (g_initialized) {
    if (conf != g_conf_in_use) {
      return Error{"libslurm is already initialised with " + g_conf_in_use +
                       " in this process; use one slurm.conf per process",
                   "slurm_init(" + conf + ")"};
    }
    return ok_result();
  }
  if (access(conf.c_str(), R_OK) != 0) {
    return Error{"cannot read " + conf +
                     "; give the slurm.conf path (drainer config slurm.conf, vigil-submit "
                     "--slurm-conf) or set SLURM_CONF",
                 "slurm_init(" + conf + ")"};
  }
  slurm_init(conf.c_str());
  g_initialized = true;
  g_conf_in_use = conf;
  return ok_result();
}

}  // namespace vigil::slurm
