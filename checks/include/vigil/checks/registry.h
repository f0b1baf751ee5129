#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "vigil/checks/check.h"

namespace vigil {

// Every check Vigil knows, in run order (cheap probes first, bandwidth tests last), then the
// site's own checks that run in `vigil-check run` (SkuSet::site_checks; none without `skus`).
std::vector<std::unique_ptr<Check>> all_checks(const SkuSet* skus = nullptr);

// Checks that need a pair of nodes in one allocation: only `vigil-check fabric` runs them.
// Their names are valid in threshold files and reports like the others.
// min_bytes / max_bytes: the message sweep ("1G"); empty keeps the check's default.
std::vector<std::unique_ptr<Check>> fabric_checks(const std::string& min_bytes = "",
                                                  const std::string& max_bytes = "");
// The same for the trays of one NVLink domain (`vigil-check fabric --network nvlink-domain`).
std::vector<std::unique_ptr<Check>> domain_checks(const std::string& min_bytes = "",
                                                  const std::string& max_bytes = "");

// Which optional members the hooks' passive suite has.
struct PassiveSelection {
  bool after_job = false;    // gpu_leftovers: processes a finished job left on its GPUs (epilog)
  bool cuda_sanity = false;  // gpu_sanity: a context and a tiny kernel per GPU (--cuda-sanity)
};

// The passive suite of the Slurm hooks (`vigil-check hook`): counters and link state only, no
// GPU load (gpu_sanity, when selected, runs one kernel of a few microseconds per GPU). The site's
// checks that run in the hooks come last.
std::vector<std::unique_ptr<Check>> passive_checks(PassiveSelection selection,
                                                   const SkuSet* skus = nullptr);

// Names of every check above and of the fabric checks: what threshold files may name.
std::set<std::string> known_check_names();

}  // namespace vigil
