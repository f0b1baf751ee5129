#pragma once
// Output sinks for humans: the same data as the JSON report, as tables.
#include <string>
#include <vector>

#include "vigil/report/report.h"

namespace vigil {

// One node: a row per check (status, duration, message) and a footer with the overall status.
std::string format_report_table(const NodeReport& r);
// Many nodes: a row per node (overall status, failing/warning checks with their messages).
std::string format_fleet_table(const std::vector<NodeReport>& reports);

}  // namespace vigil
