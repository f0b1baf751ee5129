#include "cli_util.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "allreduce/fabric_job.h"
#include "vigil/slurm/slurm_topology.h"

namespace vigil_cli {

namespace fs = std::filesystem;

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::move(fallback);
}

std::string hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  std::string h(buf);
  return h.substr(0, h.find('.'));
}

std::string default_thresholds_dir() {
  std::string env = env_or("VIGIL_THRESHOLDS_DIR", "");
  if (!env.empty()) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "vigil" / "thresholds";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return VIGIL_SOURCE_THRESHOLDS_DIR;
}

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void print_config_errors(const std::vector<vigil::ConfigError>& errors) {
  for (const auto& e : errors) std::cerr << "vigil-check: " << e.to_string() << "\n";
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (!part.empty()) out.push_back(part);
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

vigil::Result<std::map<std::string, std::string>> fabric_topology(const std::string& option,
                                                                  std::string& note) {
  if (!option.empty() && option != "slurm") {
    note = "topology from " + option;
    return vigil::load_topology_map(option);
  }
  // Automatic only inside a Slurm job: elsewhere libslurm has no cluster to ask.
  if (option.empty() && std::getenv("SLURM_JOB_ID") == nullptr) {
    note = "no topology";
    return std::map<std::string, std::string>{};
  }
  auto tree = vigil::slurm::load_leaf_switches();
  if (option.empty() && (!tree.ok() || tree->empty())) {
    note = tree.ok() ? "no topology (Slurm has no tree topology)"
                     : "no topology (Slurm: " + tree.error().to_string() + ")";
    return std::map<std::string, std::string>{};
  }
  if (!tree.ok()) return tree.error();
  if (tree->empty())
    return vigil::Error{
        "Slurm has no tree topology (TopologyPlugin=topology/tree and "
        "topology.conf); give a map file instead",
        "--topology slurm"};
  std::set<std::string> leaves;
  for (const auto& [node, leaf] : *tree) leaves.insert(leaf);
  note = "topology from Slurm: " + std::to_string(tree->size()) + " nodes under " +
         std::to_string(leaves.size()) + " leaf switches";
  return tree;
}

vigil::ReportAuth AuthArgs::to_report_auth() const {
  vigil::ReportAuth auth;
  // CLI11 allowed only the two words.
  auth.mode = vigil::parse_report_auth_mode(mode).value_or(vigil::ReportAuthMode::kToken);
  auth.munge_socket = munge_socket;
  return auth;
}

void add_auth_options(CLI::App* cmd, AuthArgs& a) {
  cmd->add_option("--auth", a.mode,
                  "token (--token-file) or munge (a MUNGE credential per report, docs/security.md)")
      ->envname("VIGIL_REPORT_AUTH")
      ->check(CLI::IsMember({"token", "munge"}));
  cmd->add_option("--munge-socket", a.munge_socket,
                  "munged socket for --auth munge (default: munge's own)")
      ->envname("VIGIL_MUNGE_SOCKET");
}

}  // namespace vigil_cli
