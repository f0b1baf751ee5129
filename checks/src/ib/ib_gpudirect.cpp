// ib_gpudirect: a node whose SKU says its compute fabric uses GPUDirect RDMA
// (infiniband.gpudirect: true) has a kernel path for it. NVIDIA's GPU Operator documentation
// ("GPUDirect RDMA and GPUDirect Storage"): kernel-mode support comes from "DMA-BUF from the
// Linux kernel or the legacy nvidia-peermem kernel module", DMA-BUF recommended. Without either
// NCCL stages every network byte through host memory (NCCL's NCCL_DMABUF_ENABLE: dma-buf needs
// Linux 5.12 or later and the open GPU kernel modules), and every multi-node job on the node is
// slower although the fabric is fine. Read from files only:
//   <root>/sys/module/nvidia_peermem (or the older MLNX nv_peer_mem): the module is loaded;
//   <root>/proc/driver/nvidia/version: "NVIDIA UNIX Open Kernel Module for x86_64 ..." (open) vs
//   "NVIDIA UNIX x86_64 Kernel Module ..." (proprietary);
//   <root>/proc/sys/kernel/osrelease: the kernel version.
// Neither path is a warn, never a fail: a module not loaded is the node's setup, and whether the
// NIC's driver takes dma-buf is not visible here. What NCCL actually used is in the all_reduce
// checks' reason (nccl_transport, docs/nccl-bench.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "check_factories.h"

namespace vigil {
namespace {

constexpr std::string_view kName = "ib_gpudirect";
constexpr const char* kFaultNone = "VIGIL-IB-NO-GPUDIRECT";

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// "6.8.0-45-generic" -> {6, 8}; {0, 0} when unreadable.
std::pair<int, int> kernel_version(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2) return {0, 0};
  return {major, minor};
}

class IbGpudirectCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext& ctx) const override {
    if (!ctx.sku || ctx.sku->infiniband.ports == 0) return {false, "SKU expects no compute fabric"};
    if (!ctx.sku->infiniband.gpudirect)
      return {false, "SKU does not require GPUDirect RDMA (infiniband.gpudirect)"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    namespace fs = std::filesystem;
    const fs::path root = ctx.sysfs_root.empty() ? fs::path("/") : fs::path(ctx.sysfs_root);
    std::error_code ec;
    for (const char* module : {"nvidia_peermem", "nv_peer_mem"})
      if (fs::is_directory(root / "sys/module" / module, ec))
        return pass(std::string("GPUDirect RDMA through the ") + module + " module");
    const std::string driver = first_line(root / "proc/driver/nvidia/version");
    if (driver.empty())
      return skipped(kName, "NVIDIA driver not loaded (" +
                                (root / "proc/driver/nvidia/version").string() + " unreadable)");
    const bool open = driver.find("Open Kernel Module") != std::string::npos;
    const std::string release = first_line(root / "proc/sys/kernel/osrelease");
    const auto [major, minor] = kernel_version(release);
    const bool dmabuf_kernel = major > 5 || (major == 5 && minor >= 12);
    if (open && dmabuf_kernel)
      return pass("GPUDirect RDMA through dma-buf (open GPU kernel module, kernel " + release +
                  "; nvidia_peermem not loaded)");
    CheckResult r;
    r.check = std::string(kName);
    r.status = Status::kWarn;
    r.fault_code = kFaultNone;
    r.message = std::string("no GPUDirect RDMA path: nvidia_peermem not loaded and ") +
                (open ? "kernel " + release + " is older than 5.12 (dma-buf)"
                      : "the proprietary GPU kernel module has no dma-buf path") +
                "; NCCL stages network traffic through host memory (modprobe nvidia_peermem)";
    return r;
  }

 private:
  static CheckResult pass(std::string message) {
    CheckResult r;
    r.check = std::string(kName);
    r.status = Status::kPass;
    r.message = std::move(message);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_ib_gpudirect_check() { return std::make_unique<IbGpudirectCheck>(); }

}  // namespace vigil
