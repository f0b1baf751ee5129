#pragma once
// Runs checks time-boxed. Each check runs in a forked child process so a hung driver call or a
// crash cannot take the run down: overrun -> error "timed out after N s", signal -> error.
#include <functional>
#include <string>
#include <vector>

#include "vigil/checks/check.h"

namespace vigil {

struct RunOptions {
  bool isolate = true;  // fork per check (false: run in-process, for unit tests)
  std::vector<std::string> only;  // run only these check names (empty = all applicable)
  std::function<void(const CheckResult&)> on_result;  // progress callback, may be empty
};

std::vector<CheckResult> run_checks(std::vector<std::unique_ptr<Check>>& checks,
                                    const CheckContext& ctx, const RunOptions& opts);

// Runs one check with the time box; used by run_checks.
CheckResult run_isolated(Check& check, const CheckContext& ctx);

}  // namespace vigil
