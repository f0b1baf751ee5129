// Busy GPUs (checks/src/nvml/gpu_busy.h): the pure decision on what NVML reported, and the
// reading of processes and utilization through the real loader from the fake library.
#include "nvml/gpu_busy.h"

#include <unistd.h>

#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

using nvml::BusyRules;
using nvml::GpuActivity;
using nvml::GpuProcess;

constexpr unsigned long long kGiB = 1ULL << 30;

GpuActivity idle(int gpu) {
  GpuActivity a;
  a.gpu = gpu;
  a.processes = std::vector<GpuProcess>{};
  a.utilization_percent = {0};
  return a;
}

GpuActivity with_processes(int gpu, std::vector<GpuProcess> processes,
                           std::vector<unsigned> utilization = {97}) {
  GpuActivity a = idle(gpu);
  a.processes = std::move(processes);
  a.utilization_percent = std::move(utilization);
  return a;
}

GpuActivity with_utilization(int gpu, std::vector<unsigned> samples) {
  GpuActivity a = idle(gpu);
  a.utilization_percent = std::move(samples);
  return a;
}

BusyRules rules_for(std::vector<unsigned> own = {}) {
  BusyRules r;
  r.own_pids = std::move(own);
  return r;
}

std::vector<std::string> reasons(const std::vector<nvml::GpuBusy>& busy) {
  std::vector<std::string> out;
  for (const auto& b : busy) out.push_back("[" + std::to_string(b.gpu) + "] " + b.reason);
  return out;
}

// ---- the decision -----------------------------------------------------------------------------

TEST(nvml_gpu_busy, a_foreign_process_makes_only_its_gpu_busy_with_pid_name_and_memory) {
  std::vector<GpuActivity> gpus = {idle(0), idle(1),
                                   with_processes(2, {{1234, 40 * kGiB, "python"}}), idle(3)};
  EXPECT_EQ(reasons(nvml::judge_gpu_activity(gpus, rules_for({77, 76}))),
            (std::vector<std::string>{"[2] gpu2 pid 1234 python 40 GiB"}));
}

TEST(nvml_gpu_busy, an_idle_foreign_process_holding_memory_is_still_busy) {
  std::vector<GpuActivity> gpus = {with_processes(0, {{4321, 512ULL << 20, "jupyter"}}, {0})};
  EXPECT_EQ(reasons(nvml::judge_gpu_activity(gpus, rules_for())),
            (std::vector<std::string>{"[0] gpu0 pid 4321 jupyter 512 MiB"}));
}

TEST(nvml_gpu_busy, own_and_parent_pids_are_never_foreign) {
  std::vector<GpuActivity> gpus = {with_processes(0, {{77, 2 * kGiB, "vigil-check"}}, {90}),
                                   with_processes(1, {{76, kGiB, "vigil-check"}}, {90})};
  EXPECT_TRUE(nvml::judge_gpu_activity(gpus, rules_for({77, 76})).empty());
}

TEST(nvml_gpu_busy, unknown_memory_and_name_are_left_out_and_long_lists_are_cut) {
  std::vector<GpuActivity> gpus = {with_processes(
      5, {{10, std::nullopt, ""}, {11, 2560ULL << 20, "a"}, {12, kGiB, "b"}, {13, kGiB, "c"}})};
  EXPECT_EQ(
      reasons(nvml::judge_gpu_activity(gpus, rules_for())),
      (std::vector<std::string>{"[5] gpu5 pid 10, pid 11 a 2.5 GiB, pid 12 b 1 GiB +1 more"}));
}

TEST(nvml_gpu_busy, utilization_above_the_bound_in_every_sample_without_a_process_is_busy) {
  std::vector<GpuActivity> gpus = {with_utilization(0, {50, 40, 30}),
                                   with_utilization(1, {90, 3}),  // a run that just ended
                                   with_utilization(2, {5}),      // the bound itself is idle
                                   with_utilization(3, {6})};
  EXPECT_EQ(reasons(nvml::judge_gpu_activity(gpus, rules_for())),
            (std::vector<std::string>{
                "[0] gpu0 30% utilization with no compute process visible (a process in another "
                "container or PID namespace?)",
                "[3] gpu3 6% utilization with no compute process visible (a process in another "
                "container or PID namespace?)"}));
}

TEST(nvml_gpu_busy, the_bound_is_a_rule_parameter) {
  BusyRules rules = rules_for();
  rules.max_idle_utilization_percent = 30;
  EXPECT_TRUE(nvml::judge_gpu_activity({with_utilization(0, {30})}, rules).empty());
  rules.max_idle_utilization_percent = 29;
  EXPECT_EQ(nvml::judge_gpu_activity({with_utilization(0, {30})}, rules).size(), 1u);
}

TEST(nvml_gpu_busy, unreadable_process_list_is_judged_on_utilization_alone) {
  GpuActivity busy = with_utilization(1, {80});
  busy.processes.reset();
  busy.processes_error = "nvmlDeviceGetComputeRunningProcesses_v3: Insufficient Permissions (4)";
  GpuActivity quiet = busy;
  quiet.gpu = 2;
  quiet.utilization_percent = {0};
  EXPECT_EQ(reasons(nvml::judge_gpu_activity({busy, quiet}, rules_for())),
            (std::vector<std::string>{"[1] gpu1 80% utilization (process list unreadable)"}));
}

TEST(nvml_gpu_busy, nothing_readable_is_not_busy_but_is_reported_as_unknown) {
  std::vector<GpuActivity> gpus;
  for (int g = 0; g < 8; ++g) {
    GpuActivity a;
    a.gpu = g;
    a.processes_error = "nvmlDeviceGetComputeRunningProcesses_v3 not exported by this NVML";
    a.utilization_error = "nvmlDeviceGetUtilizationRates: Not Supported (3)";
    gpus.push_back(a);
  }
  EXPECT_TRUE(nvml::judge_gpu_activity(gpus, rules_for()).empty());
  EXPECT_EQ(nvml::activity_unknowns(gpus),
            (std::vector<std::string>{
                "cannot tell whether gpu0-7 are busy: nvmlDeviceGetComputeRunningProcesses_v3 not "
                "exported by this NVML; nvmlDeviceGetUtilizationRates: Not Supported (3)"}));
}

TEST(nvml_gpu_busy, unknowns_name_each_gap_and_group_the_gpus) {
  GpuActivity mig = idle(3);
  mig.utilization_percent.clear();
  mig.utilization_error = "nvmlDeviceGetUtilizationRates: Not Supported (3)";
  GpuActivity mig2 = mig;
  mig2.gpu = 6;
  GpuActivity no_list = idle(4);
  no_list.processes.reset();
  no_list.processes_error = "nvmlDeviceGetComputeRunningProcesses_v3: Insufficient Permissions (4)";
  EXPECT_EQ(nvml::activity_unknowns({idle(0), mig, no_list, mig2}),
            (std::vector<std::string>{
                "utilization of gpu3, gpu6 unknown (nvmlDeviceGetUtilizationRates: Not Supported "
                "(3)), work in another container would go unseen",
                "processes on gpu4 unknown (nvmlDeviceGetComputeRunningProcesses_v3: Insufficient "
                "Permissions (4)), judged on utilization only"}));
  EXPECT_TRUE(nvml::activity_unknowns({idle(0), idle(1)}).empty());
}

TEST(nvml_gpu_busy, busy_result_is_error_with_the_busy_fault_code_never_fail) {
  const CheckResult r = nvml::gpu_busy_result(
      "gpu_hbm", {{2, "gpu2 pid 1234 python 40 GiB"}, {5, "gpu5 30% utilization"}});
  EXPECT_EQ(r.check, "gpu_hbm");
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.fault_code, "VIGIL-GPU-BUSY");
  EXPECT_EQ(r.message.rfind("GPU busy: gpu2 pid 1234 python 40 GiB; gpu5 30% utilization; ", 0), 0u)
      << r.message;
  EXPECT_TRUE(r.measurements.empty());
}

// ---- reading NVML through the loader (fake libnvidia-ml.so.1) ---------------------------------

using fake_nvml = NvmlCheckTest;

class nvml_gpu_busy_read : public NvmlCheckTest {
 protected:
  void SetUp() override {
    NvmlCheckTest::SetUp();
    ctx_.proc_root = (tmp_ / "proc").string();  // no real process can lend its name
    std::filesystem::create_directories(ctx_.proc_root);
  }
  std::vector<GpuActivity> read(const nvml::BusySampling& sampling = {}) {
    auto session = nvml::open_session(ctx_);
    EXPECT_TRUE(session.ok()) << (session.ok() ? "" : session.error().to_string());
    if (!session.ok()) return {};
    return nvml::read_gpu_activity(session.value(), ctx_.proc_root, BusyRules{}, sampling);
  }
};

TEST_F(nvml_gpu_busy_read, reads_the_fixture_processes_and_utilization_of_every_gpu) {
  use_fixture("busy_gpu2");
  const std::vector<GpuActivity> gpus = read();
  ASSERT_EQ(gpus.size(), 8u);
  for (const GpuActivity& a : gpus) {
    ASSERT_TRUE(a.processes) << a.gpu << ": " << a.processes_error;
    ASSERT_EQ(a.utilization_percent.size(), 1u) << a.gpu << ": " << a.utilization_error;
    if (a.gpu != 2) {
      EXPECT_TRUE(a.processes->empty()) << a.gpu;
      EXPECT_EQ(a.utilization_percent[0], 0u) << a.gpu;
    }
  }
  const GpuActivity& busy = gpus[2];
  ASSERT_EQ(busy.processes->size(), 1u);
  EXPECT_EQ((*busy.processes)[0].pid, 4194305u);
  EXPECT_EQ((*busy.processes)[0].used_memory_bytes, 40 * kGiB);
  EXPECT_EQ((*busy.processes)[0].name, "python");  // nvmlSystemGetProcessName
  EXPECT_EQ(busy.utilization_percent[0], 97u);
}

TEST_F(nvml_gpu_busy_read, the_name_in_proc_comm_wins_over_nvmls) {
  use_fixture("busy_gpu2");
  std::filesystem::create_directories(tmp_ / "proc" / "4194305");
  std::ofstream(tmp_ / "proc" / "4194305" / "comm") << "all_reduce_perf\n";
  const std::vector<GpuActivity> gpus = read();
  ASSERT_EQ(gpus.size(), 8u);
  ASSERT_TRUE(gpus[2].processes && gpus[2].processes->size() == 1);
  EXPECT_EQ((*gpus[2].processes)[0].name, "all_reduce_perf");
}

TEST_F(nvml_gpu_busy_read, more_processes_than_the_first_query_has_room_for_are_all_read) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][0]["processes"] = nlohmann::json::array();
  for (unsigned pid = 2000; pid < 2020; ++pid) {
    j["gpus"][0]["processes"].push_back({{"pid", pid}, {"used_memory_bytes", 1 << 30}});
  }
  use_fixture_json(j);
  const std::vector<GpuActivity> gpus = read();
  ASSERT_FALSE(gpus.empty());
  ASSERT_TRUE(gpus[0].processes) << gpus[0].processes_error;
  ASSERT_EQ(gpus[0].processes->size(), 20u);
  EXPECT_EQ(gpus[0].processes->back().pid, 2019u);
  EXPECT_EQ(gpus[0].processes->back().name, "");  // neither /proc nor the fixture names it
}

TEST_F(nvml_gpu_busy_read, memory_nvml_cannot_report_stays_unknown) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][1]["processes"] = {{{"pid", 555}}};
  use_fixture_json(j);
  const std::vector<GpuActivity> gpus = read();
  ASSERT_TRUE(gpus.at(1).processes && gpus[1].processes->size() == 1);
  EXPECT_FALSE((*gpus[1].processes)[0].used_memory_bytes);
}

TEST_F(nvml_gpu_busy_read, utilization_is_sampled_again_only_while_it_alone_says_busy) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][4]["utilization"] = {{"gpu", 60}, {"memory", 10}};  // no process: another container
  use_fixture_json(j);
  const std::vector<GpuActivity> gpus = read({3, std::chrono::milliseconds(1)});
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(gpus[4].utilization_percent, (std::vector<unsigned>{60, 60, 60}));
  EXPECT_EQ(gpus[0].utilization_percent, (std::vector<unsigned>{0}));
}

TEST_F(nvml_gpu_busy_read, scan_finds_the_busy_gpu_and_nothing_else) {
  use_fixture("busy_gpu2");
  const nvml::BusyScan scan = nvml::scan_gpus_for_other_work(ctx_);
  EXPECT_EQ(reasons(scan.busy), (std::vector<std::string>{"[2] gpu2 pid 4194305 python 40 GiB"}));
  EXPECT_EQ(scan.unknown, "");
}

TEST_F(nvml_gpu_busy_read, scan_of_an_idle_node_finds_nothing) {
  use_fixture("healthy_8x_h100");
  const nvml::BusyScan scan = nvml::scan_gpus_for_other_work(ctx_);
  EXPECT_TRUE(scan.busy.empty()) << reasons(scan.busy).front();
  EXPECT_EQ(scan.unknown, "");
}

TEST_F(nvml_gpu_busy_read, scan_never_counts_this_process_as_foreign) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][0]["processes"] = {{{"pid", ::getpid()}, {"used_memory_bytes", 1 << 30}}};
  j["gpus"][1]["processes"] = {{{"pid", ::getppid()}, {"used_memory_bytes", 1 << 30}}};
  use_fixture_json(j);
  EXPECT_TRUE(nvml::scan_gpus_for_other_work(ctx_).busy.empty());
}

// A MIG slice would measure as a slow GPU: the scan names GPUs in MIG mode (current or pending),
// and the probes skip on them instead of failing.
TEST_F(nvml_gpu_busy_read, scan_lists_gpus_in_mig_mode_and_the_probes_skip_on_them) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][1]["mig"] = true;
  j["gpus"][6]["mig"] = true;
  j["gpus"][2]["mig"] = false;
  use_fixture_json(j);
  const nvml::BusyScan scan = nvml::scan_gpus_for_other_work(ctx_);
  EXPECT_TRUE(scan.busy.empty());
  EXPECT_EQ(scan.mig_enabled, (std::vector<int>{1, 6}));
  const std::optional<CheckResult> r = nvml::mig_skip_result("gpu_hbm", scan.mig_enabled);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, Status::kSkipped);
  EXPECT_EQ(r->message.rfind("MIG enabled on gpu1, gpu6: ", 0), 0u) << r->message;
  EXPECT_FALSE(nvml::mig_skip_result("gpu_hbm", {}).has_value());
}

TEST_F(nvml_gpu_busy_read, gpus_without_mig_support_are_not_in_mig_mode) {
  use_fixture("healthy_8x_h100");  // no "mig": nvmlDeviceGetMigMode is not supported
  EXPECT_TRUE(nvml::scan_gpus_for_other_work(ctx_).mig_enabled.empty());
}

TEST_F(nvml_gpu_busy_read, calls_a_gpu_does_not_answer_make_the_scan_say_it_cannot_tell) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"].erase("processes");
  j["gpu_defaults"].erase("utilization");
  use_fixture_json(j);
  const nvml::BusyScan scan = nvml::scan_gpus_for_other_work(ctx_);
  EXPECT_TRUE(scan.busy.empty());
  EXPECT_EQ(scan.unknown,
            "cannot tell whether gpu0-7 are busy: nvmlDeviceGetComputeRunningProcesses_v3: Not "
            "Supported (3); nvmlDeviceGetUtilizationRates: Not Supported (3)");
}

TEST_F(nvml_gpu_busy_read, without_nvml_the_scan_finds_nothing_busy_and_says_why) {
  use_fixture("busy_gpu2");
  ctx_.nvml_library = (tmp_ / "no-such-dir" / "libnvidia-ml.so.1").string();
  const nvml::BusyScan scan = nvml::scan_gpus_for_other_work(ctx_);
  EXPECT_TRUE(scan.busy.empty());
  EXPECT_EQ(scan.unknown.rfind("cannot tell whether the GPUs are busy: NVML not available (", 0),
            0u)
      << scan.unknown;
  EXPECT_NE(scan.unknown.find("no-such-dir"), std::string::npos) << scan.unknown;
}

// ---- the fixture fields, validated like the others --------------------------------------------

TEST_F(fake_nvml, bad_process_or_utilization_fields_are_fixture_errors_naming_the_field) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"pid", 1}, {"used_memory", 5}}, "/gpus/3/processes/0: unknown key \"used_memory\""},
      {{{"used_memory_bytes", 5}}, "/gpus/3/processes/0: needs pid"},
      {{{"pid", -4}}, "/gpus/3/processes/0/pid"},
      {{{"pid", 9}, {"name", 7}}, "/gpus/3/processes/0/name: expected a string"},
  };
  for (const auto& [process, expected] : cases) {
    nlohmann::json j = load_fixture("healthy_8x_h100");
    j["gpus"][3]["processes"] = nlohmann::json::array({process});
    use_fixture_json(j);
    const CheckResult r = run(make_gpu_count_check());
    EXPECT_EQ(r.status, Status::kError) << process.dump();
    EXPECT_NE(r.message.find(expected), std::string::npos) << r.message;
  }
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][3]["processes"] = {{"pid", 1}};  // an object, not an array
  use_fixture_json(j);
  EXPECT_NE(run(make_gpu_count_check()).message.find("/gpus/3/processes: expected an array"),
            std::string::npos);
  for (const auto& [utilization, expected] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"gpu", 101}, {"memory", 0}}, "/gpus/3/utilization/gpu: a percentage, at most 100"},
           {{{"gpu", 1}}, "/gpus/3/utilization: needs gpu and memory"},
           {{{"gpu", 1}, {"memory", 2}, {"sm", 3}}, "/gpus/3/utilization: unknown key \"sm\""}}) {
    j = load_fixture("healthy_8x_h100");
    j["gpu_defaults"].erase("utilization");  // merged under each GPU: would fill in a missing key
    j["gpus"][3]["utilization"] = utilization;
    use_fixture_json(j);
    const CheckResult r = run(make_gpu_count_check());
    EXPECT_EQ(r.status, Status::kError) << utilization.dump();
    EXPECT_NE(r.message.find(expected), std::string::npos) << r.message;
  }
}

}  // namespace
}  // namespace vigil::testing
