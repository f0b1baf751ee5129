#pragma once
// What the vigil-submit tests on the local cluster share (recheck_cluster_test.cpp,
// repair_cluster_test.cpp): vigil-submit run as the CronJob runs it, with the checks pointed at
// the fake hardware of each node, and a node's state and reason as sinfo prints them.
// Needs VIGIL_SOURCE_DIR, VIGIL_SUBMIT_BINARY, VIGIL_CHECK_BINARY, VIGIL_FAKE_NVML_LIBRARY and
// VIGIL_DRAINER_BINARY.
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "background_process.h"
#include "confirmed_thresholds.h"
#include "local_slurm_cluster.h"
#include "run_command.h"

namespace vigil::testing {

struct SubmitSetup {
  std::string scratch;   // per-test directory: job output, node state, spool, thresholds
  std::string fixtures;  // per-test copy of tests/fixtures/nodes (a test may "repair" a node)
  int drainer_port = 0;
};

inline CommandResult run_vigil_submit(const LocalSlurmCluster& cluster, const SubmitSetup& s,
                                      const std::vector<std::string>& extra,
                                      const std::map<std::string, std::string>& env = {}) {
  const std::string src = VIGIL_SOURCE_DIR;
  std::vector<std::string> argv = {VIGIL_SUBMIT_BINARY,
                                   "--job-script=" + src + "/cronjobs/vigil-check.sbatch",
                                   "--partition=vigil",
                                   "--interval-ms=0",
                                   "--time=5:00",
                                   "--recheck-timeout-s=240",
                                   "--sbatch-arg=--output=" + s.scratch + "/%x-%j.out"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  CommandOptions o;
  o.timeout = std::chrono::seconds(300);
  o.env = {
      {"VIGIL_CHECK", src + "/tests/support/fake-node-check.sh"},
      {"VIGIL_FAKE_CHECK", VIGIL_CHECK_BINARY},
      {"VIGIL_FAKE_NVML_LIB", VIGIL_FAKE_NVML_LIBRARY},
      {"VIGIL_FIXTURES_DIR", s.fixtures},
      {"VIGIL_NVIDIA_SMI", src + "/tests/support/fake-nvidia-smi.sh"},  // the reset rung's
      // Floors confirmed, as after calibration: these tests are about what a fail does.
      {"VIGIL_THRESHOLDS",
       confirmed_thresholds(src + "/checks/thresholds", s.scratch + "/confirmed-thresholds")},
      {"VIGIL_STATE_DIR", s.scratch + "/node-state/%n"},
      {"VIGIL_SPOOL_DIR", s.scratch + "/spool"},
      {"VIGIL_EVIDENCE_DIR", s.scratch + "/evidence"},  // a reset's bug report, if any
      {"VIGIL_REPORT_URL", "http://127.0.0.1:" + std::to_string(s.drainer_port) + "/v1/reports"}};
  for (const auto& [k, v] : env) o.env[k] = v;
  return cluster.run(argv, o);
}

// `vigil-drainer serve` for the cluster (no auth, drain_after 1, resume_after 2, a performance
// drain listed for re-qualification after 2 s (GET /v1/rechecks), state under
// `scratch`), `extra_yaml` appended to its configuration; its port is set once it listens
// (0 if it did not start: the caller asserts and prints the process's log).
inline std::unique_ptr<BackgroundProcess> start_drainer(const LocalSlurmCluster& cluster,
                                                        const std::string& scratch,
                                                        const std::string& extra_yaml, int& port) {
  const std::string config = scratch + "/drainer.yaml";
  std::ofstream(config) << "listen: {address: 127.0.0.1, port: 0}\n"
                        << "auth: disabled\n"
                        << "state_dir: " << scratch << "/drainer-state\n"
                        << "policy:\n  defaults: {drain_after: 1, resume_after: 2}\n"
                        << "  requalify_after_s: 2\n"
                        << "kubernetes: {enabled: false}\n"
                        << "slurm: {enabled: true, conf: " << cluster.slurm_conf()
                        << ", batch_window_ms: 50, view_max_age_s: 1}\n"
                        << extra_yaml;
  auto drainer = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{VIGIL_DRAINER_BINARY, "serve", "--config", config},
      scratch + "/drainer.log");
  auto addr = drainer->wait_for_log("listening on 127.0.0.1:", std::chrono::seconds(60));
  port = addr ? std::stoi(*addr) : 0;
  return drainer;
}

// sinfo's state (%T) and reason (%E) of one node.
inline std::pair<std::string, std::string> sinfo_state(const LocalSlurmCluster& cluster,
                                                       const std::string& node) {
  const auto r = cluster.run({"sinfo", "-h", "-N", "-p", "vigil", "-n", node, "-o", "%T|%E"});
  std::string line = r.out;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  const auto bar = line.find('|');
  if (bar == std::string::npos) return {line, ""};
  return {line.substr(0, bar), line.substr(bar + 1)};
}

inline bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds step,
                       std::chrono::seconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(step);
  }
  return cond();
}

}  // namespace vigil::testing
