// The scontrol backend's parser (scontrol.h) on genuine `scontrol -o show node` output
// (tests/fixtures/scontrol/SOURCES.md); the backend itself runs against the real cluster in
// slurm_client_test (Backends/SlurmClient.*/scontrol).
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "vigil/slurm/scontrol.h"

namespace vigil::slurm {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/scontrol/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::int64_t local(int y, int mo, int d, int h, int mi, int s) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = -1;
  return static_cast<std::int64_t>(std::mktime(&tm));
}

}  // namespace

TEST(ScontrolText, reads_slurm_2205_node_lines_with_the_reason_and_its_time) {
  auto nodes = nodes_from_scontrol(fixture("show-node-22.05.txt"));
  ASSERT_TRUE(nodes.ok()) << nodes.error().to_string();
  ASSERT_EQ(nodes->size(), 2u);
  const SlurmNodeInfo& idle = (*nodes)[0];
  EXPECT_EQ(idle.name, "gpu-0");
  EXPECT_EQ(idle.state, "IDLE");
  EXPECT_FALSE(idle.drain);
  EXPECT_EQ(idle.reason, "");
  EXPECT_EQ(idle.partitions, (std::vector<std::string>{"gpu", "vigil"}));
  EXPECT_EQ(idle.address, "127.0.0.1");
  EXPECT_EQ(idle.hostname, "localhost");
  EXPECT_EQ(idle.boot_time, local(2026, 11, 26, 0, 23, 32));  // the repair ladder's new-boot test
  const SlurmNodeInfo& drained = (*nodes)[1];
  EXPECT_TRUE(drained.drain);
  EXPECT_EQ(drained.state, "IDLE");
  // A reason with brackets of its own keeps them; the last one is scontrol's [user@time].
  EXPECT_EQ(drained.reason, "vigil: gpu-count gpu_count 7<8 [sic]");
  EXPECT_EQ(drained.reason_time, local(2026, 11, 26, 5, 19, 22));
}

TEST(ScontrolText, state_marks_and_flags) {
  auto nodes = nodes_from_scontrol(
      "NodeName=a State=DOWN*+DRAIN Reason=dead [slurm@2026-11-26T01:00:00]\n"
      "NodeName=b State=IDLE+MAINTENANCE+RESERVED\n"
      "NodeName=c State=MIXED~+DRAIN+FAIL Reason=x [root@2026-11-26T01:00:00] Comment=later\n"
      "NodeName=d State=IDLE+COMPLETING+DRAIN BootTime=None\n"
      "NodeName=e State=DOWN+DRAIN+REBOOT_ISSUED\n"  // as 22.05 printed it mid-reboot
      "NodeName=f State=IDLE@\n");
  ASSERT_TRUE(nodes.ok()) << nodes.error().to_string();
  ASSERT_EQ(nodes->size(), 6u);
  EXPECT_TRUE((*nodes)[4].reboot_pending && (*nodes)[4].down);
  EXPECT_TRUE((*nodes)[5].reboot_pending);
  EXPECT_FALSE((*nodes)[3].reboot_pending);
  EXPECT_TRUE((*nodes)[3].completing && (*nodes)[3].drain);
  EXPECT_FALSE((*nodes)[0].completing);
  EXPECT_EQ((*nodes)[3].boot_time, 0);  // unknown
  EXPECT_TRUE((*nodes)[0].down && (*nodes)[0].not_responding && (*nodes)[0].drain);
  EXPECT_EQ((*nodes)[0].state, "DOWN");
  EXPECT_TRUE((*nodes)[1].maint && (*nodes)[1].reserved && !(*nodes)[1].drain);
  EXPECT_EQ((*nodes)[2].state, "MIXED");
  EXPECT_TRUE((*nodes)[2].fail);
  EXPECT_EQ((*nodes)[2].reason, "x");  // fields after the bracket are not the reason
}

TEST(ScontrolText, a_line_without_a_node_name_is_an_error_naming_it) {
  auto bad = nodes_from_scontrol("NodeName=a State=IDLE\nslurm_load_node error: oops\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("line 2"), std::string::npos) << bad.error().to_string();
}

}  // namespace vigil::slurm
