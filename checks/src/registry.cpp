#include "vigil/checks/registry.h"

#include <string_view>
#include <utility>

#include "allreduce/allreduce_launch.h"
#include "check_factories.h"
#include "vigil/report/check_catalog.h"

namespace vigil {

namespace {

using Factory = std::unique_ptr<Check> (*)();

// The factory of each check the node suites and the hooks run, by catalog name. What runs, in
// which suite and in which order is the catalog's (vigil/report/check_catalog.h); this table
// only says how each is made. A catalog entry without a factory drops out of its suites, which
// tests/checks/check_catalog_registry_test.cpp fails on; a row here whose name has no catalog
// line is never made.
constexpr std::pair<std::string_view, Factory> kFactories[] = {
    {"kmsg_xid", make_kmsg_xid_check},
    {"gpu_count", make_gpu_count_check},
    {"nvml_ecc", make_nvml_ecc_check},
    {"nvml_row_remap", make_nvml_row_remap_check},
    {"nvml_retired_pages", make_nvml_retired_pages_check},
    {"nvml_clock_events", make_nvml_clock_events_check},
    {"nvml_pcie", make_nvml_pcie_check},
    {"nvml_nvlink", make_nvml_nvlink_check},
    {"nvml_fabric", make_nvml_fabric_check},
    {"nvlink_imex", make_nvlink_imex_check},
    {"nvml_recovery", make_nvml_recovery_check},
    {"nvml_temperature", make_nvml_temperature_check},
    {"nvml_xid", make_nvml_xid_check},
    {"gpu_leftovers", make_gpu_leftovers_check},
    {"ib_port", make_ib_port_check},
    {"ib_counters", make_ib_counters_check},
    {"ib_gpudirect", make_ib_gpudirect_check},
    {"ib_link_downtime", make_ib_link_downtime_check},
    {"pcie_aer", make_pcie_aer_check},
    {"host_services", make_host_services_check},
    {"host_mounts", make_host_mounts_check},
    {"host_idle_memory", make_host_idle_memory_check},
    {"host_nvme", make_host_nvme_check},
    {"gpu_gemm", make_gpu_gemm_check},
    {"gpu_hbm", make_gpu_hbm_check},
    {"gpu_pcie_bw", make_gpu_pcie_bw_check},
    {"gpu_memtest", make_gpu_memtest_check},
    {"gpu_sdc", make_gpu_sdc_check},
    {"gpu_soak", make_gpu_soak_check},
    {"gpu_sanity", make_gpu_sanity_check},
    {"nccl_allreduce_nvlink", make_nccl_allreduce_nvlink_check},
    {"nccl_allreduce_ib", make_nccl_allreduce_ib_check},
    {"host_allreduce", make_host_allreduce_check},
};

// The catalog's checks that `wanted` selects, in the catalog's order, each made by its factory.
template <typename Wanted>
std::vector<std::unique_ptr<Check>> from_catalog(Wanted wanted) {
  std::vector<std::unique_ptr<Check>> out;
  for (const CheckSpec& spec : check_catalog()) {
    if (!wanted(spec)) continue;
    for (const auto& [name, make] : kFactories)
      if (name == spec.name) out.push_back(make());
  }
  return out;
}

AllreduceTuning sweep(const std::string& min_bytes, const std::string& max_bytes) {
  AllreduceTuning tuning;
  if (!min_bytes.empty()) tuning.min_bytes = min_bytes;
  if (!max_bytes.empty()) tuning.max_bytes = max_bytes;
  return tuning;
}

}  // namespace

// The site's checks that run in the hooks (`hooks`) or in `vigil-check run`.
static void add_site_checks(std::vector<std::unique_ptr<Check>>& out, const SkuSet* skus,
                            bool hooks) {
  if (!skus) return;
  for (const SiteCheckSpec& s : skus->site_checks)
    if (hooks ? s.in_hooks : s.in_run) out.push_back(make_site_check(s));
}

std::vector<std::unique_ptr<Check>> all_checks(const SkuSet* skus) {
  // The qualify suite holds the full one, which holds the quick one (the runner filters by the
  // catalog's suites).
  auto out = from_catalog([](const CheckSpec& s) {
    return s.runs_in(CheckSuite::kFull) || s.runs_in(CheckSuite::kQualify);
  });
  add_site_checks(out, skus, false);
  return out;
}

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

std::vector<std::unique_ptr<Check>> passive_checks(PassiveSelection selection, const SkuSet* skus) {
  // The catalog puts kmsg_xid first: it needs neither NVML nor the SKU, and a GPU with GSP trouble
  // (Xid 119/120) can make every NVML call block until the hook's time box ends.
  auto out = from_catalog([&](const CheckSpec& s) {
    if (s.name == "gpu_leftovers") return selection.after_job;
    // The epilog runs before Slurm tears the job's namespace down (job_container/tmpfs deletes
    // its /dev/shm after the epilog): the job's own memory would count as left behind. The
    // prolog of the next job and HealthCheckProgram judge the idle node.
    if (s.name == "host_idle_memory") return !selection.after_job;
    if (s.name == "gpu_sanity") return selection.cuda_sanity;
    return s.runs_in(CheckSuite::kPassive);
  });
  add_site_checks(out, skus, true);
  return out;
}

std::set<std::string> known_check_names() {
  // The catalog names exactly the checks of the lists above (check_catalog_registry_test).
  std::set<std::string> names;
  for (const CheckSpec& c : check_catalog()) names.insert(std::string(c.name));
  return names;
}

}  // namespace vigil
