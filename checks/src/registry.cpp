#include "vigil/checks/registry.h"

#include "allreduce/allreduce_launch.h"
#include "check_factories.h"
#include "vigil/report/check_catalog.h"

namespace vigil {

// Each list is the check catalog (vigil/report/check_catalog.h) filtered by its suite, in the
// catalog's order; tests/checks/check_catalog_registry_test.cpp holds them to it.

std::vector<std::unique_ptr<Check>> all_checks() {
  // Run order: cheap counter reads first, then link state, then bandwidth/compute probes.
  using Factory = std::unique_ptr<Check> (*)();
  static const std::vector<Factory> kChecks = {
      // --- NVML ---
      make_gpu_count_check,
      make_nvml_ecc_check,
      make_nvml_row_remap_check,
      make_nvml_retired_pages_check,
      make_nvml_clock_events_check,
      make_nvml_pcie_check,
      make_nvml_nvlink_check,
      make_nvml_fabric_check,
      make_nvlink_imex_check,
      make_nvml_recovery_check,
      make_nvml_temperature_check,
      make_nvml_xid_check,
      // --- InfiniBand ---
      make_ib_port_check,
      make_ib_counters_check,
      make_ib_gpudirect_check,
      // --- CUDA probes ---
      make_gpu_gemm_check,
      make_gpu_hbm_check,
      make_gpu_pcie_bw_check,
      make_gpu_memtest_check,
      // --- all_reduce ---
      make_nccl_allreduce_nvlink_check,
      make_nccl_allreduce_ib_check,
      make_host_allreduce_check,
  };
  std::vector<std::unique_ptr<Check>> out;
  for (Factory f : kChecks) out.push_back(f());
  return out;
}

namespace {

AllreduceTuning sweep(const std::string& min_bytes, const std::string& max_bytes) {
  AllreduceTuning tuning;
  if (!min_bytes.empty()) tuning.min_bytes = min_bytes;
  if (!max_bytes.empty()) tuning.max_bytes = max_bytes;
  return tuning;
}

}  // namespace

std::vector<std::unique_ptr<Check>> fabric_checks(const std::string& min_bytes,
                                                  const std::string& max_bytes) {
  std::vector<std::unique_ptr<Check>> out;
  out.push_back(make_fabric_allreduce_ib_check(sweep(min_bytes, max_bytes)));
  return out;
}

std::vector<std::unique_ptr<Check>> domain_checks(const std::string& min_bytes,
                                                  const std::string& max_bytes) {
  std::vector<std::unique_ptr<Check>> out;
  out.push_back(make_domain_allreduce_nvlink_check(sweep(min_bytes, max_bytes)));
  return out;
}

std::vector<std::unique_ptr<Check>> passive_checks(PassiveSelection selection) {
  std::vector<std::unique_ptr<Check>> out;
  // kmsg_xid first: it needs neither NVML nor the SKU, and a GPU with GSP trouble (Xid 119/120,
  // "Timeout after 6s of waiting for RPC response") can make every NVML call block until the
  // hook's time box ends. The fatal XID must be reported before that.
  out.push_back(make_kmsg_xid_check());
  out.push_back(make_gpu_count_check());
  out.push_back(make_nvml_ecc_check());
  out.push_back(make_nvml_row_remap_check());
  out.push_back(make_nvml_retired_pages_check());
  out.push_back(make_nvml_clock_events_check());
  out.push_back(make_nvml_nvlink_check());
  out.push_back(make_nvml_fabric_check());
  out.push_back(make_nvml_recovery_check());
  if (selection.after_job) out.push_back(make_gpu_leftovers_check());
  out.push_back(make_ib_port_check());
  if (selection.cuda_sanity) out.push_back(make_gpu_sanity_check());
  return out;
}

std::set<std::string> known_check_names() {
  // The catalog names exactly the checks of the four lists above (check_catalog_registry_test).
  std::set<std::string> names;
  for (const CheckSpec& c : check_catalog()) names.insert(std::string(c.name));
  return names;
}

}  // namespace vigil
