#pragma once
// Reads the text of vigil-allreduce or genuine nccl-tests `all_reduce_perf` (and the other
// *_perf tools) into a BenchRun. Survives: the old (2019) format with an `error` column and
// no root column, the 2.x format with `#wrong`, `srun -l` prefixes (" 0: "), NCCL INFO/WARN
// lines between rows, "N/A" in #wrong (-c 0), and columns that overflow their width (tokens
// are split on whitespace, never by position).
#include <string_view>

#include "vigil/base/result.h"
#include "vigil/ncclbench/bench_result.h"

namespace vigil::ncclbench {

// Error when no data row and no footer were found (e.g. the binary crashed before the table).
Result<BenchRun> parse_nccl_tests_text(std::string_view text);

}  // namespace vigil::ncclbench
