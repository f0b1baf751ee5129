#pragma once
// A check a site declares in a file instead of writing C++ (docs/site-checks.md): one YAML file
// per check in a `site-checks/` directory beside the SKU files. It joins the catalog by name
// (thresholds, the drainer's policy, reasons, metrics and events treat it as any check) and runs
// a command whose exit code, or whose JSON measurement lines, are its result.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace vigil {

// The directory beside the SKU files that holds the site's checks.
inline constexpr const char* kSiteChecksDir = "site-checks";

struct SiteCheckSpec {
  std::string name;        // "site_lustre": always "site_" first, so never a built-in's name
  std::string short_name;  // Slurm reasons ("vigil: lustre ..."): 1-16 of [a-z0-9_-]
  std::vector<std::string> command;  // argv, argv[0] an absolute path; run without a shell
  std::chrono::seconds timeout{30};  // killed after it: error, never fail
  bool in_run = true;                // `vigil-check run`, both suites
  bool in_hooks = true;              // the Slurm hooks' passive suite (prolog, epilog, healthcheck)
  bool measurements = false;         // read stdout's lines of Vigil's measurement JSON too
  std::vector<int> fail_codes;       // exit codes that fail (required); 0 passes; others: error
  std::vector<int> warn_codes;       // exit codes that warn
  std::vector<std::pair<std::string, std::string>> env;  // added to the command's environment
  std::string file;                                      // where it was declared
};

}  // namespace vigil
