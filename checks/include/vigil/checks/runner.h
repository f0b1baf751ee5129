#pragma once
// Runs checks time-boxed. Each check runs in a forked child process so a hung driver call or a
// crash cannot take the run down: overrun -> error "timed out after N s", signal -> error.
#include <functional>
#include <string>
#include <vector>

#include "vigil/checks/check.h"
#include "vigil/base/result.h"

namespace vigil {

struct RunOptions {
  bool isolate = true;  // fork per check (false: run in-process, for unit tests)
  std::vector<std::string> only;     // run only these checks (others are left out of the report)
  std::vector<std::string> exclude;  // reported as skipped "excluded by --exclude"
  std::function<void(const CheckResult&)> on_result;  // progress callback, may be empty
};

std::vector<CheckResult> run_checks(std::vector<std::unique_ptr<Check>>& checks,
                                    const CheckContext& ctx, const RunOptions& opts);

// Runs one check with the time box; used by run_checks.
CheckResult run_isolated(Check& check, const CheckContext& ctx);

// The mechanism under run_isolated: runs fn in a forked child (own process group, stdout sent
// to stderr) and returns the string it produced. Errors: "timed out after N s" (the whole
// group is killed), "crashed (signal N, ...)", "exited N". Use it for anything that touches a
// driver (NVML, CUDA) so the parent never initialises one.
Result<std::string> run_in_child(const std::function<std::string()>& fn, std::chrono::seconds timeout);

}  // namespace vigil
