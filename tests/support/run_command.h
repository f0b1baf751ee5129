#pragma once
// Runs a program for a test and captures what it did: stdout, stderr, exit code, with extra
// environment variables, a working directory and a timeout. The child runs in its own process
// group; on timeout the whole group gets SIGTERM, then SIGKILL (two seconds later, or as soon as
// the child itself has exited), and run_command returns only once the group is gone, so a
// timed-out test leaves no processes behind.
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace vigil::testing {

struct CommandOptions {
  // Added to (or replacing entries of) the test process's environment.
  std::map<std::string, std::string> env;
  // Removed from the child's environment (applied after env).
  std::vector<std::string> unset_env;
  std::string cwd;  // empty: the test's working directory
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  std::string stdin_data;  // written to the child's stdin, which is then closed
};

struct CommandResult {
  // Exit status; 128 + N when killed by signal N; 127 when exec failed (message on err);
  // -1 when no process could be created.
  int exit_code = -1;
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr
  // "exit 3 (timed out)\n--- stdout ---\n...\n--- stderr ---\n..." for assertion messages.
  std::string describe() const;
};

// argv[0] is looked up in PATH when it has no '/'.
CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

// Runs `bash -c script`.
CommandResult run_shell(const std::string& script, const CommandOptions& options = {});

}  // namespace vigil::testing
