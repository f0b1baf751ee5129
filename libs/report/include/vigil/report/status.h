#pragma once
// Result vocabulary shared by every Vigil component (checks, nccl-bench, drainer).
#include <optional>
#include <string>
#include <string_view>

#include "vigil/base/enum_names.h"

namespace vigil {

// pass/warn/fail are health verdicts. error: the check could not run (no driver, harness
// timeout, bad fixture). skipped: not applicable (no IB, unknown SKU). Only fail can drain.
enum class Status { kPass, kWarn, kFail, kError, kSkipped };

inline constexpr EnumName<Status> kStatusNames[] = {{Status::kPass, "pass"},
                                                    {Status::kWarn, "warn"},
                                                    {Status::kFail, "fail"},
                                                    {Status::kError, "error"},
                                                    {Status::kSkipped, "skipped"}};
inline std::string_view to_string(Status s) { return name_of(kStatusNames, s, "error"); }

// Combines two statuses into the one a run reports: fail > error > warn > pass/skipped.
Status combine(Status a, Status b);

// vigil-check exit codes: 0 all pass (skipped counts as pass), 1 some fail, 2 some warn
// (no fail, no error), 3 some error (no fail).
int exit_code_for(Status overall);

}  // namespace vigil
