#pragma once
// The vigil-drainer subcommands; main.cpp only parses arguments and calls these. Each returns
// the process exit code (0 ok, 1 operational error, 2 bad input/config) and prints a human
// table or JSON (--json). docs/drainer.md "CLI".
#include <string>
#include <vector>

namespace vigil::drainer {

struct CommandOptions {
  std::string config;      // YAML config; empty -> defaults (apply/status need state_dir then)
  std::string state_dir;   // overrides config state_dir
  std::string slurm_conf;  // overrides config slurm.conf
  bool dry_run = false;    // forces dry-run (apply)
  bool no_slurm = false;   // apply without touching Slurm (decisions + state only)
  bool json = false;       // machine-readable output
};

int run_serve(const CommandOptions& o);
int run_apply(const CommandOptions& o, const std::vector<std::string>& report_files,
              const std::string& reports_dir);
// status / resume / breaker reset: when the service holds the state dir lock they ask it over
// HTTP (config listen address + token); otherwise they work on the state dir directly.
int run_status(const CommandOptions& o);
int run_resume(const CommandOptions& o, const std::string& node);
int run_breaker_reset(const CommandOptions& o);
int run_config_validate(const std::string& path);

// calibrate: propose a SKU's performance floors from the healthy figures the drainer keeps
// (service over HTTP, else the state dir), print them and the diff of `thresholds_file`;
// `write` applies it. 0: proposals made; 1: nothing to propose; 2: bad input, nothing changed.
struct CalibrateOptions {
  std::string sku;
  std::string thresholds_file;
  bool write = false;
  std::size_t min_nodes = 10;
  std::size_t min_figures = 50;
};
int run_calibrate(const CommandOptions& o, const CalibrateOptions& c);

}  // namespace vigil::drainer
