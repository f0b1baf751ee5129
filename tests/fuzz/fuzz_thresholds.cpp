// Per-SKU thresholds YAML (checks/thresholds/*.yaml): load_sku_file never crashes, and either
// loads or says why.
#include <set>

#include "fuzz_support.h"
#include "vigil/checks/sku.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static vigil::fuzz::ScratchFile file(".yaml");
  // A fixed list, not registry.h's known_check_names(): that would link every check.
  static const std::set<std::string> known = {"fabric_allreduce_ib",
                                              "gpu_count",
                                              "gpu_gemm",
                                              "gpu_hbm",
                                              "gpu_memtest",
                                              "gpu_pcie_bw",
                                              "ib_counters",
                                              "ib_port",
                                              "nccl_allreduce_ib",
                                              "nccl_allreduce_nvlink",
                                              "nvml_clock_events",
                                              "nvml_ecc",
                                              "nvml_nvlink",
                                              "nvml_pcie",
                                              "nvml_retired_pages",
                                              "nvml_row_remap",
                                              "nvml_temperature",
                                              "nvml_xid"};
  auto loaded = vigil::load_sku_file(file.write(vigil::fuzz::as_text(data, size)), known);
  if (!loaded && loaded.errors.empty()) vigil::fuzz::broken("refused without an error");
  return 0;
}
