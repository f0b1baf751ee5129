// Slurm's tree topology (vigil/slurm/slurm_topology.h: libslurm up to 23.02, scontrol on 24.11)
// on a real local cluster started with TopologyPlugin=topology/tree and a topology.conf of two
// leaf switches under a spine; and `vigil-check fabric --topology slurm` reading the same tree
// (docs/fabric.md).
#include <gtest/gtest.h>
#include <slurm/slurm.h>

#include <map>
#include <string>

#include "local_slurm_cluster.h"
#include "run_command.h"
#include "vigil/slurm/slurm_topology.h"

namespace vigil::slurm {
namespace {

using testing::LocalSlurmCluster;

LocalSlurmCluster::Options tree_cluster() {
  LocalSlurmCluster::Options o;
  o.extra_conf = "TopologyPlugin=topology/tree";
  o.etc_files["topology.conf"] =
      "# two leaves under one spine\n"
      "SwitchName=leaf0 Nodes=gpu-[0-1]\n"
      "SwitchName=leaf1 Nodes=gpu-[2-3]\n"
      "SwitchName=spine Switches=leaf[0-1]\n";
  return o;
}

TEST(SlurmTopology, leaf_switches_of_a_tree_topology_come_from_slurmctld) {
  LocalSlurmCluster cluster(tree_cluster());
  auto leaves = load_leaf_switches(cluster.slurm_conf());
  ASSERT_TRUE(leaves.ok()) << leaves.error().to_string();
  const std::map<std::string, std::string> expected = {
      {"gpu-0", "leaf0"}, {"gpu-1", "leaf0"}, {"gpu-2", "leaf1"}, {"gpu-3", "leaf1"}};
  EXPECT_EQ(*leaves, expected);
  // scontrol, Slurm's own reader, agrees (the spine is not a leaf).
  const auto sc = cluster.run({"scontrol", "show", "topology"});
  EXPECT_NE(sc.out.find("SwitchName=leaf1 Level=0"), std::string::npos) << sc.describe();
  EXPECT_NE(sc.out.find("SwitchName=spine Level=1"), std::string::npos) << sc.describe();
  // What this release's scontrol prints reads back to the same map (the 24.11 path reads it).
  auto from_text = leaf_switches_from_scontrol(sc.out);
  ASSERT_TRUE(from_text.ok()) << from_text.error().to_string();
  EXPECT_EQ(*from_text, expected) << sc.out;

#ifdef VIGIL_CHECK_BINARY
  // vigil-check fabric --topology slurm: the job's pairs are judged with Slurm's tree. Every pair
  // replays one genuine nccl-tests log (a fake mpirun), so no pair is slow against the others.
  const std::string ar = std::string(VIGIL_SOURCE_DIR) + "/tests/checks/allreduce/";
  testing::CommandOptions o;
  o.env = cluster.env();
  o.env["FAKE_PERF_MODE"] = std::string("log:") + VIGIL_NCCL_TESTS_LOGS +
                            "/10-gh200x2-2node-slingshot-v2.18.2-unalign-header-healthy.txt";
  o.env["VIGIL_FAKE_NVML_FIXTURE"] =
      std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nodes/gpu-0/nvml.json";
  o.timeout = std::chrono::seconds(120);
  std::vector<std::string> argv = {VIGIL_CHECK_BINARY,
                                   "fabric",
                                   "--nodes",
                                   "gpu-0,gpu-1,gpu-2,gpu-3",
                                   "--ranks",
                                   "4",
                                   "--backend",
                                   "host",
                                   "--mpirun",
                                   ar + "fake_mpirun.sh",
                                   "--allreduce-binary",
                                   ar + "fake_all_reduce_perf.sh",
                                   "--thresholds",
                                   std::string(VIGIL_SOURCE_DIR) + "/checks/thresholds",
                                   "--run-id",
                                   "topo-slurm",
                                   "--format",
                                   "json",
                                   "--topology",
                                   "slurm",
                                   "--nvml-library",
                                   VIGIL_FAKE_NVML_LIBRARY};
  const auto r = testing::run_command(argv, o);
  EXPECT_NE(r.err.find("topology from Slurm: 4 nodes under 2 leaf switches"), std::string::npos)
      << r.describe();
  // Every pair replays the same figure: all good against each other. The shipped H100 fabric
  // floor is unconfirmed (docs/thresholds.md, "Calibration"), so it does not mark them slow.
  EXPECT_EQ(r.exit_code, 0) << r.describe();
#endif
}

// topology/block (Slurm 23.11+; 24.11 in the trixie root's lean set, 26.05 in forky's): the
// grouping `vigil-submit --nvlink-domains slurm` takes NVLink domains from, read from a real
// slurmctld's `scontrol show topology` (SUNK writes one block per NVL72 domain, docs/fabric.md).
TEST(SlurmTopology, blocks_of_a_block_topology_come_from_slurmctld) {
  if (SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 11, 0))
    GTEST_SKIP() << "topology/block came with Slurm 23.11; this build's Slurm is older";
  {
    LocalSlurmCluster::Options o;
    o.extra_conf = "TopologyPlugin=topology/block";
    o.etc_files["topology.conf"] =
        "# two NVLink domains of two trays each\n"
        "BlockName=nvl0 Nodes=gpu-[0-1]\n"
        "BlockName=nvl1 Nodes=gpu-[2-3]\n";
    LocalSlurmCluster cluster(o);
    auto blocks = load_blocks(cluster.slurm_conf());
    ASSERT_TRUE(blocks.ok()) << blocks.error().to_string();
    const std::map<std::string, std::string> expected = {
        {"gpu-0", "nvl0"}, {"gpu-1", "nvl0"}, {"gpu-2", "nvl1"}, {"gpu-3", "nvl1"}};
    EXPECT_EQ(*blocks, expected) << cluster.run({"scontrol", "show", "topology"}).out;
  }
  // A tree cluster has no blocks: empty, not an error.
  LocalSlurmCluster tree(tree_cluster());
  auto none = load_blocks(tree.slurm_conf());
  ASSERT_TRUE(none.ok()) << none.error().to_string();
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace vigil::slurm
