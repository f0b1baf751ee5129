#pragma once
// The one process launcher of Vigil: runs a command (mpirun ... vigil-allreduce, sbatch,
// srun -Z, a test's helper) with a hard deadline and captured output.
// The command gets its own process group; on the deadline the whole group gets SIGTERM, then
// SIGKILL, so no rank outlives the caller. The child also dies with the caller
// (PR_SET_PDEATHSIG), e.g. when vigil-check's runner kills an overrunning check. Its stdin is
// /dev/null.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "vigil/base/result.h"

namespace vigil {

struct LaunchResult {
  int exit_code = -1;      // when the command exited normally
  int term_signal = 0;     // when a signal ended it (not ours)
  bool timed_out = false;  // we killed it at the deadline
  double wall_s = 0;
  std::string out;  // stdout (at most max_output bytes, the tail is kept)
  std::string err;  // stderr (same)
};

struct LaunchOptions {
  std::chrono::milliseconds timeout{60000};
  std::vector<std::pair<std::string, std::string>> env;  // added to / replacing the caller's
  std::size_t max_output = 4u << 20;
  bool merge_stderr = false;  // stderr goes to `out` too (one stream, in order)
};

// argv[0] is looked up in PATH. Error only when the command could not be started at all.
Result<LaunchResult> run_command(const std::vector<std::string>& argv, const LaunchOptions& opts);

// Runs every command, at most `concurrency` at a time, each with `opts`; results in input order.
// A command that could not be started gets exit_code 127 and the reason in `err`.
std::vector<LaunchResult> run_commands(const std::vector<std::vector<std::string>>& argvs,
                                       int concurrency, const LaunchOptions& opts);

// Shell-style exit status: the exit code, 128+N for signal N, 124 when we killed it at its
// deadline.
int shell_status(const LaunchResult& r);

}  // namespace vigil
