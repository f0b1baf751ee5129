#pragma once
// Optional Node taint for non-Slurm workloads. Not (yet) part of the KubeApi contract
// (drainer/include/vigil/drainer/kube_api.h), so it is offered here for the drainer core; it
// works on the KubeApi returned by make_kube_api and reports an error for any other KubeApi.
#include <optional>
#include <string>

#include "vigil/drainer/kube_api.h"

namespace vigil::drainer {

struct NodeTaint {
  std::string key;     // e.g. "vigil.io/unhealthy"
  std::string value;   // e.g. "ecc"
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

// Puts `taint` on the Node, replacing any taint with the same key, or (nullopt) removes every
// taint with `key`. Other taints are kept. GET + merge patch of spec.taints conditioned on the
// resourceVersion (409 -> re-read and retry). Needs RBAC "get" and "patch" on "nodes".
VoidResult set_node_taint(KubeApi& api, const std::string& node, const std::string& key,
                          const std::optional<NodeTaint>& taint);

}  // namespace vigil::drainer
