#include "cli_util.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "allreduce/fabric_job.h"
#include "passive/kmsg_reader.h"
#include "vigil/checks/registry.h"
#include "vigil/report/check_catalog.h"
#include "vigil/report/output.h"
#include "vigil/slurm/scontrol.h"

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
  auto tree = vigil::slurm::load_leaf_switches_scontrol();
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

int cmd_thresholds_validate(const std::string& dir) {
  auto skus = vigil::load_sku_dir(dir, vigil::known_check_names());
  if (!skus) {
    print_config_errors(skus.errors);
    std::cerr << "vigil-check: " << skus.errors.size() << " error(s) in " << dir << "\n";
    return kExitError;
  }
  for (const auto& s : skus.value->skus) {
    size_t n = 0;
    for (const auto& [check, ms] : s.thresholds) n += ms.size();
    std::cout << s.name << ": " << n << " thresholds (" << s.file << ")\n";
  }
  for (const auto& c : skus.value->site_checks)
    std::cout << c.name << ": site check, " << (c.in_run ? "run" : "")
              << (c.in_run && c.in_hooks ? " and " : "") << (c.in_hooks ? "hooks" : "") << " ("
              << c.file << ")\n";
  std::cout << "ok: " << skus.value->skus.size() << " SKU file(s) valid";
  if (!skus.value->site_checks.empty())
    std::cout << ", " << skus.value->site_checks.size() << " site check(s)";
  std::cout << "\n";
  return 0;
}

int cmd_report_table(const std::vector<std::string>& files) {
  std::vector<vigil::NodeReport> reports;
  int rc = 0;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    auto parsed = vigil::parse_node_report(std::string_view(text));
    if (!in || !parsed) {
      std::cerr << "vigil-check: " << f << ": " << (in ? parsed.error : "cannot read file") << "\n";
      rc = kExitError;
      continue;
    }
    reports.push_back(std::move(*parsed.value));
  }
  std::cout << vigil::format_fleet_table(reports);
  return rc;
}

void add_xid_clear_command(CLI::App& app, XidClearArgs& x) {
  x.cmd = app.add_subcommand(
      "xid-clear", "After a GPU reset: forget the fatal XIDs the hooks remember for that GPU");
  x.cmd->add_option("--gpu", x.gpu, "PCI bus id of the reset GPU, e.g. 0000:18:00")->required();
  x.cmd->add_option("--state-dir", x.state_dir, "The hooks' --state-dir (theirs)")
      ->envname("VIGIL_HOOK_STATE_DIR");
  x.cmd->add_option("--node", x.node,
                    "Slurm node name as the hooks saw it (default: $SLURMD_NODENAME or the short "
                    "hostname)");
}

int cmd_xid_clear(const std::string& state_dir, const std::string& node, const std::string& gpu) {
  if (state_dir.empty()) {
    std::cerr << "vigil-check xid-clear: --state-dir (or VIGIL_HOOK_STATE_DIR) is required: it "
                 "is where the hooks keep the XIDs they remember; nothing changed\n";
    return kExitError;
  }
  const std::string name = node.empty() ? env_or("SLURMD_NODENAME", hostname()) : node;
  const std::string path = vigil::kmsg::cursor_path(state_dir, name);
  auto done = vigil::kmsg::clear_after_gpu_reset(path, gpu);
  if (!done) {
    std::cerr << "vigil-check xid-clear: " << done.error().to_string() << "; nothing changed\n";
    return kExitError;
  }
  std::cout << "state: " << path << "\n";
  for (const auto& item : done->cleared) std::cout << "cleared: " << item << "\n";
  for (const auto& item : done->kept)
    std::cout << "kept: " << item << " (a GPU reset does not clear it: reboot or replace)\n";
  if (done->cleared.empty() && done->kept.empty())
    std::cout << "nothing remembered for " << gpu << " in " << path
              << " (if the hooks did remember it, check --node: it must be the Slurm node name "
                 "the hooks ran as)\n";
  return 0;
}

int cmd_list(const std::string& thresholds) {
  auto print = [](std::string_view name, std::string_view short_name, const char* suite,
                  std::chrono::seconds timeout) {
    std::cout << name << "\t" << short_name << "\t" << suite << "\t" << timeout.count() << "s\n";
  };
  // The smallest suite a check runs in (the larger ones hold it too), and ",hooks" when the Slurm
  // hooks run it as well (which hook: docs/hooks.md).
  for (const auto& c : vigil::all_checks()) {
    const vigil::CheckSpec* spec = vigil::find_check_spec(c->name());
    const std::string suite = !spec                  ? "quick"
                              : spec->qualify_only() ? "qualify"
                              : spec->full_only()    ? "full"
                                                     : "quick";
    const bool hooks = spec && spec->runs_in(vigil::CheckSuite::kPassive);
    print(c->name(), c->short_name(), (suite + (hooks ? ",hooks" : "")).c_str(), c->timeout());
  }
  // The hooks' own (kmsg_xid, ib_link_downtime, the epilog's gpu_leftovers, --cuda-sanity's).
  for (const auto& c : vigil::passive_checks({.after_job = true, .cuda_sanity = true}))
    if (const vigil::CheckSpec* spec = vigil::find_check_spec(c->name());
        spec && !spec->runs_in(vigil::CheckSuite::kQuick))
      print(c->name(), c->short_name(), "hooks", c->timeout());
  for (const auto& c : vigil::fabric_checks())  // vigil-check fabric only
    print(c->name(), c->short_name(), "fabric", c->timeout());
  for (const auto& c : vigil::domain_checks())  // ... --network nvlink-domain
    print(c->name(), c->short_name(), "domain", c->timeout());
  // The site's checks (docs/site-checks.md), from the directory `run` and the hooks read: where
  // each runs instead of a suite, since a site check joins every suite it runs in.
  const std::string dir = thresholds.empty() ? default_thresholds_dir() : thresholds;
  std::error_code ec;
  if (thresholds.empty() && !std::filesystem::is_directory(dir, ec)) return 0;  // none installed
  auto skus = vigil::load_sku_dir(dir, vigil::known_check_names());
  if (!skus) {
    print_config_errors(skus.errors);
    std::cerr << "vigil-check list: the site checks in " << dir
              << " cannot be listed; fix the files (vigil-check thresholds validate " << dir
              << ") or pass --thresholds DIR\n";
    return kExitError;
  }
  for (const auto& c : skus.value->site_checks)
    print(c.name, c.short_name,
          c.in_run && c.in_hooks ? "site:run,hooks"
          : c.in_run             ? "site:run"
                                 : "site:hooks",
          c.timeout);
  return 0;
}

}  // namespace vigil_cli
