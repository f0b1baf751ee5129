// vigil-submit --check-config (config_check.h). Every rule names the Slurm setting it reads and
// the source of what Vigil needs from it.
#include "vigil/submit/config_check.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "vigil/base/strings.h"

namespace vigil::submit {
namespace {

std::string get(const std::map<std::string, std::string>& c, const std::string& key) {
  auto it = c.find(key);
  return it == c.end() ? "" : it->second;
}

// "60 sec" -> 60; -1 when there is no number.
long seconds_of(const std::string& v) {
  long n = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() ? n : -1;
}

bool has_word(const std::string& list, std::string_view word) {
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (trim(item) == word) return true;
  return false;
}

std::string shown(const std::string& v) { return v.empty() ? "(unset)" : v; }

// The program of a slurm.conf script setting: its first word ("/usr/bin/vigil-reboot
// /usr/sbin/reboot" -> "/usr/bin/vigil-reboot"), or the first of several (24.11's Prolog[0]).
std::string program_of(const std::string& v) {
  const std::string first(trim(std::string_view(v).substr(0, v.find(','))));
  return first.substr(0, first.find(' '));
}

void check_gpus(const ConfigCheckInput& in, std::vector<ConfigFinding>& out) {
  const auto& c = in.config;
  const std::string task = get(c, "TaskPlugin");
  const std::string devices = get(c, "ConstrainDevices");
  const bool constrained = task.find("task/cgroup") != std::string::npos && devices == "yes";
  out.push_back(
      {"TaskPlugin, ConstrainDevices", shown(task) + ", " + shown(devices), ConfigLevel::kOk,
       constrained ? "GPUs are device-constrained: a step opens only the GPUs it holds (Vigil's "
                     "node jobs are --exclusive and its re-checks hold every GPU, "
                     "docs/recheck.md)"
                   : "GPUs are not constrained by Slurm: any step may open any GPU",
       ""});
  std::vector<std::string> without;
  for (const auto& n : in.nodes)
    if (slurm::gpu_count(n.gres) == 0) without.push_back(n.name);
  const std::string types = get(c, "GresTypes");
  if (in.nodes.empty()) return;
  if (without.empty()) {
    out.push_back({"Gres", "gpu on " + std::to_string(in.nodes.size()) + " nodes", ConfigLevel::kOk,
                   "Slurm knows every node's GPUs", ""});
    return;
  }
  out.push_back(
      {"GresTypes, Gres", shown(types) + "; no gpu on " + short_list(without, 5),
       ConfigLevel::kWarn,
       "Slurm does not know these nodes' GPUs: user jobs cannot ask for them, Vigil's held "
       "re-check allocates none and nothing tells a missing GPU from one never configured",
       "GresTypes=gpu, Gres=gpu:<N> on each GPU node, and gres.conf Name=gpu "
       "File=/dev/nvidia[0-<N-1>] (or AutoDetect=nvml)"});
}

void check_reboot(const ConfigCheckInput& in, std::vector<ConfigFinding>& out) {
  const auto& c = in.config;
  const std::string program = get(c, "RebootProgram");
  if (program.empty()) {
    out.push_back({"RebootProgram", "(unset)", ConfigLevel::kWarn,
                   "scontrol reboot refuses without one, so the drainer's repair.reboot cannot "
                   "reboot a node (docs/repair.md)",
                   "RebootProgram=\"/usr/bin/vigil-reboot /usr/sbin/reboot\""});
  } else if (program.find("vigil-reboot") == std::string::npos) {
    out.push_back({"RebootProgram", program, ConfigLevel::kWarn,
                   "no NVIDIA bug report is kept before Vigil's reboots (the driver's state is "
                   "gone once the module unloads)",
                   "RebootProgram=\"/usr/bin/vigil-reboot " + program + "\""});
  } else {
    out.push_back({"RebootProgram", program, ConfigLevel::kOk,
                   "vigil-reboot keeps a bug report before Vigil's reboots", ""});
  }
  // slurm.conf(5): a node that does not reboot within ResumeTimeout (default 60 s) is marked
  // DOWN "reboot timed out"; on 24.11 and 26.05 Vigil's reason stays and the ladder marks it
  // `replace` later (review W2). Everything vigil-reboot does before the reboot counts.
  const std::string resume = get(c, "ResumeTimeout");
  const long resume_s = seconds_of(resume);
  const long need = in.bug_report_s + in.boot_s;
  if (resume_s >= 0 && resume_s < need) {
    out.push_back({"ResumeTimeout", shown(resume),
                   program.empty() ? ConfigLevel::kWarn : ConfigLevel::kProblem,
                   "a reboot Vigil asks for takes up to " + std::to_string(in.bug_report_s) +
                       " s of bug report plus the boot (--boot-time-s " +
                       std::to_string(in.boot_s) +
                       "): slurmctld marks the node DOWN 'reboot timed out' before it is back, "
                       "and the repair ladder hands a healthy node to a person",
                   "ResumeTimeout=" + std::to_string((need + 59) / 60 * 60) +
                       " or more (or keep repair.reboot off)"});
  } else {
    out.push_back(
        {"ResumeTimeout", shown(resume), ConfigLevel::kOk,
         "long enough for the bug report and a boot of " + std::to_string(in.boot_s) + " s", ""});
  }
}

// wrapper: the name docs/hooks.md gives the setting's wrapper script (vigil-<wrapper>.sh).
void check_hook(const ConfigCheckInput& in, const std::string& setting, const std::string& wrapper,
                std::vector<ConfigFinding>& out) {
  const std::string v = get(in.config, setting);
  if (v.empty()) {
    out.push_back({setting, "(unset)", ConfigLevel::kWarn,
                   "Vigil's passive checks do not run there between jobs (docs/hooks.md)",
                   setting + "=/etc/slurm/vigil-" + wrapper +
                       ".sh (the wrapper of docs/hooks.md \"slurm.conf\")"});
    return;
  }
  const std::string program = program_of(v);
  const int state = in.file_state ? in.file_state(program) : 2;
  if (state == 1) {
    out.push_back({setting, v, ConfigLevel::kProblem,
                   program + " is not executable: slurmd fails the script, drains the node and "
                             "requeues its job",
                   "chmod 0755 " + program});
  } else {
    out.push_back({setting, v, ConfigLevel::kOk,
                   state == 0 ? "set, and executable here"
                              : "set (not visible from here: make sure it exists, mode 0755, on "
                                "every node)",
                   ""});
  }
}

void check_hooks(const ConfigCheckInput& in, std::vector<ConfigFinding>& out) {
  const auto& c = in.config;
  check_hook(in, "Prolog", "prolog", out);
  check_hook(in, "Epilog", "epilog", out);
  check_hook(in, "HealthCheckProgram", "healthcheck", out);
  const std::string flags = get(c, "PrologFlags");
  if (!get(c, "Prolog").empty() && !has_word(flags, "Alloc")) {
    out.push_back({"PrologFlags", shown(flags), ConfigLevel::kWarn,
                   "the Prolog runs only when a job's first step starts, not when it is "
                   "allocated, and not on every node of the job",
                   "PrologFlags=Alloc (with Contain, as most GPU sites)"});
  }
  const std::string interval = get(c, "HealthCheckInterval");
  if (!get(c, "HealthCheckProgram").empty() && seconds_of(interval) == 0) {
    out.push_back({"HealthCheckInterval", shown(interval), ConfigLevel::kProblem,
                   "HealthCheckProgram is set but never runs", "HealthCheckInterval=120"});
  }
}

}  // namespace

std::vector<ConfigFinding> check_config(const ConfigCheckInput& in) {
  std::vector<ConfigFinding> out;
  if (!in.partition.empty() && !in.partition_found) {
    out.push_back({"--partition", in.partition, ConfigLevel::kProblem,
                   "no node is in this partition: vigil-submit would submit nothing",
                   "create it (PartitionName=" + in.partition +
                       " Nodes=<the GPU nodes> Hidden=YES) or pass an existing one"});
  }
  if (!in.reservation.empty() && !in.reservation_found) {
    out.push_back({"--reservation", in.reservation, ConfigLevel::kProblem,
                   "Slurm has no such reservation: every job would be refused",
                   "scontrol create reservation ReservationName=" + in.reservation + " ..."});
  }
  check_gpus(in, out);
  check_reboot(in, out);
  check_hooks(in, out);
  return out;
}

std::string config_table(const std::vector<ConfigFinding>& findings) {
  size_t w_setting = 7, w_value = 5;
  for (const auto& f : findings) {
    w_setting = std::max(w_setting, f.setting.size());
    w_value = std::max(w_value, std::min<size_t>(f.value.size(), 40));
  }
  std::string out;
  auto row = [&](const std::string& s, const std::string& v, std::string_view l,
                 const std::string& w) {
    std::string value = v.size() > 40 ? v.substr(0, 37) + "..." : v;
    out += s + std::string(w_setting - s.size() + 2, ' ') + value +
           std::string(w_value - value.size() + 2, ' ') + std::string(l) +
           std::string(9 - l.size(), ' ') + w + "\n";
  };
  row("SETTING", "VALUE", "VERDICT", "WHAT");
  for (const auto& f : findings) {
    row(f.setting, f.value, to_string(f.level), f.what + (f.fix.empty() ? "" : "; fix: " + f.fix));
  }
  return out;
}

}  // namespace vigil::submit
