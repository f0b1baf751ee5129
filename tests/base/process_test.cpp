#include "vigil/base/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace nb = vigil;
using namespace std::chrono_literals;

TEST(Launch, captures_output_exit_code_and_environment) {
  nb::LaunchOptions o;
  o.timeout = 10s;
  o.env = {{"VIGIL_LAUNCH_TEST", "hello"}};
  auto r =
      nb::run_command({"/bin/sh", "-c", "echo out $VIGIL_LAUNCH_TEST; echo err >&2; exit 3"}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->out, "out hello\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST(Launch, kills_the_whole_process_group_at_the_deadline) {
  char dir[] = "/tmp/vigil-launch-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pidfile = std::string(dir) + "/grandchild.pid";
  nb::LaunchOptions o;
  o.timeout = 1s;
  const auto t0 = std::chrono::steady_clock::now();
  // A grandchild that would outlive a plain kill of the shell.
  auto r = nb::run_command({"/bin/sh", "-c", "sleep 60 & echo $! > " + pidfile + "; wait"}, o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(wall, 5.0);
  std::ifstream f(pidfile);
  pid_t grandchild = 0;
  f >> grandchild;
  ASSERT_GT(grandchild, 0);
  std::this_thread::sleep_for(200ms);
  // Gone, or a zombie waiting for init to reap it.
  std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
  std::string pid_s, comm, state;
  bool alive = stat >> pid_s >> comm >> state && state != "Z";
  EXPECT_FALSE(alive) << "grandchild " << grandchild << " survived";
  std::remove(pidfile.c_str());
  rmdir(dir);
}

TEST(Launch, missing_binary_exits_127) {
  auto r = nb::run_command({"/nonexistent/vigil-allreduce"}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 127);
  EXPECT_NE(r->err.find("exec failed"), std::string::npos);
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// run_commands with the options vigil-submit uses: stdout and stderr on one stream.
std::vector<vigil::LaunchResult> run_all(const std::vector<std::vector<std::string>>& argvs,
                                         int concurrency, int timeout_s) {
  vigil::LaunchOptions o;
  o.timeout = std::chrono::seconds(timeout_s);
  o.merge_stderr = true;
  return vigil::run_commands(argvs, concurrency, o);
}

TEST(RunProcesses, passes_exit_codes_and_output_through) {
  const auto r = run_all(
      {{"bash", "-c", "echo out; echo err >&2; exit 3"}, {"true"}, {"/nonexistent/vigil-binary"}},
      2, 30);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].exit_code, 3);
  EXPECT_NE(r[0].out.find("out"), std::string::npos);
  EXPECT_NE(r[0].out.find("err"), std::string::npos);
  EXPECT_FALSE(r[0].timed_out);
  EXPECT_EQ(r[1].exit_code, 0);
  EXPECT_EQ(r[2].exit_code, 127);
  EXPECT_NE(r[2].out.find("exec failed"), std::string::npos) << r[2].out;
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
  const auto r = run_all(argvs, 2, 30);
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
  const auto r = run_all(
      {{"bash", "-c", "sleep 60 & echo $! > " + pid_file + "; wait"}, {"sleep", "0.1"}}, 2, 1);
  EXPECT_LT(seconds_since(start), 10.0);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].timed_out);
  EXPECT_EQ(vigil::shell_status(r[0]), 124);
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
