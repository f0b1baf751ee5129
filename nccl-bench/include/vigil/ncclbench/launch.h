#pragma once
// Runs a benchmark command (mpirun ... vigil-allreduce / all_reduce_perf) with a hard deadline.
// The command gets its own process group; on the deadline the whole group gets SIGTERM, then
// SIGKILL, so no rank outlives the caller. The child also dies with the caller
// (PR_SET_PDEATHSIG), e.g. when vigil-check's runner kills an overrunning check.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "vigil/checks/result.h"

namespace vigil::ncclbench {

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
};

// argv[0] is looked up in PATH. Error only when the command could not be started at all.
Result<LaunchResult> run_command(const std::vector<std::string>& argv, const LaunchOptions& opts);

// The last `lines` lines of `text`, for error messages.
std::string tail_lines(const std::string& text, int lines);

}  // namespace vigil::ncclbench
