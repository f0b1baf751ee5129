#pragma once
// vigil-submit --check-config: what Vigil needs from a cluster's Slurm, read through Slurm itself
// (`scontrol show config`, which includes cgroup.conf; the node table for Gres; the
// reservation), and what is wrong, each with its fix (docs/deploy.md "Checking a cluster's
// Slurm"). Pure: the caller passes what Slurm said and a way to look at files.
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::submit {

enum class ConfigLevel { kOk, kWarn, kProblem };
inline constexpr EnumName<ConfigLevel> kConfigLevelNames[] = {
    {ConfigLevel::kOk, "ok"}, {ConfigLevel::kWarn, "warn"}, {ConfigLevel::kProblem, "PROBLEM"}};
inline std::string_view to_string(ConfigLevel l) { return name_of(kConfigLevelNames, l, "?"); }

struct ConfigFinding {
  std::string setting;  // "ResumeTimeout", "Prolog", "Gres", "--partition", ...
  std::string value;    // as Slurm has it ("60 sec"), "(unset)" when unset
  ConfigLevel level = ConfigLevel::kOk;
  std::string what;  // what it means for Vigil
  std::string fix;   // what to change; empty when nothing
};

struct ConfigCheckInput {
  std::map<std::string, std::string> config;  // slurm::config_from_scontrol
  std::vector<slurm::SlurmNodeInfo> nodes;    // the nodes in scope (--partition / --nodes)
  std::string partition;                      // --partition ("" none)
  bool partition_found = true;                // some node is in it
  std::string reservation;                    // --reservation ("" none)
  bool reservation_found = true;
  // What a reboot of Vigil's costs before the node is back (docs/repair.md): vigil-reboot's bug
  // report (VIGIL_BUG_REPORT_TIMEOUT 120 s + 10 s) and the node's boot (--boot-time-s).
  int bug_report_s = 130;
  int boot_s = 600;
  // A hook's program as Slurm names it: 0 executable here, 1 present but not executable,
  // 2 not visible from here (it lives on the nodes).
  std::function<int(const std::string& path)> file_state;
};

std::vector<ConfigFinding> check_config(const ConfigCheckInput& input);

// The findings as the table an admin reads: SETTING VALUE VERDICT WHAT (fix).
std::string config_table(const std::vector<ConfigFinding>& findings);

}  // namespace vigil::submit
