#pragma once
// The Kubernetes sink: maps a Slurm node to its Kubernetes node and writes the node's state
// there as annotations, optionally a condition and a NoSchedule taint while it is drained. It
// writes what its intent carries (the decision's NodeEvent), never the drainer's table.
#include <memory>
#include <string>
#include <vector>

#include "sink.h"
#include "vigil/drainer/config.h"
#include "vigil/kube/kube_api.h"

namespace vigil::drainer {

class KubeSink final : public Sink {
 public:
  // Everything but `kube` must outlive the sink.
  KubeSink(std::shared_ptr<kube::KubeApi> kube, const KubeSettings& cfg);

  SinkResult apply(const std::vector<Intent>& batch) override;

 private:
  // The Kubernetes node of a Slurm node per node_mapping; empty when there is none.
  std::string node_name(const NodeEvent& e);
  // The node's state after the decision, as annotations, condition and taint.
  VoidResult write_state(const std::string& k8s, const NodeEvent& e);

  std::shared_ptr<kube::KubeApi> kube_;
  const KubeSettings& cfg_;
};

}  // namespace vigil::drainer
