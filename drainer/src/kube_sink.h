#pragma once
// The Kubernetes sink: maps a Slurm node to its Kubernetes node and writes the node's state
// there as annotations, optionally a condition and a NoSchedule taint while it is drained.
#include <memory>
#include <string>
#include <vector>

#include "sink.h"
#include "vigil/base/clock.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/metrics.h"
#include "vigil/kube/kube_api.h"

namespace vigil::drainer {

class AuditLog;

class KubeSink final : public Sink {
 public:
  // Everything but `kube` must outlive the sink.
  KubeSink(std::shared_ptr<kube::KubeApi> kube, const KubeSettings& cfg, Metrics& metrics,
           AuditLog& audit, const Clock& clock);

  SinkKind kind() const override { return SinkKind::kKubernetes; }
  bool wants_node_states() const override { return true; }
  SinkResult apply(const std::vector<Intent>& batch,
                   const std::map<std::string, NodeState>& states) override;

 private:
  // The Kubernetes node of a Slurm node per node_mapping; empty when there is none.
  std::string node_name(const NodeState& s);
  VoidResult write_state(const std::string& k8s, const NodeState& s);

  std::shared_ptr<kube::KubeApi> kube_;
  const KubeSettings& cfg_;
  Metrics& metrics_;
  AuditLog& audit_;
  const Clock& clock_;
};

}  // namespace vigil::drainer
