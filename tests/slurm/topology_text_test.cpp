// slurm::leaf_switches_from_scontrol(): the text `scontrol show topology` prints (the 24.11
// path of load_leaf_switches) to node -> leaf switch; no cluster needed.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "vigil/slurm/slurm_topology.h"

namespace vigil::slurm {
namespace {

TEST(SlurmTopologyText, leaves_expand_their_nodes_and_upper_levels_are_skipped) {
  auto m = leaf_switches_from_scontrol(
      "SwitchName=leaf0 Level=0 LinkSpeed=1 Nodes=gpu-[0-1]\n"
      "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=gpu-[2-3],cpu-7\n"
      "SwitchName=spine Level=1 LinkSpeed=1 Nodes=gpu-[0-3],cpu-7 Switches=leaf[0-1]\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const std::map<std::string, std::string> expected = {{"gpu-0", "leaf0"},
                                                       {"gpu-1", "leaf0"},
                                                       {"gpu-2", "leaf1"},
                                                       {"gpu-3", "leaf1"},
                                                       {"cpu-7", "leaf1"}};
  EXPECT_EQ(*m, expected);
}

TEST(SlurmTopologyText, no_switch_lines_is_an_empty_tree) {
  // A cluster without topology/tree: scontrol prints a notice, not switch lines.
  auto m = leaf_switches_from_scontrol("No topology information available\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_TRUE(m->empty());
  EXPECT_TRUE(leaf_switches_from_scontrol("").value().empty());
}

TEST(SlurmTopologyText, a_node_under_two_leaves_is_an_error) {
  auto m = leaf_switches_from_scontrol(
      "SwitchName=a Level=0 LinkSpeed=1 Nodes=n[1-2]\n"
      "SwitchName=b Level=0 LinkSpeed=1 Nodes=n2\n");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().to_string().find("node n2 hangs from two leaf switches (a, b)"),
            std::string::npos)
      << m.error().to_string();
}

// topology/block (Slurm 23.11+): "BlockName=%s BlockIndex=%u" then " Nodes=%s", one line per
// base block (_print_topo_record, SchedMD src/plugins/topology/block/topology_block.c). On an
// NVL72 cluster each block is one NVLink domain (vigil-submit --nvlink-domains slurm).
TEST(SlurmTopologyText, blocks_map_each_node_to_its_nvlink_domain) {
  auto m = blocks_from_scontrol(
      "BlockName=rack01 BlockIndex=0 Nodes=gb-[001-003]\n"
      "BlockName=rack02 BlockIndex=1 Nodes=gb-[004-005]\n"
      "SwitchName=leaf0 Level=0 LinkSpeed=1 Nodes=cpu-1\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const std::map<std::string, std::string> expected = {{"gb-001", "rack01"},
                                                       {"gb-002", "rack01"},
                                                       {"gb-003", "rack01"},
                                                       {"gb-004", "rack02"},
                                                       {"gb-005", "rack02"}};
  EXPECT_EQ(*m, expected);
  // A tree topology has no blocks, and the block lines are no leaf switches.
  EXPECT_TRUE(blocks_from_scontrol("SwitchName=leaf0 Level=0 Nodes=n1\n").value().empty());
  EXPECT_EQ(
      leaf_switches_from_scontrol("BlockName=rack01 BlockIndex=0 Nodes=gb-001\n").value().size(),
      0u);
  auto twice = blocks_from_scontrol(
      "BlockName=a BlockIndex=0 Nodes=n[1-2]\nBlockName=b BlockIndex=1 Nodes=n2\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().to_string().find("node n2 is in two blocks (a, b)"), std::string::npos)
      << twice.error().to_string();
}

}  // namespace
}  // namespace vigil::slurm
