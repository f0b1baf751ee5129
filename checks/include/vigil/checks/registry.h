#pragma once
#include <memory>
#include <vector>

#include "vigil/checks/check.h"

namespace vigil {

// Every check Vigil knows, in run order (cheap probes first, bandwidth tests last).
std::vector<std::unique_ptr<Check>> all_checks();

}  // namespace vigil
