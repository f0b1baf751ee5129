// vigil-drainer: argument parsing only; the work is in vigil::drainer (commands.h).
#include <CLI/CLI.hpp>

#include "vigil/drainer/commands.h"

namespace {

// `vigil-drainer calibrate` (docs/thresholds.md, Calibration).
CLI::App* add_calibrate(CLI::App& app, vigil::drainer::CommandOptions& o,
                        vigil::drainer::CalibrateOptions& cal, const std::string& default_config) {
  auto* calibrate = app.add_subcommand(
      "calibrate",
      "propose a SKU's performance floors from the fleet's healthy figures, as a diff of its "
      "thresholds file (docs/thresholds.md, Calibration)");
  calibrate->add_option("--sku", cal.sku, "SKU name, as in the file's `sku:`")->required();
  calibrate->add_option("--thresholds", cal.thresholds_file, "the SKU's thresholds YAML file")
      ->required();
  calibrate->add_flag("--write", cal.write, "apply the proposal to the file (atomically)");
  calibrate->add_option("--min-nodes", cal.min_nodes, "nodes needed behind a floor (default 10)");
  calibrate->add_option("--min-figures", cal.min_figures,
                        "healthy figures needed behind a floor (default 50)");
  calibrate->add_option("--config", o.config,
                        "YAML config file (default " + default_config +
                            "; '' for built-in defaults with --state-dir)");
  calibrate->add_option("--state-dir", o.state_dir, "state dir; overrides the config");

  return calibrate;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vigil::drainer;
  CLI::App app{
      "vigil-drainer: turns Vigil NodeReports into Slurm drains/resumes, Kubernetes "
      "annotations and metrics (docs/drainer.md)"};
  app.require_subcommand(1);
  CommandOptions o;
  const std::string default_config = "/etc/vigil/drainer.yaml";

  auto* serve = app.add_subcommand("serve", "run the HTTP service");
  serve->add_option("--config", o.config, "YAML config file")->required();

  std::vector<std::string> files;
  std::string reports_dir;
  auto* apply =
      app.add_subcommand("apply", "one-shot: apply reports with the same engine, then exit");
  apply->add_option("reports", files, "NodeReport JSON files (one report or an array each)");
  apply->add_option("--reports-dir", reports_dir, "ingest every *.json in DIR (e.g. a spool dir)");
  apply->add_option("--config", o.config, "YAML config file (default: built-in defaults)");
  apply->add_option("--state-dir", o.state_dir, "state dir (journal); overrides the config");
  apply->add_option("--slurm-conf", o.slurm_conf, "slurm.conf to use");
  apply->add_flag("--dry-run", o.dry_run, "decide and record, change nothing in Slurm");
  apply->add_flag("--no-slurm", o.no_slurm, "do not contact Slurm at all");
  apply->add_flag("--json", o.json, "JSON output");

  auto* status = app.add_subcommand("status", "table of nodes: state, last check, reason, streaks");
  auto* resume =
      app.add_subcommand("resume", "lift a vigil drain now (UNDRAIN; never another owner's)");
  std::string node;
  resume->add_option("node", node, "Slurm node name")->required();
  auto* breaker = app.add_subcommand("breaker", "circuit breaker");
  auto* breaker_reset = breaker->add_subcommand("reset", "close the circuit breaker");
  breaker->require_subcommand(1);
  for (auto* sc : {status, resume, breaker_reset}) {
    sc->add_option("--config", o.config, "YAML config file (default " + default_config + ")");
    sc->add_option("--state-dir", o.state_dir, "state dir; overrides the config");
    sc->add_option("--slurm-conf", o.slurm_conf, "slurm.conf to use");
  }
  status->add_flag("--json", o.json, "JSON output");

  CalibrateOptions cal;
  auto* calibrate = add_calibrate(app, o, cal, default_config);

  auto* config = app.add_subcommand("config", "configuration helpers");
  std::string validate_path;
  auto* validate = config->add_subcommand("validate", "parse and validate a config file");
  validate->add_option("file", validate_path, "YAML config file")->required();
  config->require_subcommand(1);

  CLI11_PARSE(app, argc, argv);
  // The service's commands read its config unless told otherwise. Set after parsing: a
  // default_val on the shared `o.config` would also become apply's config, whose default is the
  // built-in one.
  for (auto* sc : {status, resume, breaker_reset, calibrate})
    if (sc->parsed() && sc->get_option("--config")->count() == 0) o.config = default_config;
  if (serve->parsed()) return run_serve(o);
  if (calibrate->parsed()) return run_calibrate(o, cal);
  if (apply->parsed()) {
    if (files.empty() && reports_dir.empty()) {
      std::fprintf(stderr, "vigil-drainer apply: give REPORT files or --reports-dir DIR\n");
      return 2;
    }
    return run_apply(o, files, reports_dir);
  }
  if (status->parsed()) return run_status(o);
  if (resume->parsed()) return run_resume(o, node);
  if (breaker_reset->parsed()) return run_breaker_reset(o);
  if (validate->parsed()) return run_config_validate(validate_path);
  return 2;
}
