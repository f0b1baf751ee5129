#include "gpu_busy.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <utility>

#include "vigil/base/strings.h"

namespace vigil::nvml {
namespace {

// Processes the first query makes room for; more are fetched when NVML says the array is short.
constexpr unsigned kInitialProcessSlots = 8;

bool is_own(unsigned pid, const BusyRules& rules) {
  return std::find(rules.own_pids.begin(), rules.own_pids.end(), pid) != rules.own_pids.end();
}

std::vector<const GpuProcess*> foreign_processes(const GpuActivity& a, const BusyRules& rules) {
  std::vector<const GpuProcess*> out;
  if (!a.processes) return out;
  for (const GpuProcess& p : *a.processes) {
    if (!is_own(p.pid, rules)) out.push_back(&p);
  }
  return out;
}

// Lowest utilization sample; nullopt when there is none.
std::optional<unsigned> min_utilization(const GpuActivity& a) {
  if (a.utilization_percent.empty()) return std::nullopt;
  return *std::min_element(a.utilization_percent.begin(), a.utilization_percent.end());
}

// Busy on utilization alone: nothing listed (not even our own processes, whose work would
// explain the load) and every sample above the bound.
bool busy_by_utilization(const GpuActivity& a, const BusyRules& rules) {
  if (a.processes && !a.processes->empty()) return false;
  const std::optional<unsigned> lowest = min_utilization(a);
  return lowest && *lowest > rules.max_idle_utilization_percent;
}

// "gpu3", "gpu0-7" (a contiguous run), "gpu1, gpu4".
std::string gpus_text(const std::vector<int>& gpus) {
  if (gpus.size() == 1) return "gpu" + std::to_string(gpus[0]);
  bool contiguous = true;
  for (size_t i = 1; i < gpus.size(); ++i) contiguous &= gpus[i] == gpus[i - 1] + 1;
  if (contiguous) {
    return "gpu" + std::to_string(gpus.front()) + "-" + std::to_string(gpus.back());
  }
  std::vector<std::string> names;
  for (int g : gpus) names.push_back("gpu" + std::to_string(g));
  return short_list(names, 4);
}

// /proc/<pid>/comm ends in a newline; a cmdline read whole carries NULs.
std::string trimmed(const std::string& s) {
  return std::string(trim(s, std::string_view(" \n\0", 3)));
}

// The process's name as this PID namespace sees it (/proc/<pid>/comm), else NVML's
// (nvmlSystemGetProcessName, a path: its last component), else "".
std::string process_name(const Session& s, const std::string& proc_root, unsigned pid) {
  std::ifstream comm(proc_root + "/" + std::to_string(pid) + "/comm");
  std::string name;
  if (comm && std::getline(comm, name) && !trimmed(name).empty()) return trimmed(name);
  char buf[256] = {};
  if (call(s.api().system_get_process_name, pid, buf, unsigned{sizeof buf}) == NVML_SUCCESS) {
    buf[sizeof buf - 1] = '\0';
    name = trimmed(buf);
    if (const size_t slash = name.rfind('/'); slash != std::string::npos) {
      name = name.substr(slash + 1);
    }
    return name;
  }
  return "";
}

// "nvmlDeviceGetUtilizationRates: Not Supported (3)", or "... not exported by this NVML".
std::string call_error(const Session& s, bool resolved, const char* entry_point, nvmlReturn_t rc) {
  if (!resolved) return std::string(entry_point) + " not exported by this NVML (older driver?)";
  return std::string(entry_point) + ": " + s.err(rc);
}

void read_processes(const Session& s, const std::string& proc_root, GpuActivity& a) {
  const auto fn = s.api().device_get_compute_running_processes;
  std::vector<nvmlProcessInfo_t> infos(kInitialProcessSlots);
  nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
  // The list may grow between two calls; NVML says how many it needs each time.
  for (int attempt = 0; attempt < 4 && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    unsigned n = static_cast<unsigned>(infos.size());
    rc = call(fn, s.gpus[a.gpu], &n, infos.data());
    if (rc == NVML_SUCCESS) {
      infos.resize(std::min<size_t>(n, infos.size()));
    } else if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      infos.resize(std::max<size_t>(n, infos.size()) + kInitialProcessSlots);
    }
  }
  if (rc != NVML_SUCCESS) {
    a.processes_error = call_error(s, fn != nullptr, "nvmlDeviceGetComputeRunningProcesses_v3", rc);
    return;
  }
  std::vector<GpuProcess> processes;
  for (const nvmlProcessInfo_t& info : infos) {
    GpuProcess p;
    p.pid = info.pid;
    if (info.usedGpuMemory != kNvmlValueNotAvailable) p.used_memory_bytes = info.usedGpuMemory;
    p.name = process_name(s, proc_root, info.pid);
    processes.push_back(std::move(p));
  }
  a.processes = std::move(processes);
}

void sample_utilization(const Session& s, GpuActivity& a) {
  const auto fn = s.api().device_get_utilization_rates;
  nvmlUtilization_t u{};
  if (nvmlReturn_t rc = call(fn, s.gpus[a.gpu], &u); rc != NVML_SUCCESS) {
    a.utilization_percent.clear();
    a.utilization_error = call_error(s, fn != nullptr, "nvmlDeviceGetUtilizationRates", rc);
    return;
  }
  a.utilization_percent.push_back(u.gpu);
}

}  // namespace

std::string process_text(const GpuProcess& p) {
  std::string s = "pid " + std::to_string(p.pid);
  if (!p.name.empty()) s += " " + p.name;
  if (p.used_memory_bytes) s += " " + bytes_text(*p.used_memory_bytes);
  return s;
}

std::vector<GpuBusy> judge_gpu_activity(const std::vector<GpuActivity>& gpus,
                                        const BusyRules& rules) {
  std::vector<GpuBusy> busy;
  for (const GpuActivity& a : gpus) {
    const std::string gpu = "gpu" + std::to_string(a.gpu);
    if (auto foreign = foreign_processes(a, rules); !foreign.empty()) {
      std::vector<std::string> texts;
      for (const GpuProcess* p : foreign) texts.push_back(process_text(*p));
      busy.push_back({a.gpu, gpu + " " + short_list(texts, 3)});
    } else if (busy_by_utilization(a, rules)) {
      busy.push_back({a.gpu, gpu + " " + std::to_string(*min_utilization(a)) + "% utilization " +
                                 (a.processes ? "with no compute process visible (a process in "
                                                "another container or PID namespace?)"
                                              : "(process list unreadable)")});
    }
  }
  return busy;
}

std::vector<std::string> activity_unknowns(const std::vector<GpuActivity>& gpus) {
  enum class Gap { kBoth, kProcesses, kUtilization };
  struct Group {
    Gap gap;
    std::string detail;
    std::vector<int> gpus;
  };
  std::vector<Group> groups;  // in first-seen order, so messages follow GPU order
  for (const GpuActivity& a : gpus) {
    Group g{Gap::kBoth, a.processes_error + "; " + a.utilization_error, {a.gpu}};
    if (a.processes && a.utilization_percent.empty()) {
      g = {Gap::kUtilization, a.utilization_error, {a.gpu}};
    } else if (!a.processes && !a.utilization_percent.empty()) {
      g = {Gap::kProcesses, a.processes_error, {a.gpu}};
    } else if (a.processes) {
      continue;  // both read
    }
    auto same = [&](const Group& o) { return o.gap == g.gap && o.detail == g.detail; };
    if (auto it = std::find_if(groups.begin(), groups.end(), same); it != groups.end()) {
      it->gpus.push_back(a.gpu);
    } else {
      groups.push_back(std::move(g));
    }
  }
  std::vector<std::string> out;
  for (const Group& g : groups) {
    const std::string who = gpus_text(g.gpus);
    switch (g.gap) {
      case Gap::kBoth:
        out.push_back("cannot tell whether " + who + (g.gpus.size() == 1 ? " is" : " are") +
                      " busy: " + g.detail);
        break;
      case Gap::kProcesses:
        out.push_back("processes on " + who + " unknown (" + g.detail +
                      "), judged on utilization only");
        break;
      case Gap::kUtilization:
        out.push_back("utilization of " + who + " unknown (" + g.detail +
                      "), work in another container would go unseen");
        break;
    }
  }
  return out;
}

std::vector<GpuActivity> read_gpu_activity(const Session& s, const std::string& proc_root,
                                           const BusyRules& rules, const BusySampling& sampling) {
  std::vector<GpuActivity> out;
  for (int i = 0; i < s.count(); ++i) {
    if (!s.gpus[i])
      continue;  // no handle: the probe reports it, and scan_gpus_for_other_work notes it
    GpuActivity a;
    a.gpu = i;
    read_processes(s, proc_root, a);
    sample_utilization(s, a);
    out.push_back(std::move(a));
  }
  for (int n = 1; n < sampling.max_samples; ++n) {
    auto waiting = [&](const GpuActivity& a) {
      return foreign_processes(a, rules).empty() && busy_by_utilization(a, rules);
    };
    if (std::none_of(out.begin(), out.end(), waiting)) break;
    std::this_thread::sleep_for(sampling.interval);
    for (GpuActivity& a : out) {
      if (waiting(a)) sample_utilization(s, a);
    }
  }
  return out;
}

BusyScan scan_gpus_for_other_work(const CheckContext& ctx, const BusySampling& sampling,
                                  bool processes_only) {
  BusyScan scan;
  auto session = open_session(ctx);
  if (!session) {
    const Error& e = session.error();
    scan.unknown = "cannot tell whether the GPUs are busy: NVML not available (" +
                   (e.where.empty() || e.where.starts_with("dlopen") ? e.message : e.to_string()) +
                   ")";
    return scan;
  }
  BusyRules rules;
  rules.own_pids = {static_cast<unsigned>(::getpid()), static_cast<unsigned>(::getppid())};
  if (processes_only) rules.max_idle_utilization_percent = 100;  // no sample is above 100%
  const std::vector<GpuActivity> activity =
      read_gpu_activity(session.value(), ctx.proc_root, rules, sampling);
  scan.busy = judge_gpu_activity(activity, rules);
  const Session& s = session.value();
  for (int g = 0; g < s.count(); ++g) {
    const std::string key = gpu_key(s, g);
    scan.bus_ids.push_back(key.rfind("gpu", 0) == 0 ? "" : key);  // gpu_key falls back to "gpuN"
    unsigned current = 0, pending = 0;
    if (s.gpus[g] &&
        call(s.api().device_get_mig_mode, s.gpus[g], &current, &pending) == NVML_SUCCESS &&
        (current == kNvmlDeviceMigEnable || pending == kNvmlDeviceMigEnable)) {
      scan.mig_enabled.push_back(g);
    }
  }
  std::vector<std::string> unknowns = activity_unknowns(activity);
  const std::vector<std::string> blind = no_handle_unknowns(s);
  unknowns.insert(unknowns.end(), blind.begin(), blind.end());
  if (!unknowns.empty()) scan.unknown = short_list(unknowns, 3, "; ", "; ");
  return scan;
}

std::vector<std::string> no_handle_unknowns(const Session& s) {
  std::vector<std::string> out;
  for (const auto& [g, rc] : s.no_handle) {
    out.push_back("work on gpu" + std::to_string(g) + " unknown (no NVML handle: " + s.err(rc) +
                  ")");
  }
  return out;
}

std::optional<CheckResult> mig_skip_result(std::string_view check,
                                           const std::vector<int>& mig_enabled) {
  if (mig_enabled.empty()) return std::nullopt;
  std::vector<std::string> gpus;
  for (int g : mig_enabled) gpus.push_back("gpu" + std::to_string(g));
  return skipped(check, "MIG enabled on " + short_list(gpus, 8, ", ", ", ") +
                            ": the probe measures whole GPUs and a MIG slice would read as a "
                            "slow GPU; run it with MIG disabled (nvidia-smi -mig 0)");
}

std::vector<DeviceHolder> gpu_device_holders(const std::string& proc_root,
                                             const std::string& dev_dir) {
  std::vector<DeviceHolder> out;
  const std::string node_prefix = dev_dir + "/nvidia";
  const auto is_gpu_node = [&](const std::string& target) {
    if (!target.starts_with(node_prefix) || target.size() == node_prefix.size()) return false;
    return target.find_first_not_of("0123456789", node_prefix.size()) == std::string::npos;
  };
  const unsigned self = static_cast<unsigned>(::getpid());
  // Never the throwing operator++: a process that exits mid-scan makes readdir of its fd
  // directory fail, and the reset must still restore what it stopped (gpu_reset.cpp).
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(proc_root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename();
    unsigned pid = 0;
    const auto [last, parse_ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (parse_ec != std::errc() || last != name.data() + name.size() || pid == self) continue;
    std::set<std::string> devices;
    std::error_code fd_ec;  // gone, or another user's: not listed
    for (fs::directory_iterator fd(it->path() / "fd", fd_ec), fds_end; !fd_ec && fd != fds_end;
         fd.increment(fd_ec)) {
      std::error_code link_ec;
      const std::string target = fs::read_symlink(fd->path(), link_ec).string();
      if (!link_ec && is_gpu_node(target)) devices.insert(target);
    }
    if (devices.empty()) continue;
    std::string comm_name;
    std::ifstream comm(it->path() / "comm");
    std::getline(comm, comm_name);
    out.push_back(
        {pid, trimmed(comm_name), std::vector<std::string>(devices.begin(), devices.end())});
  }
  std::sort(out.begin(), out.end(),
            [](const DeviceHolder& a, const DeviceHolder& b) { return a.pid < b.pid; });
  return out;
}

std::string holder_text(const DeviceHolder& h) {
  return (h.name.empty() ? "pid " + std::to_string(h.pid)
                         : h.name + " (pid " + std::to_string(h.pid) + ")") +
         " on " + short_list(h.devices, 2);
}

CheckResult gpu_busy_result(std::string_view check, const std::vector<GpuBusy>& busy) {
  std::vector<std::string> reasons;
  for (const GpuBusy& b : busy) reasons.push_back(b.reason);
  return error(check,
               "GPU busy: " + short_list(reasons, 4, "; ", "; ") +
                   "; not measured, foreign load is not a fault (rerun when nvidia-smi shows the "
                   "GPUs idle)",
               kFaultGpuBusy);
}

}  // namespace vigil::nvml
