#pragma once
// Factory functions for every check, one per check file; registry.cpp names each by its catalog
// line.
#include <memory>

#include "vigil/checks/check.h"

namespace vigil {

// NVML (src/nvml/)
std::unique_ptr<Check> make_gpu_count_check();
std::unique_ptr<Check> make_nvml_ecc_check();
std::unique_ptr<Check> make_nvml_row_remap_check();
std::unique_ptr<Check> make_nvml_retired_pages_check();
std::unique_ptr<Check> make_nvml_clock_events_check();
std::unique_ptr<Check> make_nvml_pcie_check();
std::unique_ptr<Check> make_nvml_nvlink_check();
std::unique_ptr<Check> make_nvml_fabric_check();
std::unique_ptr<Check> make_nvlink_imex_check();
std::unique_ptr<Check> make_nvml_recovery_check();
std::unique_ptr<Check> make_nvml_temperature_check();
std::unique_ptr<Check> make_nvml_xid_check();
// Passive checks of the Slurm hooks (src/passive/)
std::unique_ptr<Check> make_kmsg_xid_check();
std::unique_ptr<Check> make_gpu_leftovers_check();
// InfiniBand sysfs (src/ib/)
std::unique_ptr<Check> make_ib_port_check();
std::unique_ptr<Check> make_ib_counters_check();
std::unique_ptr<Check> make_ib_gpudirect_check();
// Host checks around the GPUs (src/host/)
std::unique_ptr<Check> make_pcie_aer_check();
std::unique_ptr<Check> make_host_services_check();
std::unique_ptr<Check> make_host_mounts_check();
std::unique_ptr<Check> make_host_idle_memory_check();
std::unique_ptr<Check> make_host_nvme_check();
std::unique_ptr<Check> make_ib_link_downtime_check();
std::unique_ptr<Check> make_site_check(const SiteCheckSpec& spec);
// CUDA probes (src/cuda/)
std::unique_ptr<Check> make_gpu_gemm_check();
std::unique_ptr<Check> make_gpu_hbm_check();
std::unique_ptr<Check> make_gpu_pcie_bw_check();
std::unique_ptr<Check> make_gpu_memtest_check();
std::unique_ptr<Check> make_gpu_sdc_check();
std::unique_ptr<Check> make_gpu_soak_check();
std::unique_ptr<Check> make_gpu_sanity_check();  // the hooks' optional CUDA sanity check
// all_reduce via vigil-allreduce (src/allreduce/)
std::unique_ptr<Check> make_nccl_allreduce_nvlink_check();
std::unique_ptr<Check> make_nccl_allreduce_ib_check();
std::unique_ptr<Check> make_host_allreduce_check();

}  // namespace vigil
