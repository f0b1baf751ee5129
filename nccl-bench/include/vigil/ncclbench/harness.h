#pragma once
// The one timing harness (style.md rule 4): for each size, out-of-place then in-place, warm-up
// iterations, timed iterations between a barrier and a backend sync (steady_clock), a data check
// on seeded values, per-rank times combined across ranks (the slowest rank's time is what
// algbw/busbw use), and the output (table rows as each size finishes, JSON at the end).
// Needs MPI (links vigil::ncclbench_mpi); vigil-check only links the MPI-free vigil::ncclbench.
#include <iosfwd>

#include "vigil/base/result.h"
#include "vigil/ncclbench/bench_result.h"
#include "vigil/ncclbench/options.h"

namespace vigil::ncclbench {

// Runs the all_reduce sweep on MPI_COMM_WORLD; MPI must be initialised with
// MPI_THREAD_MULTIPLE (the watchdog thread may call MPI_Abort). Rank 0 writes the table to
// `table` (may be null) as rows finish. The returned run is complete on every rank.
// On a watchdog timeout the process does not return: rank 0 writes the partial JSON and the
// "timeout after N s" line, then MPI_Abort(kExitTimeout) ends every rank.
Result<BenchRun> run_allreduce(const BenchOptions& opts, std::ostream* table);

// Whole program: MPI_Init_thread, run_allreduce, table + JSON, MPI_Finalize. Returns the exit
// code (kExit*); never calls exit().
int allreduce_main(const BenchOptions& opts);

// Test-only hooks, read from the environment (documented in docs/nccl-bench.md, never set
// them in production):
//   VIGIL_ALLREDUCE_CORRUPT_RANK=r  rank r flips one value of each checked result
//   VIGIL_ALLREDUCE_STALL_RANK=r    rank r sleeps forever before its first timed collective
inline constexpr const char* kCorruptRankEnv = "VIGIL_ALLREDUCE_CORRUPT_RANK";
inline constexpr const char* kStallRankEnv = "VIGIL_ALLREDUCE_STALL_RANK";

}  // namespace vigil::ncclbench
