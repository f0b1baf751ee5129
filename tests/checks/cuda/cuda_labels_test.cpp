// Review F18: CUDA probes name GPUs by NVML index, found by PCI bus id (cuda_labels.h).
#include "cuda/cuda_labels.h"

#include <gtest/gtest.h>

namespace vigil::cuda_probe {

const std::vector<std::string> kNvml = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0",
                                        "00000000:5D:00.0"};

TEST(CudaLabels, nvml_and_cuda_spellings_of_one_bus_id_match) {
  EXPECT_EQ(normal_bus_id("00000000:2A:00.0"), normal_bus_id("0000:2a:00.0"));
  EXPECT_EQ(normal_bus_id("00000001:2A:00.0"), "1:2a:00.0");
  EXPECT_EQ(normal_bus_id(""), "");
}

TEST(CudaLabels, a_subset_in_another_order_is_named_by_nvml_index) {
  // CUDA_VISIBLE_DEVICES=3,1 (or by UUID): ordinal 0 is NVML gpu3, ordinal 1 is gpu1.
  const CudaLabels l = cuda_labels(kNvml, {"0000:5d:00.0", "0000:2a:00.0"});
  EXPECT_TRUE(l.matched);
  EXPECT_EQ(l.label, (std::vector<int>{3, 1}));
  EXPECT_EQ(l.ordinal_of(1), 1);
  EXPECT_EQ(l.ordinal_of(3), 0);
  EXPECT_EQ(l.ordinal_of(2), -1);
}

TEST(CudaLabels, anything_unmatched_falls_back_to_ordinals_and_says_so) {
  const CudaLabels no_nvml = cuda_labels({}, {"0000:18:00.0", "0000:2a:00.0"});
  EXPECT_FALSE(no_nvml.matched);
  EXPECT_EQ(no_nvml.label, (std::vector<int>{0, 1}));
  const CudaLabels unknown = cuda_labels(kNvml, {"0000:18:00.0", "0000:99:00.0"});
  EXPECT_FALSE(unknown.matched);
  EXPECT_EQ(unknown.label, (std::vector<int>{0, 1}));
  const CudaLabels twice = cuda_labels(kNvml, {"0000:18:00.0", "0000:18:00.0"});
  EXPECT_FALSE(twice.matched);
}

}  // namespace vigil::cuda_probe
