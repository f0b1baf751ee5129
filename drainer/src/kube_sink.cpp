#include "kube_sink.h"

#include <cctype>

namespace vigil::drainer {
namespace {

std::string camel(std::string_view s) {
  std::string out;
  bool up = true;
  for (char c : s) {
    if (c == '_' || c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

std::optional<std::string> unless_empty(const std::string& s) {
  return s.empty() ? std::optional<std::string>() : std::optional<std::string>(s);
}

}  // namespace

KubeSink::KubeSink(std::shared_ptr<kube::KubeApi> kube, const KubeSettings& cfg)
    : kube_(std::move(kube)), cfg_(cfg) {}

std::string KubeSink::node_name(const NodeEvent& s) {
  switch (cfg_.node_mapping) {
    case NodeMapping::kIdentity:
      return s.node;
    case NodeMapping::kReport:
      return s.k8s_node.value_or("");
    case NodeMapping::kPodLookup: {
      auto r = kube_->pod_node_name(cfg_.pod_namespace, s.node);
      return r.ok() ? r.value() : std::string();
    }
  }
  return s.node;
}

VoidResult KubeSink::write_state(const std::string& k8s, const NodeEvent& s) {
  if (k8s.empty())
    return Error{"no Kubernetes node for Slurm node " + s.node + " (mapping " +
                     std::string(to_string(cfg_.node_mapping)) + ")",
                 "kube_node_name"};
  const auto& pre = cfg_.annotation_prefix;
  std::map<std::string, std::optional<std::string>> a;
  a[pre + "state"] = std::string(annotation_value(s.state));
  a[pre + "reason"] = unless_empty(s.reason);
  a[pre + "last-check"] = unless_empty(s.last_check_time);
  a[pre + "failing"] = unless_empty(failing_annotation(s.failing));
  a[pre + "fabric-switch-suspect"] = unless_empty(s.fabric_switch);
  a[pre + "repair"] = unless_empty(s.repair);
  a[pre + "qualify"] = unless_empty(s.qualify);
  a[pre + "evidence"] = unless_empty(s.evidence);
  a[pre + "bug-report"] = unless_empty(s.bug_report);
  VoidResult res = kube_->annotate_node(k8s, a);
  if (res.ok() && cfg_.condition) {
    kube::NodeCondition c;
    c.type = cfg_.condition_type;
    c.status = s.state == NodeState::kDrained                                     ? "False"
               : (s.state == NodeState::kStale || s.state == NodeState::kUnknown) ? "Unknown"
                                                                                  : "True";
    c.reason = "Vigil" + camel(to_string(s.state));
    c.message = s.reason.empty() ? s.why : s.reason;
    res = kube_->set_node_condition(k8s, c);
  }
  if (res.ok() && cfg_.taint) {
    // Keeps non-Slurm pods off a node Vigil drained; removed again once it is resumed.
    const std::string key = pre + "unhealthy";
    std::optional<kube::NodeTaint> taint;
    if (s.state == NodeState::kDrained) taint = kube::NodeTaint{key, "true", "NoSchedule"};
    res = kube_->set_node_taint(k8s, key, taint);
  }
  return res;
}

SinkResult KubeSink::apply(const std::vector<Intent>& batch) {
  SinkResult out;
  for (const auto& i : batch) {
    const std::string k8s = node_name(i.event);
    const VoidResult res = write_state(k8s, i.event);
    const std::string detail = "k8s node " + (k8s.empty() ? "(none)" : k8s) + ", state " +
                               std::string(annotation_value(i.event.state));
    out.outcomes.push_back(res.ok() ? IntentOutcome::ok(i.id, detail)
                                    : IntentOutcome::retry(i.id, res.error().to_string(), detail));
    out.back_off = out.back_off || !res.ok();
  }
  return out;
}

}  // namespace vigil::drainer
