#include "cli_util.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

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
