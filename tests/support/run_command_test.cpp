// run_command(): what other tests rely on when they run binaries and scripts.
#include "run_command.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>

namespace {

using vigil::testing::CommandOptions;
using vigil::testing::run_command;
using vigil::testing::run_shell;

// Exists and is not a zombie (an orphan's zombie may linger until PID 1 reaps it).
bool pid_alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

TEST(RunCommand, captures_stdout_stderr_and_exit_code_separately) {
  const auto r = run_shell("echo out; echo err >&2; exit 7");
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(RunCommand, adds_and_removes_environment_variables_and_sets_cwd) {
  setenv("VIGIL_RUN_COMMAND_TEST_UNSET", "present", 1);
  CommandOptions o;
  o.env["VIGIL_RUN_COMMAND_TEST"] = "hello world";
  o.unset_env = {"VIGIL_RUN_COMMAND_TEST_UNSET"};
  o.cwd = "/tmp";
  const auto r =
      run_shell("echo \"$VIGIL_RUN_COMMAND_TEST|${VIGIL_RUN_COMMAND_TEST_UNSET:-gone}|$PWD\"", o);
  unsetenv("VIGIL_RUN_COMMAND_TEST_UNSET");
  EXPECT_EQ(r.out, "hello world|gone|/tmp\n") << r.describe();
}

TEST(RunCommand, feeds_stdin_data) {
  CommandOptions o;
  o.stdin_data = std::string(200000, 'x') + "\n";
  const auto r = run_command({"wc", "-c"}, o);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "200001\n");
}

TEST(RunCommand, timeout_kills_the_whole_process_group) {
  CommandOptions o;
  o.timeout = std::chrono::milliseconds(500);
  const auto start = std::chrono::steady_clock::now();
  // The grandchild ignores TERM; it must still be gone (KILL) when run_command returns.
  const auto r = run_shell("(trap '' TERM; sleep 30; echo survived) & echo $!; wait", o);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.describe();
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  const int grandchild = std::stoi(r.out);
  EXPECT_FALSE(pid_alive(grandchild)) << "grandchild " << grandchild << " still alive";
}

TEST(RunCommand, returns_when_a_background_descendant_keeps_stdout_open) {
  CommandOptions o;
  o.timeout = std::chrono::seconds(20);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_shell("sleep 5 & echo $!", o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  const int sleeper = std::stoi(r.out);
  EXPECT_TRUE(pid_alive(sleeper));
  kill(sleeper, SIGKILL);
}

TEST(RunCommand, reports_a_program_that_cannot_be_executed) {
  const auto r = run_command({"/nonexistent/vigil-no-such-program", "--help"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("exec failed"), std::string::npos) << r.err;
}

}  // namespace
