// The files that declare site checks (site-checks/*.yaml beside the SKU files;
// vigil/checks/site_check.h, docs/site-checks.md): read strictly, every mistake named by file and
// field. Apart from the check that runs one (site_check.cpp) so that the SKU loader and its fuzz
// target need nothing of the check runner.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "vigil/checks/site_check.h"
#include "vigil/checks/sku.h"
#include "vigil/config/strict_yaml.h"
#include "vigil/report/check_catalog.h"

namespace vigil {
namespace {

const std::regex kNameRule("site_[a-z0-9_]{1,40}");
const std::regex kShortRule("[a-z0-9_-]{1,16}");
const std::regex kEnvRule("[A-Z_][A-Z0-9_]{0,63}");
constexpr std::chrono::seconds kHookTimeout{50};

// Exit codes 1-125: 126 and 127 are the shell's "cannot run", 128 and above a signal's death.
std::optional<std::vector<int>> codes(YamlReader& w, const YAML::Node& n, const std::string& f) {
  if (!n.IsSequence() || n.size() > 32) {
    w.error(n, f, "must be a list of exit codes (1-125)");
    return std::nullopt;
  }
  std::vector<int> out;
  for (const auto& c : n)
    if (auto v = w.integer(c, f, 1, 125)) out.push_back(static_cast<int>(*v));
  return out;
}

void walk_result(YamlReader& w, const YAML::Node& root, SiteCheckSpec& s) {
  if (const YAML::Node r = root["result"]) {
    const auto v = w.text(r, "result");
    if (v && *v != "exit_code" && *v != "measurements")
      w.error(r, "result", "must be exit_code or measurements");
    s.measurements = v == "measurements";
  }
  // No default for the codes that fail: exit 1 is also a traceback's, `set -e`'s and a grep
  // that found nothing; the file says what its program means by it.
  const YAML::Node e = root["exit_codes"];
  if (!e || !e.IsMap() || !e["fail"])
    w.error(e ? e : root, "exit_codes.fail",
            "missing: the exit codes that mean the fault (NHC: [1], a Nagios plugin: [2])");
  if (e && w.only_keys(e, "exit_codes", {"fail", "warn"})) {
    if (e["fail"])
      if (auto c = codes(w, e["fail"], "exit_codes.fail")) s.fail_codes = *c;
    if (e["warn"])
      if (auto c = codes(w, e["warn"], "exit_codes.warn")) s.warn_codes = *c;
    for (int c : s.warn_codes)
      if (std::ranges::count(s.fail_codes, c))
        w.error(e, "exit_codes", "exit code " + std::to_string(c) + " both fails and warns");
  }
}

void walk_runs_in(YamlReader& w, const YAML::Node& root, SiteCheckSpec& s) {
  if (const YAML::Node r = root["runs_in"]) {
    s.in_run = s.in_hooks = false;
    if (!r.IsSequence() || r.size() == 0) {
      w.error(r, "runs_in", "must be a list of run, hooks");
      return;
    }
    for (const auto& x : r) {
      const auto v = w.text(x, "runs_in");
      if (v == "run")
        s.in_run = true;
      else if (v == "hooks")
        s.in_hooks = true;
      else if (v)
        w.error(x, "runs_in", "'" + *v + "' is not run or hooks");
    }
  }
  if (s.in_hooks && s.timeout > kHookTimeout)
    w.error(root["timeout_s"] ? root["timeout_s"] : root, "timeout_s",
            "at most 50 for a check that runs in the hooks (slurmd's hook time box is at most "
            "55 s, shared with the built-in checks)");
}

void walk_env(YamlReader& w, const YAML::Node& root, SiteCheckSpec& s) {
  const YAML::Node e = root["env"];
  if (!e) return;
  if (!e.IsMap()) {
    w.error(e, "env", "must be a mapping of NAME: value");
    return;
  }
  for (const auto& kv : e)
    if (auto k = w.text(kv.first, "env"); k && std::regex_match(*k, kEnvRule)) {
      if (auto v = w.scalar(kv.second, "env." + *k)) s.env.emplace_back(*k, *v);
    } else if (k) {
      w.error(kv.first, "env",
              "'" + *k + "' is not an environment variable name ([A-Z_][A-Z0-9_]*)");
    }
}

void walk_site_check(YamlReader& w, const YAML::Node& root, SiteCheckSpec& s) {
  if (!w.only_keys(
          root, "",
          {"name", "short_name", "command", "timeout_s", "runs_in", "result", "exit_codes", "env"}))
    return;
  if (!root["name"])
    w.error(root, "name", "missing (site_ and what it checks: site_lustre)");
  else if (auto n = w.text(root["name"], "name")) {
    if (std::regex_match(*n, kNameRule))
      s.name = *n;
    else
      w.error(root["name"], "name", "must be site_ and 1-40 of [a-z0-9_] (site_lustre)");
  }
  s.short_name = s.name.size() > 5 ? s.name.substr(5, 16) : "site";
  std::replace(s.short_name.begin(), s.short_name.end(), '_', '-');
  if (root["short_name"])
    if (auto n = w.text(root["short_name"], "short_name")) {
      if (std::regex_match(*n, kShortRule))
        s.short_name = *n;
      else
        w.error(root["short_name"], "short_name", "must be 1-16 of [a-z0-9_-]");
    }
  const YAML::Node cmd = root["command"];
  if (!cmd || !cmd.IsSequence() || cmd.size() == 0 || cmd.size() > 64)
    w.error(cmd ? cmd : root, "command",
            "must be a list: the program's absolute path, then its arguments (no shell; for one, "
            "[/bin/sh, -c, \"...\"])");
  else
    for (const auto& a : cmd)
      if (auto v = w.scalar(a, "command")) s.command.push_back(*v);
  if (!s.command.empty() && s.command[0].rfind('/', 0) != 0)
    w.error(cmd, "command", "'" + s.command[0] + "' is not an absolute path");
  if (root["timeout_s"])
    if (auto v = w.integer(root["timeout_s"], "timeout_s", 1, 600))
      s.timeout = std::chrono::seconds(*v);
  walk_runs_in(w, root, s);
  walk_result(w, root, s);
  walk_env(w, root, s);
}

Loaded<SiteCheckSpec> load_one(const std::string& path) {
  Loaded<SiteCheckSpec> out;
  YamlReader w(path);
  SiteCheckSpec s;
  s.file = path;
  try {
    walk_site_check(w, YAML::LoadFile(path), s);
  } catch (const YAML::ParserException& e) {
    out.errors.push_back({path, e.mark.line + 1, "", "YAML syntax error: " + e.msg});
    return out;
  } catch (const YAML::Exception& e) {
    out.errors.push_back({path, 0, "", e.what()});
    return out;
  }
  out.errors = std::move(w.errors);
  if (out.errors.empty()) out.value = std::move(s);
  return out;
}

}  // namespace

Loaded<std::vector<SiteCheckSpec>> load_site_checks(const std::string& dir) {
  Loaded<std::vector<SiteCheckSpec>> out;
  out.value.emplace();
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return out;
  std::vector<std::string> files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto ext = it->path().extension().string();
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && (ext == ".yaml" || ext == ".yml"))
      files.push_back(it->path().string());
  }
  if (ec) {
    out.errors.push_back({dir, 0, "", "cannot read the site checks' directory: " + ec.message()});
    return out;
  }
  std::set<std::string> short_names;  // the built-in checks' and each site check's: one each
  for (const CheckSpec& c : check_catalog()) short_names.insert(std::string(c.short_name));
  std::sort(files.begin(), files.end());
  std::set<std::string> seen;
  for (const auto& f : files) {
    auto one = load_one(f);
    out.errors.insert(out.errors.end(), one.errors.begin(), one.errors.end());
    if (!one.value) continue;
    if (!seen.insert(one.value->name).second) {
      out.errors.push_back({f, 0, "name", "duplicate site check '" + one.value->name + "'"});
      continue;
    }
    if (!short_names.insert(one.value->short_name).second) {
      out.errors.push_back({f, 0, "short_name",
                            "'" + one.value->short_name +
                                "' already names another check in Slurm reasons; set short_name"});
      continue;
    }
    out.value->push_back(std::move(*one.value));
  }
  return out;
}

}  // namespace vigil
