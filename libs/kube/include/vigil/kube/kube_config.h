#pragma once
// Private helpers of the Kubernetes sink that the public contract (kube_api.h) does not cover.
#include <string>

#include "vigil/base/result.h"

namespace vigil::kube {

inline constexpr const char* kDefaultServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// The namespace of the pod this process runs in (sa_dir/namespace). KubeConfig has no namespace
// field, so the drainer core can use this as the default namespace for pod-name lookups.
Result<std::string> kube_in_cluster_namespace(
    const std::string& sa_dir = kDefaultServiceAccountDir);

}  // namespace vigil::kube
