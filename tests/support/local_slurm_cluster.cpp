#include "local_slurm_cluster.h"

#include <stdlib.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace vigil::testing {
namespace {

// Short on purpose: unix socket paths below the cluster dir must fit in 108 bytes.
constexpr char kDirTemplate[] = "/tmp/vigil-cl-XXXXXX";

std::optional<long> parse_long(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string LocalSlurmCluster::script_path() { return std::string(VIGIL_LOCAL_CLUSTER_SCRIPT); }

LocalSlurmCluster::LocalSlurmCluster() : LocalSlurmCluster(Options{}) {}

namespace {
// VIGIL_CLUSTER_PROFILE=bare (with VIGIL_CLUSTER_BARE_BECAUSE saying why): every cluster of this
// process runs the bare profile, said aloud; tests that need the production one skip.
std::optional<std::string> bare_forced() {
  const char* p = std::getenv("VIGIL_CLUSTER_PROFILE");
  if (!p || std::string(p) != "bare") return std::nullopt;
  const char* why = std::getenv("VIGIL_CLUSTER_BARE_BECAUSE");
  return std::string("VIGIL_CLUSTER_PROFILE=bare: ") + (why && *why ? why : "(no reason given)");
}
}  // namespace

std::optional<std::string> LocalSlurmCluster::production_unavailable() {
  if (auto forced = bare_forced()) return forced;
  const std::string probe =
      std::filesystem::path(script_path()).parent_path().string() + "/lib/node-cgroup.sh";
  const auto r = run_command({"bash", probe, "probe"});
  if (r.exit_code == 0) return std::nullopt;
  return "the production Slurm profile needs per-node cgroup trees: " + r.out + r.err;
}

LocalSlurmCluster::LocalSlurmCluster(Options options) : options_(options) {
  if (auto forced = bare_forced(); forced && options_.bare_because.empty()) {
    std::fprintf(stderr, "LocalSlurmCluster: bare profile, %s\n", forced->c_str());
    options_.bare_because = *forced;
  }
  std::string tmpl = kDirTemplate;
  if (mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("LocalSlurmCluster: mkdtemp " + tmpl + " failed");
  }
  dir_ = tmpl;
  CommandOptions start_options;
  start_options.timeout = options_.start_timeout + std::chrono::seconds(60);
  std::vector<std::string> argv = {script_path(), "start", dir_, "--nodes",
                                   std::to_string(options_.nodes), "--timeout",
                                   std::to_string(options_.start_timeout.count()),
                                   // A test killed by SIGKILL or ctest's timeout runs no
                                   // destructor: the cluster goes with this process.
                                   "--owner", std::to_string(getpid())};
  if (options_.rest) argv.push_back("--rest");
  if (!options_.etc_files.empty()) {
    std::filesystem::create_directories(dir_ + "/etc");
    for (const auto& [name, text] : options_.etc_files)
      std::ofstream(dir_ + "/etc/" + name) << text;
  }
  if (options_.node_addresses) argv.push_back("--node-addrs");
  if (production()) {
    argv.insert(argv.end(), {"--profile", "production", "--gpus", std::to_string(options_.gpus)});
  } else {
    argv.insert(argv.end(), {"--profile", "bare"});
  }
  if (!options_.extra_conf.empty()) {
    const std::string extra = dir_ + "/extra.conf";
    std::ofstream(extra) << options_.extra_conf << "\n";
    argv.insert(argv.end(), {"--extra-conf", extra});
  }
  const auto r = run_command(argv, start_options);
  if (r.exit_code != 0) {
    run_command({script_path(), "stop", dir_, "--clean"});
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw std::runtime_error("local Slurm cluster did not start (" + script_path() + " start " +
                             dir_ + "): " + r.describe());
  }
  running_ = true;
}

LocalSlurmCluster::~LocalSlurmCluster() {
  try {
    run_command({script_path(), "stop", dir_, "--clean"});
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);  // also when start never wrote the marker file
  } catch (...) {
  }
}

CommandResult LocalSlurmCluster::stop() {
  running_ = false;
  return run_command({script_path(), "stop", dir_});
}

std::vector<std::string> LocalSlurmCluster::node_names() const {
  std::vector<std::string> names;
  for (int i = 0; i < options_.nodes; ++i) names.push_back("gpu-" + std::to_string(i));
  return names;
}

std::string LocalSlurmCluster::rest_url() const {
  if (!options_.rest) return "";
  std::ifstream in(dir_ + "/cluster.info");
  std::string line;
  constexpr std::string_view kKey = "slurmrestd_port=";
  while (std::getline(in, line)) {
    if (line.starts_with(kKey)) return "http://127.0.0.1:" + line.substr(kKey.size());
  }
  return "";
}

std::map<std::string, std::string> LocalSlurmCluster::env() const {
  return {{"SLURM_CONF", slurm_conf()},
          {"VIGIL_CLUSTER_DIR", dir_},
          {"VIGIL_CLUSTER_NODES", "gpu-[0-" + std::to_string(options_.nodes - 1) + "]"},
          {"VIGIL_CLUSTER_NODE_COUNT", std::to_string(options_.nodes)}};
}

std::vector<int> LocalSlurmCluster::daemon_pids() const {
  std::vector<int> pids;
  for (const char* name : {"/run/pids", "/run/pids.stopped"}) {
    std::ifstream in(dir_ + name);
    std::string role, name_field;
    int pid = 0;
    while (in >> role >> pid >> name_field) pids.push_back(pid);
    if (!pids.empty()) break;
  }
  return pids;
}

CommandResult LocalSlurmCluster::run(const std::vector<std::string>& argv,
                                     CommandOptions options) const {
  // Slurm variables of an enclosing job (tests run inside CI jobs too, and slurm_init() exports
  // SLURM_CONF into this process) would redirect sbatch/srun elsewhere; only this cluster's
  // variables reach the command. The cluster's own are added first so they are never unset.
  for (const auto& [key, value] : env()) options.env.emplace(key, value);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("SLURM_")) {
      std::string key(entry.substr(0, entry.find('=')));
      if (!options.env.contains(key)) options.unset_env.push_back(key);
    }
  }
  return run_command(argv, options);
}

CommandResult LocalSlurmCluster::shell(const std::string& script, CommandOptions options) const {
  return run({"bash", "-c", script}, std::move(options));
}

std::optional<long> LocalSlurmCluster::submit(const std::vector<std::string>& sbatch_args,
                                              CommandOptions options, std::string* failure) const {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
  const auto r = run(argv, std::move(options));
  // --parsable prints "<id>" or "<id>;<cluster>".
  const auto id = parse_long(r.out.substr(0, r.out.find(';')));
  if (r.exit_code != 0 || !id) {
    if (failure != nullptr) *failure = "sbatch failed: " + r.describe();
    return std::nullopt;
  }
  return id;
}

bool LocalSlurmCluster::wait_for_jobs(const std::vector<long>& job_ids,
                                      std::chrono::seconds timeout) const {
  if (job_ids.empty()) return true;
  std::string list;
  for (long id : job_ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    // Finished jobs stay known to slurmctld for MinJobAge (600 s), so an empty answer with
    // exit 0 means "none of them is pending or running".
    const auto r = run({"squeue", "-h", "-j", list, "-t", "PD,R,CG,CF,S", "-o", "%i"});
    if (r.exit_code == 0 && r.out.find_first_not_of(" \n") == std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return false;
}

std::string LocalSlurmCluster::job_field(long job_id, const std::string& field) const {
  const auto r = run({"scontrol", "show", "job", "-o", std::to_string(job_id)});
  std::istringstream words(r.out);
  std::string word;
  const std::string key = field + "=";
  while (words >> word) {
    if (word.starts_with(key)) return word.substr(key.size());
  }
  return "";
}

}  // namespace vigil::testing
