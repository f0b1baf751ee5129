#include "fake_kube_api_server.h"

#include <chrono>
#include <stdexcept>

namespace vigil::testing {
namespace {

using json = nlohmann::json;
using HandlerResponse = httplib::Server::HandlerResponse;

constexpr const char* kMergePatch = "application/merge-patch+json";

const char* reason_for(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 415:
      return "UnsupportedMediaType";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    default:
      return "Unknown";
  }
}

// A metav1.Status body as the real API server sends it.
void reply_status(httplib::Response& res, int code, const std::string& message,
                  json details = nullptr) {
  json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason_for(code)},
                 {"code", code}};
  if (!details.is_null()) status["details"] = std::move(details);
  res.status = code;
  res.set_content(status.dump(), "application/json");
}

// "nodes" / "nodes/status" / "pods" and the object name, from a request path.
struct Target {
  std::string resource;
  std::string name;
  std::string ns;
};

Target target_of(const std::string& path) {
  Target t;
  const std::string nodes = "/api/v1/nodes/";
  const std::string namespaces = "/api/v1/namespaces/";
  if (path.rfind(nodes, 0) == 0) {
    std::string rest = path.substr(nodes.size());
    t.resource = "nodes";
    if (const auto slash = rest.find('/'); slash != std::string::npos) {
      t.resource += rest.substr(slash);
      rest = rest.substr(0, slash);
    }
    t.name = rest;
  } else if (path.rfind(namespaces, 0) == 0) {
    const std::string rest = path.substr(namespaces.size());
    const auto slash = rest.find('/');
    t.ns = rest.substr(0, slash);
    if (slash != std::string::npos) {
      const std::string tail = rest.substr(slash + 1);  // pods/name
      const auto s2 = tail.find('/');
      t.resource = tail.substr(0, s2);
      if (s2 != std::string::npos) t.name = tail.substr(s2 + 1);
    }
  }
  return t;
}

std::string media_type(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

}  // namespace

FakeKubeApiServer::FakeKubeApiServer(const TestPki& pki, std::string token)
    : token_(std::move(token)) {
  server_ = std::make_unique<httplib::SSLServer>(pki.server_cert_path.c_str(),
                                                 pki.server_key_path.c_str());
  if (!server_->is_valid()) throw std::runtime_error("fake API server: bad TLS certificate/key");
  server_->set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return pre_route(req, res); });
  server_->Get(R"(/api/v1/nodes/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) { get_node(req, res); });
  server_->Patch(
      R"(/api/v1/nodes/([^/]+))",
      [this](const httplib::Request& req, httplib::Response& res) { patch_node(req, res, false); });
  server_->Patch(
      R"(/api/v1/nodes/([^/]+)/status)",
      [this](const httplib::Request& req, httplib::Response& res) { patch_node(req, res, true); });
  server_->Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) { get_pod(req, res); });
  const auto not_found = [](const httplib::Request&, httplib::Response& res) {
    reply_status(res, 404, "the server could not find the requested resource");
  };
  server_->Get(".*", not_found);
  server_->Patch(".*", not_found);
  server_->Post(".*", not_found);
  server_->Put(".*", not_found);
  server_->Delete(".*", not_found);

  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("fake API server: cannot bind 127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      server_->stop();
      thread_.join();
      throw std::runtime_error("fake API server did not start");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FakeKubeApiServer::~FakeKubeApiServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeKubeApiServer::next_resource_version() {
  return std::to_string(++resource_version_);
}

void FakeKubeApiServer::put_node(const std::string& name, json object) {
  std::lock_guard<std::mutex> lock(mu_);
  object["apiVersion"] = "v1";
  object["kind"] = "Node";
  object["metadata"]["name"] = name;
  object["metadata"]["resourceVersion"] = next_resource_version();
  nodes_[name] = std::move(object);
}

void FakeKubeApiServer::put_pod(const std::string& ns, const std::string& name,
                                const std::string& node_name) {
  std::lock_guard<std::mutex> lock(mu_);
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name}, {"namespace", ns}, {"resourceVersion", next_resource_version()}}},
              {"spec", json::object()},
              {"status", {{"phase", node_name.empty() ? "Pending" : "Running"}}}};
  if (!node_name.empty()) pod["spec"]["nodeName"] = node_name;
  pods_[ns + "/" + name] = std::move(pod);
}

json FakeKubeApiServer::node(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = nodes_.find(name);
  return it == nodes_.end() ? json() : it->second;
}

void FakeKubeApiServer::inject_fault(int status, int count, std::optional<int> retry_after_s,
                                     std::string method) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back(Fault{status, count, retry_after_s, std::move(method)});
}

void FakeKubeApiServer::touch_node_before_next_patch(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  touch_before_patch_.insert(name);
}

std::vector<RecordedRequest> FakeKubeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FakeKubeApiServer::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

void FakeKubeApiServer::clear_requests() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
}

void FakeKubeApiServer::delay_next(std::chrono::milliseconds delay, int count) {
  std::lock_guard<std::mutex> lock(mu_);
  delay_ = delay;
  delayed_requests_ = count;
}

HandlerResponse FakeKubeApiServer::pre_route(const httplib::Request& req, httplib::Response& res) {
  std::chrono::milliseconds delay{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(RecordedRequest{req.method, req.path, req.get_header_value("Content-Type"),
                                        req.get_header_value("Authorization"), ""});
    if (delayed_requests_ > 0) {
      --delayed_requests_;
      delay = delay_;
    }
  }
  if (delay.count() > 0) std::this_thread::sleep_for(delay);  // a slow API server
  std::lock_guard<std::mutex> lock(mu_);
  // Authentication comes first, as in the real server: a bad token never sees a fault or data.
  if (req.get_header_value("Authorization") != "Bearer " + token_) {
    reply_status(res, 401, "Unauthorized");
    return HandlerResponse::Handled;
  }
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (!it->method.empty() && it->method != req.method) continue;
    const Fault fault = *it;
    if (--it->remaining <= 0) faults_.erase(it);
    const Target t = target_of(req.path);
    const std::string object = t.resource + " \"" + t.name + "\"";
    json details = {{"name", t.name}, {"kind", t.resource}};
    switch (fault.status) {
      case 403: {
        const std::string verb = req.method == "GET" ? "get" : "patch";
        reply_status(
            res, 403,
            object +
                " is forbidden: User \"system:serviceaccount:vigil:vigil-drainer\" "
                "cannot " +
                verb + " resource \"" + t.resource + "\" in API group \"\" " +
                (t.ns.empty() ? "at the cluster scope" : "in the namespace \"" + t.ns + "\""),
            details);
        break;
      }
      case 404:
        reply_status(res, 404, object + " not found", details);
        break;
      case 409:
        reply_status(res, 409,
                     "Operation cannot be fulfilled on " + object +
                         ": the object has been modified; please apply your changes to the latest "
                         "version and try again",
                     details);
        break;
      case 429:
      case 503:
        if (fault.retry_after_s) {
          details["retryAfterSeconds"] = *fault.retry_after_s;
          res.set_header("Retry-After", std::to_string(*fault.retry_after_s));
        }
        reply_status(res, fault.status,
                     fault.status == 429 ? "Too many requests, please try again later."
                                         : "the server is currently unable to handle the request",
                     details);
        break;
      default:
        reply_status(res, fault.status, "Internal error occurred: injected fault");
        break;
    }
    return HandlerResponse::Handled;
  }
  return HandlerResponse::Unhandled;
}

void FakeKubeApiServer::get_node(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = req.matches[1];
  const auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    reply_status(res, 404, "nodes \"" + name + "\" not found", {{"name", name}, {"kind", "nodes"}});
    return;
  }
  res.set_content(it->second.dump(), "application/json");
}

void FakeKubeApiServer::patch_node(const httplib::Request& req, httplib::Response& res,
                                   bool status_subresource) {
  std::lock_guard<std::mutex> lock(mu_);
  // cpp-httplib reads the body after the pre-routing handler, so the recording is completed here.
  for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
    if (it->method == req.method && it->path == req.path && it->body.empty()) {
      it->body = req.body;
      break;
    }
  }
  const std::string name = req.matches[1];
  if (media_type(req.get_header_value("Content-Type")) != kMergePatch) {
    // The real server also takes json-patch, strategic-merge-patch and apply-patch for Nodes;
    // this fake implements merge patch only, the one type vigil-drainer sends.
    reply_status(res, 415,
                 "the body of the request was in an unknown format - accepted media types "
                 "include: application/merge-patch+json (fake API server)");
    return;
  }
  const json patch = json::parse(req.body, nullptr, false);
  if (!patch.is_object()) {
    reply_status(res, 400, "error decoding patch: the body is not a JSON object");
    return;
  }
  const auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    reply_status(res, 404, "nodes \"" + name + "\" not found", {{"name", name}, {"kind", "nodes"}});
    return;
  }
  json& current = it->second;
  if (touch_before_patch_.erase(name) > 0) {
    current["metadata"]["resourceVersion"] = next_resource_version();
  }
  // metadata.resourceVersion in a patch is a precondition (optimistic concurrency).
  if (patch.contains("metadata") && patch["metadata"].is_object() &&
      patch["metadata"].contains("resourceVersion") &&
      patch["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]) {
    reply_status(res, 409,
                 "Operation cannot be fulfilled on nodes \"" + name +
                     "\": the object has been modified; please apply your changes to the latest "
                     "version and try again",
                 {{"name", name}, {"kind", "nodes"}});
    return;
  }
  json updated = current;
  updated.merge_patch(patch);  // RFC 7386: objects merge, null deletes, arrays replace
  // The main resource ignores status changes; the status subresource ignores everything else.
  const auto keep = [&](const char* field) {
    if (current.contains(field)) {
      updated[field] = current[field];
    } else {
      updated.erase(field);
    }
  };
  if (status_subresource) {
    keep("spec");
    keep("metadata");
  } else {
    keep("status");
  }
  updated["metadata"]["name"] = name;
  updated["apiVersion"] = "v1";
  updated["kind"] = "Node";
  updated["metadata"]["resourceVersion"] = next_resource_version();
  current = std::move(updated);
  res.set_content(current.dump(), "application/json");
}

void FakeKubeApiServer::get_pod(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string ns = req.matches[1];
  const std::string name = req.matches[2];
  const auto it = pods_.find(ns + "/" + name);
  if (it == pods_.end()) {
    reply_status(res, 404, "pods \"" + name + "\" not found", {{"name", name}, {"kind", "pods"}});
    return;
  }
  res.set_content(it->second.dump(), "application/json");
}

}  // namespace vigil::testing
