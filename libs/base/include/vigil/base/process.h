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
  std::vector<std::string> unset_env;                    // removed (after env)
  std::string cwd;                                       // empty: the caller's
  std::string stdin_data;  // written to the command's stdin, then closed; empty: /dev/null-like
  std::size_t max_output = 4u << 20;  // per stream; the tail is kept
  bool merge_stderr = false;          // stderr goes to `out` too (one stream, in order)
  bool die_with_parent = true;        // PR_SET_PDEATHSIG: SIGKILL when the calling thread dies
};

// argv[0] is looked up in the PATH of the command's environment. Error only when the command
// could not be started at all (a failed exec is exit code 127 with the reason on stderr). On
// the deadline the process group gets SIGTERM, then SIGKILL 2 s later; a timed-out command's
// group is gone when this returns. After the command exits, descendants that kept its output
// open get 0.5 s before reading stops (a daemon started in the background cannot hang it).
Result<LaunchResult> run_command(const std::vector<std::string>& argv, const LaunchOptions& opts);

// Runs every command, at most `concurrency` at a time, each with `opts`; results in input order.
// A command that could not be started gets exit_code 127 and the reason in `err`.
std::vector<LaunchResult> run_commands(const std::vector<std::vector<std::string>>& argvs,
                                       int concurrency, const LaunchOptions& opts);

// Shell-style exit status: the exit code, 128+N for signal N, 124 when we killed it at its
// deadline.
int shell_status(const LaunchResult& r);

}  // namespace vigil
