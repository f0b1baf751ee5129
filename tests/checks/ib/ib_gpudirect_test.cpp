// ib_gpudirect against built sysfs/proc roots: nvidia_peermem (or the older nv_peer_mem), a
// dma-buf path (open GPU kernel module and kernel 5.12+), neither (warn, never fail), and
// when it does not apply. The /proc/driver/nvidia/version lines are the two forms NVIDIA's
// drivers print (open: "NVIDIA UNIX Open Kernel Module for x86_64 ...", seen in public logs
// on NVIDIA driver forums and GitHub issues; proprietary: "NVIDIA UNIX x86_64 Kernel Module").
#include <gtest/gtest.h>

#include "ib_test_util.h"

namespace vigil {
namespace {

using namespace ib_test;

constexpr const char* kOpen =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build";
constexpr const char* kProprietary =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023";

SkuConfig gdr_sku() {
  SkuConfig s = ib_sku(8, 400);
  s.infiniband.gpudirect = true;
  return s;
}

CheckResult run_with(const fs::path& root, const SkuConfig& sku) {
  return make_ib_gpudirect_check()->run(context(root, &sku));
}

TEST(ib_gpudirect, the_peermem_module_passes) {
  TempDir d;
  const fs::path root = d.path();
  fs::create_directories(root / "sys/module/nvidia_peermem");
  const auto r = run_with(root, gdr_sku());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "GPUDirect RDMA through the nvidia_peermem module");
}

TEST(ib_gpudirect, dma_buf_needs_the_open_module_and_kernel_5_12) {
  TempDir d;
  const fs::path root = d.path();
  write_file(root / "proc/driver/nvidia/version", std::string(kOpen) + "\n");
  write_file(root / "proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  auto r = run_with(root, gdr_sku());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("dma-buf (open GPU kernel module, kernel 6.8.0-45-generic"),
            std::string::npos)
      << r.message;
  write_file(root / "proc/sys/kernel/osrelease", "5.10.0-28-amd64\n");
  r = run_with(root, gdr_sku());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-IB-NO-GPUDIRECT");
  EXPECT_NE(r.message.find("kernel 5.10.0-28-amd64 is older than 5.12"), std::string::npos);
  write_file(root / "proc/driver/nvidia/version", std::string(kProprietary) + "\n");
  write_file(root / "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
  r = run_with(root, gdr_sku());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;  // never a fail: the node's setup
  EXPECT_NE(r.message.find("proprietary GPU kernel module has no dma-buf path"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("modprobe nvidia_peermem"), std::string::npos);
}

TEST(ib_gpudirect, without_a_driver_it_is_skipped_and_without_the_sku_key_it_does_not_apply) {
  TempDir d;
  const auto r = run_with(d.path(), gdr_sku());
  EXPECT_EQ(r.status, Status::kSkipped) << r.message;
  const SkuConfig plain = ib_sku(8, 400);
  CheckContext ctx = context(d.path(), &plain);
  EXPECT_FALSE(make_ib_gpudirect_check()->applies(ctx).yes);
  const SkuConfig gdr = gdr_sku();
  ctx.sku = &gdr;
  EXPECT_TRUE(make_ib_gpudirect_check()->applies(ctx).yes);
  ctx.sku = nullptr;
  EXPECT_FALSE(make_ib_gpudirect_check()->applies(ctx).yes);
}

}  // namespace
}  // namespace vigil
