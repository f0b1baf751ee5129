#pragma once
// Runs checks time-boxed. Each check runs in a forked child process so a hung driver call or a
// crash cannot take the run down: overrun -> error "timed out after N s", signal -> error.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/checks/check.h"

namespace vigil {

struct RunOptions {
  bool isolate = true;               // fork per check (false: run in-process, for unit tests)
  std::vector<std::string> only;     // run only these checks (others are left out of the report)
  std::vector<std::string> exclude;  // reported as skipped "excluded by --exclude"
  std::function<void(const CheckResult&)> on_result;  // progress callback, may be empty
  // A time box for the whole run (the Slurm hooks): each check gets at most what is left of
  // it, and checks that find it spent are reported as error "time box ... spent", never fail.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

std::vector<CheckResult> run_checks(std::vector<std::unique_ptr<Check>>& checks,
                                    const CheckContext& ctx, const RunOptions& opts);

// Runs one check with the time box (check.timeout(), or `timeout` when shorter); used by
// run_checks.
CheckResult run_isolated(Check& check, const CheckContext& ctx,
                         std::optional<std::chrono::milliseconds> timeout = std::nullopt);

// The mechanism under run_isolated: runs fn in a forked child (own process group, stdout sent
// to stderr) and returns the string it produced. Errors: "timed out after N s" (the whole
// group is killed), "crashed (signal N, ...)", "exited N". Use it for anything that touches a
// driver (NVML, CUDA) so the parent never initialises one.
Result<std::string> run_in_child(const std::function<std::string()>& fn,
                                 std::chrono::milliseconds timeout);
// The same, streaming: fn may send() output as it goes (e.g. one result per line) before it
// returns the rest; everything that arrived before the child ended or was killed is in
// *partial, also on error.
using ChildSend = std::function<void(const std::string&)>;
Result<std::string> run_in_child(const std::function<std::string(const ChildSend& send)>& fn,
                                 std::chrono::milliseconds timeout, std::string* partial);

}  // namespace vigil
