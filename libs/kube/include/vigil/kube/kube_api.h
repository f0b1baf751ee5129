#pragma once
// Thin interface over the Kubernetes API: the three calls the drainer needs. The real client
// (kube_client.cpp) speaks HTTPS with a bearer token; tests run it against a fake API server.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "vigil/base/result.h"

namespace vigil::kube {

struct KubeConfig {
  std::string server;  // https://host:port
  std::string token;   // bearer token
  // When set, the token is re-read from this file before each request if the file changed:
  // kubelet rotates projected service-account tokens (about hourly) and a long-running
  // drainer must follow. in-cluster and kubeconfig `tokenFile` set it.
  std::string token_file;
  std::string ca_file;  // PEM bundle to verify the server; empty = system default
  bool insecure_skip_verify = false;
  int timeout_ms = 5000;
  int max_retries = 3;  // for 429 / 5xx / connection errors
};

// In-cluster: KUBERNETES_SERVICE_HOST/PORT + /var/run/secrets/kubernetes.io/serviceaccount.
// sa_dir is injectable for tests.
Result<KubeConfig> kube_config_in_cluster(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");
// Out of cluster: a kubeconfig file (current-context; token and CA data/file).
Result<KubeConfig> kube_config_from_file(const std::string& path);

struct NodeCondition {
  std::string type;    // e.g. "VigilHealthy"
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;  // CamelCase
  std::string message;
};

struct NodeTaint {
  std::string key;     // e.g. "vigil.dev/unhealthy"
  std::string value;   // e.g. the failing check's short name
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

class KubeApi {
 public:
  virtual ~KubeApi() = default;
  // PATCH /api/v1/nodes/{node} with application/merge-patch+json; a nullopt value removes
  // the annotation (merge-patch null).
  virtual VoidResult annotate_node(const std::string& node,
                                   const std::map<std::string, std::optional<std::string>>& a) = 0;
  // PATCH /api/v1/nodes/{node}/status (conditions list, merged by type).
  virtual VoidResult set_node_condition(const std::string& node, const NodeCondition& c) = 0;
  // Puts `taint` on the Node, replacing any taint with the same key, or (nullopt) removes every
  // taint with `key`; other taints are kept. GET + merge patch of spec.taints conditioned on
  // the resourceVersion (409 -> re-read and retry). RBAC: get + patch on nodes.
  virtual VoidResult set_node_taint(const std::string& node, const std::string& key,
                                    const std::optional<NodeTaint>& taint) = 0;
  // GET /api/v1/namespaces/{ns}/pods/{pod} -> spec.nodeName
  virtual Result<std::string> pod_node_name(const std::string& ns, const std::string& pod) = 0;
};

std::unique_ptr<KubeApi> make_kube_api(const KubeConfig& cfg);

}  // namespace vigil::kube
