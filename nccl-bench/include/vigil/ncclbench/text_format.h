#pragma once
// nccl-tests-compatible text table. Column layout and footer lines match nccl-tests 2.x so
// existing parsers (DCGM's nccl_tests plugin, site scripts) keep working.
#include <string>

#include "vigil/ncclbench/bench_result.h"

namespace vigil::ncclbench {

// Lines before the first row: our identity, the parameters, the "Using devices" block (one
// line per rank from `device_lines`), the note that figures are the slowest rank's, and the
// three column header lines.
std::string format_header(const BenchRun& run, const std::vector<std::string>& device_lines,
                          std::uint64_t min_bytes, std::uint64_t max_bytes, int step_factor);
// One data row, newline-terminated.
std::string format_row(const BenchRow& row);
// "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X", plus our summary line.
std::string format_footer(const BenchRun& run);
// nccl-tests time formatting: %7.0f from 10000 us, %7.1f from 100 us, else %7.2f.
std::string format_time_us(double us);

}  // namespace vigil::ncclbench
