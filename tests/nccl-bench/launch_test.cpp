#include "vigil/ncclbench/launch.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace nb = vigil::ncclbench;
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

TEST(Launch, tail_lines_keeps_the_last_lines) {
  EXPECT_EQ(nb::tail_lines("a\nb\nc\nd\n", 2), "c\nd");
  EXPECT_EQ(nb::tail_lines("only", 3), "only");
  EXPECT_EQ(nb::tail_lines("", 3), "");
}
