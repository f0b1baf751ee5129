#pragma once
// Small helpers of the vigil-check program (checks/src/main.cpp): environment, host name, the
// thresholds directory, time, and comma lists. Part of the vigil-check executable only.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/checks/sku.h"
#include "vigil/report/report_client.h"

namespace CLI {
class App;
}

namespace vigil_cli {

inline constexpr int kExitError = 3;  // vigil-check's exit code for "could not check"

// The small subcommands: `thresholds validate DIR`, `report table FILE...`, `list`.
int cmd_thresholds_validate(const std::string& dir);
int cmd_report_table(const std::vector<std::string>& files);
int cmd_list(const std::string& thresholds);
// `xid-clear --gpu BUS`: after a GPU reset, forget the XIDs kmsg_xid remembers for that GPU that
// a reset clears (docs/hooks.md). 0: done (also when there was nothing to clear); 3: bad input or
// an unreadable state file, nothing changed.
int cmd_xid_clear(const std::string& state_dir, const std::string& node, const std::string& gpu);
// Adds the `xid-clear` subcommand to app; `state_dir` starts as the hooks' default.
struct XidClearArgs {
  std::string state_dir, node, gpu;
  CLI::App* cmd = nullptr;
};
void add_xid_clear_command(CLI::App& app, XidClearArgs& x);

std::string env_or(const char* name, std::string fallback);
// The short host name (up to the first dot).
std::string hostname();
// $VIGIL_THRESHOLDS_DIR, else the installed layout (<prefix>/bin/../share/vigil/thresholds),
// else the source tree.
std::string default_thresholds_dir();
std::int64_t now_unix();
void print_config_errors(const std::vector<vigil::ConfigError>& errors);
// "a,b" "c" -> a, b, c (empty parts dropped).
std::vector<std::string> split_list(const std::vector<std::string>& items);
std::string join(const std::vector<std::string>& v, const std::string& sep);
// The leaf switch of each node of a k-node fabric job (docs/fabric.md). `option`: a
// '<node> <switch>' map file; "slurm": Slurm's tree topology (an error when it has none); empty:
// Slurm's tree inside a Slurm job when there is one, else none. `note` says which it was.
vigil::Result<std::map<std::string, std::string>> fabric_topology(const std::string& option,
                                                                  std::string& note);

// --auth token|munge (VIGIL_REPORT_AUTH) and --munge-socket (VIGIL_MUNGE_SOCKET) on `cmd`, for
// run, fabric and hook alike (docs/security.md).
struct AuthArgs {
  std::string mode = "token";
  std::string munge_socket;
  vigil::ReportAuth to_report_auth() const;
};
void add_auth_options(CLI::App* cmd, AuthArgs& a);

}  // namespace vigil_cli
