#pragma once
// A fake Kubernetes API server for tests (no kube-apiserver is available on the build machines).
// It implements the small part of the API that vigil-drainer uses, the way the real server
// behaves: HTTPS with a certificate from a test CA, bearer-token authentication (401 Status JSON),
// Nodes and Pods stored as JSON, GET, PATCH of /api/v1/nodes/{name} and of its /status
// subresource with JSON merge patch (RFC 7386; other patch types -> 415), a cluster-wide
// resourceVersion that increments on every write, 409 Conflict when a patch carries a stale
// metadata.resourceVersion, and Kubernetes Status bodies for every error. Fault injection makes
// the next N requests answer 403/404/409/429 (with Retry-After)/500/503.
// Binds 127.0.0.1 on an ephemeral port; the destructor stops the server and joins its thread.
#include <httplib.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "k8s_test_support.h"

namespace vigil::testing {

struct RecordedRequest {
  std::string method;
  std::string path;
  std::string content_type;
  std::string authorization;
  std::string body;  // PATCH bodies only (cpp-httplib reads bodies after pre-routing)
};

class FakeKubeApiServer {
 public:
  FakeKubeApiServer(const TestPki& pki, std::string token);
  ~FakeKubeApiServer();
  FakeKubeApiServer(const FakeKubeApiServer&) = delete;
  FakeKubeApiServer& operator=(const FakeKubeApiServer&) = delete;

  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  // Stores a Node; `object` may carry metadata (annotations, labels) and status (conditions).
  void put_node(const std::string& name, nlohmann::json object = nlohmann::json::object());
  // Stores a Pod in namespace ns scheduled to node_name ("" = not scheduled yet).
  void put_pod(const std::string& ns, const std::string& name, const std::string& node_name);
  // The stored Node, or null when there is none.
  nlohmann::json node(const std::string& name) const;

  // The next `count` requests (of `method`, or any method when empty) answer `status` with a
  // Kubernetes Status body; 429/503 also carry Retry-After when retry_after_s is set.
  void inject_fault(int status, int count, std::optional<int> retry_after_s = std::nullopt,
                    std::string method = "");
  // Simulates another writer (the kubelet's heartbeat): just before the next PATCH of this node
  // is applied, its resourceVersion moves on, so a patch conditioned on the old one gets 409.
  void touch_node_before_next_patch(const std::string& name);

  // The next `count` requests are answered only after `delay` (to test client timeouts).
  void delay_next(std::chrono::milliseconds delay, int count);

  std::vector<RecordedRequest> requests() const;
  size_t request_count() const;
  void clear_requests();

 private:
  struct Fault {
    int status;
    int remaining;
    std::optional<int> retry_after_s;
    std::string method;
  };

  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res);
  void get_node(const httplib::Request& req, httplib::Response& res);
  void patch_node(const httplib::Request& req, httplib::Response& res, bool status_subresource);
  void get_pod(const httplib::Request& req, httplib::Response& res);
  std::string next_resource_version();

  const std::string token_;
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> nodes_;
  std::map<std::string, nlohmann::json> pods_;  // key "ns/name"
  std::deque<Fault> faults_;
  std::set<std::string> touch_before_patch_;
  std::vector<RecordedRequest> requests_;
  long resource_version_ = 1000;
  std::chrono::milliseconds delay_{0};
  int delayed_requests_ = 0;

  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = -1;
};

}  // namespace vigil::testing
