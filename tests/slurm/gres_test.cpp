// gpu_count over the Gres strings Slurm prints: scontrol show node and libslurm's node_info_t
// (22.05: "gpu:8"; typed with sockets, slurm.conf(5) and scontrol(1): "gpu:h100:8(S:0-1)").
#include <gtest/gtest.h>

#include "vigil/slurm/slurm_api.h"

namespace vigil::slurm {
namespace {

TEST(GpuCount, reads_the_gpus_of_a_node_gres) {
  EXPECT_EQ(gpu_count("gpu:8"), 8);
  EXPECT_EQ(gpu_count("gpu:h100:8(S:0-1)"), 8);
  // Socket lists hold commas that do not separate entries.
  EXPECT_EQ(gpu_count("gpu:h100:4(S:0,2),gpu:a100:2(S:1)"), 6);
  EXPECT_EQ(gpu_count("nic:2,gpu:4,shard:32"), 4);
  EXPECT_EQ(gpu_count("gpu:h100"), 1);  // a type without a count is one (slurm.conf(5))
  EXPECT_EQ(gpu_count("gpu"), 1);
}

TEST(GpuCount, a_node_without_gpus_has_none) {
  EXPECT_EQ(gpu_count(""), 0);
  EXPECT_EQ(gpu_count("(null)"), 0);
  EXPECT_EQ(gpu_count("mps:400"), 0);
  EXPECT_EQ(gpu_count("gpus:8"), 0);  // another name, not gpu
}

// What gpu_count (the check) expects from Slurm: the physical GPUs, never MIG slices (Slurm's
// gres.html "MIG Support": AutoDetect=nvml names their types after the profile).
TEST(GpuCount, mig_slices_say_nothing_about_the_physical_gpus) {
  EXPECT_EQ(physical_gpu_count("gpu:h100:8(S:0-1)"), 8);
  EXPECT_EQ(physical_gpu_count("gpu:4"), 4);
  EXPECT_EQ(physical_gpu_count("(null)"), 0);
  EXPECT_EQ(physical_gpu_count("gpu:nvidia_a100_1g.5gb:7(S:0)"), 0);
  EXPECT_EQ(physical_gpu_count("gpu:a100:4,gpu:a100_3g.40gb:2"), 0);
  EXPECT_EQ(physical_gpu_count("gpu:1g.10gb:14"), 0);
}

// ActiveFeatures as scontrol prints it and libslurm's node_info_t.features_act holds it (the
// 24.11.5 capture tests/fixtures/scontrol/show-node-24.11.5-production.txt: "(null)").
TEST(FeatureList, splits_a_nodes_active_features) {
  EXPECT_EQ(split_feature_list("ib,sim"), (std::vector<std::string>{"ib", "sim"}));
  EXPECT_EQ(split_feature_list("h100"), (std::vector<std::string>{"h100"}));
  EXPECT_TRUE(split_feature_list("(null)").empty());
  EXPECT_TRUE(split_feature_list("").empty());
  EXPECT_EQ(split_feature_list("a,,b,"), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace vigil::slurm
