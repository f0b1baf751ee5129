#pragma once
// In-memory fakes of slurm::SlurmApi / kube::KubeApi and report builders for drainer unit tests.
#include <atomic>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vigil/kube/kube_api.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::testing {

class FakeSlurm : public slurm::SlurmApi {
 public:
  struct Call {
    std::string op;  // drain | undrain | reboot
    std::vector<std::string> nodes;
    std::string reason;
  };

  void add_node(const std::string& name, const std::string& partition = "gpu") {
    std::lock_guard lk(mu);
    slurm::SlurmNodeInfo n;
    n.name = name;
    n.state = "IDLE";
    n.partitions = {partition};
    nodes[name] = n;
  }
  Result<std::vector<slurm::SlurmNodeInfo>> load_nodes() override {
    std::vector<slurm::SlurmNodeInfo> v;
    std::function<void()> hook;
    {
      std::lock_guard lk(mu);
      loads++;
      if (!reachable)
        return Error{"Unable to contact slurm controller (connect failure)", "slurm_load_node"};
      for (const auto& [n, i] : nodes) v.push_back(i);
      hook = std::exchange(after_read, nullptr);
    }
    // Runs once, after the table was taken and before it is returned: what happens in Slurm
    // while a read is on its way back.
    if (hook) hook();
    return v;
  }
  // Records which nodes were asked for; the read itself is the default (the table, filtered),
  // counted in `loads`.
  Result<std::vector<slurm::SlurmNodeInfo>> load_nodes_named(
      const std::vector<std::string>& ns) override {
    {
      std::lock_guard lk(mu);
      last_named = ns;
    }
    return SlurmApi::load_nodes_named(ns);
  }
  VoidResult drain(const std::vector<std::string>& ns, const std::string& reason) override {
    std::lock_guard lk(mu);
    if (!reachable) return Error{"Unable to contact slurm controller", "slurm_update_node"};
    calls.push_back({"drain", ns, reason});
    for (const auto& n : ns) {
      nodes[n].drain = true;
      nodes[n].reason = reason;
      nodes[n].reason_time = static_cast<int64_t>(std::time(nullptr));  // as slurmctld stamps it
    }
    return ok_result();
  }
  VoidResult undrain(const std::vector<std::string>& ns) override {
    std::lock_guard lk(mu);
    if (!reachable) return Error{"Unable to contact slurm controller", "slurm_update_node"};
    calls.push_back({"undrain", ns, ""});
    for (const auto& n : ns) {
      nodes[n].drain = false;
      nodes[n].reason.clear();
      nodes[n].reason_time = 0;
    }
    return ok_result();
  }
  // As slurmctld takes `scontrol reboot reason=R` for an idle drained node: DOWN+DRAIN at once,
  // R with " : reboot issued" appended (measured on Slurm 22.05). finish_reboot() brings it back.
  VoidResult reboot(const std::vector<std::string>& ns, const std::string& reason) override {
    std::lock_guard lk(mu);
    if (!reachable) return Error{"Unable to contact slurm controller", "scontrol reboot"};
    if (!can_reboot)
      return Error{"scontrol: error: RebootProgram isn't defined", "scontrol reboot"};
    calls.push_back({"reboot", ns, reason});
    for (const auto& n : ns) {
      nodes[n].state = "DOWN";
      nodes[n].down = true;
      nodes[n].drain = true;
      nodes[n].reason = reason + " : reboot issued";
    }
    return ok_result();
  }
  // The node registered again after its reboot, booted at `boot_time`: IDLE+DRAIN, reason kept.
  void finish_reboot(const std::string& name, int64_t boot_time) {
    std::lock_guard lk(mu);
    auto& n = nodes[name];
    n.state = "IDLE";
    n.down = false;
    n.boot_time = boot_time;
  }
  // Helpers for tests.
  void set(const std::string& name, auto&& fn) {
    std::lock_guard lk(mu);
    fn(nodes[name]);
  }
  slurm::SlurmNodeInfo get(const std::string& name) {
    std::lock_guard lk(mu);
    return nodes[name];
  }
  std::vector<Call> calls_copy() {
    std::lock_guard lk(mu);
    return calls;
  }

  std::mutex mu;
  std::map<std::string, slurm::SlurmNodeInfo> nodes;
  std::vector<Call> calls;
  bool reachable = true;
  bool can_reboot = true;
  int loads = 0;
  std::vector<std::string> last_named;  // the nodes of the last load_nodes_named()
  std::function<void()> after_read;
};

class FakeKube : public kube::KubeApi {
 public:
  VoidResult annotate_node(const std::string& node,
                           const std::map<std::string, std::optional<std::string>>& a) override {
    std::lock_guard lk(mu);
    if (fail) return Error{"HTTP 500 from API server", "PATCH /api/v1/nodes/" + node};
    auto& m = annotations[node];
    for (const auto& [k, v] : a) {
      if (v)
        m[k] = *v;
      else
        m.erase(k);
    }
    patches++;
    return ok_result();
  }
  VoidResult set_node_condition(const std::string& node, const kube::NodeCondition& c) override {
    std::lock_guard lk(mu);
    if (fail) return Error{"HTTP 500 from API server", "PATCH /api/v1/nodes/" + node + "/status"};
    conditions[node] = c;
    return ok_result();
  }
  VoidResult set_node_taint(const std::string& node, const std::string& key,
                            const std::optional<kube::NodeTaint>& taint) override {
    std::lock_guard lk(mu);
    if (fail) return Error{"HTTP 500 from API server", "PATCH /api/v1/nodes/" + node};
    if (taint) {
      taints[node][key] = *taint;
    } else {
      taints[node].erase(key);
    }
    return ok_result();
  }
  Result<std::string> pod_node_name(const std::string& ns, const std::string& pod) override {
    std::lock_guard lk(mu);
    auto it = pods.find(ns + "/" + pod);
    if (it == pods.end()) return Error{"HTTP 404", "GET pod " + ns + "/" + pod};
    return it->second;
  }
  std::map<std::string, std::string> annotations_of(const std::string& node) {
    std::lock_guard lk(mu);
    return annotations[node];
  }

  std::mutex mu;
  bool fail = false;
  int patches = 0;
  std::map<std::string, std::map<std::string, std::string>> annotations;
  std::map<std::string, kube::NodeCondition> conditions;
  std::map<std::string, std::map<std::string, kube::NodeTaint>> taints;
  std::map<std::string, std::string> pods;
};

// One check result with one measurement judged against a threshold.
inline CheckResult make_check(const std::string& check, Status st, double value = 0,
                              double fail_at = 0, const std::string& unit = "count",
                              const std::string& fault = "") {
  CheckResult c;
  c.check = check;
  c.status = st;
  Measurement m;
  m.name = check == "nccl_allreduce_ib" ? "busbw" : check + "_value";
  m.value = value;
  m.unit = unit;
  Threshold t;
  t.op = unit == "GB/s" ? Op::kGe : Op::kLe;
  t.fail = fail_at;
  t.unit = unit;
  m.threshold = t;
  c.measurements.push_back(m);
  c.message = st == Status::kFail ? check + " failed" : "";
  c.fault_code = st == Status::kFail ? (fault.empty() ? "VIGIL-TEST-FAIL" : fault) : "";
  return c;
}

inline NodeReport make_report(const std::string& node, const std::string& run_id,
                              std::vector<CheckResult> checks,
                              const std::string& sku = "h100-sxm-80gb") {
  NodeReport r;
  r.node = node;
  r.sku = sku;
  r.run_id = run_id;
  r.start_time = "2026-11-21T10:00:00Z";
  r.end_time = "2026-11-21T10:01:00Z";
  r.checks = std::move(checks);
  return r;
}

}  // namespace vigil::testing
