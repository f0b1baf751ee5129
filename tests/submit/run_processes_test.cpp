// vigil-submit's process launcher: bounded concurrency, a timeout that kills the whole process
// group (srun and whatever it started), exit codes and output passed through.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "vigil/submit/submit.h"

namespace {

using vigil::submit::run_processes;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

TEST(RunProcesses, passes_exit_codes_and_output_through) {
  const auto r = run_processes(
      {{"bash", "-c", "echo out; echo err >&2; exit 3"}, {"true"}, {"/nonexistent/vigil-binary"}},
      2, 30);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].exit_code, 3);
  EXPECT_NE(r[0].output.find("out"), std::string::npos);
  EXPECT_NE(r[0].output.find("err"), std::string::npos);
  EXPECT_FALSE(r[0].timed_out);
  EXPECT_EQ(r[1].exit_code, 0);
  EXPECT_EQ(r[2].exit_code, 127);
  EXPECT_NE(r[2].output.find("cannot execute"), std::string::npos) << r[2].output;
}

TEST(RunProcesses, never_runs_more_than_the_concurrency_at_once) {
  // Each child appends "+" when it starts and "-" when it ends; the running count read back from
  // the log must never exceed 2.
  char tmpl[] = "/tmp/vigil-procs-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string log = std::string(tmpl) + "/log";
  std::vector<std::vector<std::string>> argvs(
      6, {"bash", "-c", "echo + >> " + log + "; sleep 0.4; echo - >> " + log});
  const auto start = Clock::now();
  const auto r = run_processes(argvs, 2, 30);
  const double elapsed = seconds_since(start);
  for (const auto& p : r) EXPECT_EQ(p.exit_code, 0);
  std::ifstream in(log);
  std::string line;
  int running = 0, peak = 0, lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    running += line == "+" ? 1 : -1;
    peak = std::max(peak, running);
  }
  EXPECT_EQ(lines, 12);
  EXPECT_LE(peak, 2);
  EXPECT_GE(elapsed, 1.1);  // 3 waves of 0.4 s
  std::filesystem::remove_all(tmpl);
}

TEST(RunProcesses, timeout_kills_the_whole_process_group) {
  char tmpl[] = "/tmp/vigil-procs-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string pid_file = std::string(tmpl) + "/grandchild.pid";
  const auto start = Clock::now();
  // The grandchild ignores nothing but would outlive its parent if only the parent were killed.
  const auto r = run_processes(
      {{"bash", "-c", "sleep 60 & echo $! > " + pid_file + "; wait"}, {"sleep", "0.1"}}, 2, 1);
  EXPECT_LT(seconds_since(start), 10.0);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].timed_out);
  EXPECT_EQ(r[0].exit_code, 124);
  EXPECT_FALSE(r[1].timed_out);
  EXPECT_EQ(r[1].exit_code, 0);
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = kill(grandchild, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the timeout";
  std::filesystem::remove_all(tmpl);
}

}  // namespace
