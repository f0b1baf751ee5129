// slurm::to_hostlist() compresses names with libslurm's hostlist code; no cluster needed.
#include <gtest/gtest.h>
#include <slurm/slurm.h>

#include <string>
#include <vector>

#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {
namespace {

TEST(Hostlist, compresses_consecutive_nodes_into_one_range) {
  EXPECT_EQ(slurm::to_hostlist({"gpu-0", "gpu-1", "gpu-2", "gpu-3"}), "gpu-[0-3]");
}

TEST(Hostlist, sorts_numerically_before_compressing) {
  EXPECT_EQ(slurm::to_hostlist({"gpu-10", "gpu-3", "gpu-1", "gpu-2", "gpu-9"}), "gpu-[1-3,9-10]");
}

TEST(Hostlist, keeps_zero_padding) {
  EXPECT_EQ(slurm::to_hostlist({"sim-0999", "sim-1000", "sim-0998", "sim-1001"}),
            "sim-[0998-1001]");
}

TEST(Hostlist, removes_duplicates) {
  EXPECT_EQ(slurm::to_hostlist({"gpu-1", "gpu-1", "gpu-2"}), "gpu-[1-2]");
}

TEST(Hostlist, joins_different_prefixes_and_plain_names) {
  EXPECT_EQ(slurm::to_hostlist({"login", "gpu-1", "cpu-2", "gpu-0", "cpu-1"}),
            "cpu-[1-2],gpu-[0-1],login");
}

TEST(Hostlist, single_node_and_empty_input) {
  EXPECT_EQ(slurm::to_hostlist({"gpu-7"}), "gpu-7");
  EXPECT_EQ(slurm::to_hostlist({}), "");
}

TEST(Hostlist, thousand_scattered_nodes_expand_back_to_the_same_set) {
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("sim-" + std::to_string(10000 + (i * 7) % 9973));
  std::string hl = slurm::to_hostlist(names);
  size_t joined = 0;
  for (const std::string& n : names) joined += n.size() + 1;
  EXPECT_LT(hl.size(), joined * 2 / 3);  // the common prefix is written once per bracket
  // slurmctld parses node_names with this same hostlist code.
  auto* parsed = slurm_hostlist_create(hl.c_str());  // hostlist_t or hostlist_t*, by release
  ASSERT_NE(parsed, nullptr);
  EXPECT_EQ(slurm_hostlist_count(parsed), 1000);
  for (const std::string& n : names) EXPECT_GE(slurm_hostlist_find(parsed, n.c_str()), 0) << n;
  slurm_hostlist_destroy(parsed);
}

}  // namespace
}  // namespace vigil::drainer
