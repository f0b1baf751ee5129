// The Kubernetes REST client behind KubeApi: HTTPS (cpp-httplib + OpenSSL) with a bearer token.
//
// Retry policy (see docs/kubernetes.md):
// - 429 and 5xx: retried up to KubeConfig::max_retries times; the wait is the answer's
//   Retry-After (or the Status details.retryAfterSeconds), capped at kMaxRetryAfter, else an
//   exponential backoff (kInitialBackoff doubling up to kMaxBackoff).
// - connection, TLS handshake, read/write errors and timeouts: same bounded backoff.
// - 409 Conflict: the call is re-done (for conditions: re-read the Node, merge again, PATCH again
//   with the new resourceVersion), at most max_retries times.
// - 404, 401, 403, 415, 422 and other 4xx: no retry; the error names the object, the HTTP status
//   and the API's Status message (and for 401/403 what to fix).
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "vigil/base/backoff.h"
#include "vigil/base/httplib_tls.h"
#include "vigil/base/time.h"
#include "vigil/kube/kube_api.h"

namespace vigil::kube {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kInitialBackoff{100};
constexpr milliseconds kMaxBackoff{2000};
constexpr std::chrono::seconds kMaxRetryAfter{10};
constexpr const char* kMergePatch = "application/merge-patch+json";
constexpr const char* kUserAgent = "vigil-drainer/0.1";

struct ServerUrl {
  bool tls = true;
  std::string host;  // without IPv6 brackets
  int port = 443;
  std::string base_path;  // e.g. "/k8s/clusters/c-1" behind a proxy; "" normally
};

std::optional<ServerUrl> parse_server_url(const std::string& url) {
  ServerUrl out;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    out.tls = false;
    out.port = 80;
    rest = url.substr(7);
  } else {
    return std::nullopt;
  }
  const auto slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) out.base_path = rest.substr(slash);
  while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  std::string port_text;
  if (!hostport.empty() && hostport.front() == '[') {
    const auto close = hostport.find(']');
    if (close == std::string::npos) return std::nullopt;
    out.host = hostport.substr(1, close - 1);
    const std::string tail = hostport.substr(close + 1);
    if (!tail.empty()) {
      if (tail.front() != ':') return std::nullopt;
      port_text = tail.substr(1);
    }
  } else {
    const auto colon = hostport.find(':');
    out.host = hostport.substr(0, colon);
    if (colon != std::string::npos) port_text = hostport.substr(colon + 1);
  }
  if (out.host.empty()) return std::nullopt;
  if (!port_text.empty()) {
    const auto [ptr, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), out.port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || out.port <= 0 ||
        out.port > 65535) {
      return std::nullopt;
    }
  }
  return out;
}

// RFC 1123 subdomain (node and pod names); max_len 63 and no dots gives a DNS label (namespaces).
bool is_dns_name(const std::string& s, size_t max_len, bool allow_dots) {
  if (s.empty() || s.size() > max_len) return false;
  char prev = '.';
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '.') {
      if (!allow_dots || prev == '.' || prev == '-') return false;
    } else if (c == '-') {
      if (prev == '.') return false;
    } else if (!alnum) {
      return false;
    }
    prev = c;
  }
  return prev != '-' && prev != '.';
}

std::optional<int> parse_seconds(const std::string& s) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// One API call, described for error messages.
struct Call {
  std::string method;  // GET | PATCH
  std::string path;    // /api/v1/...
  std::string object;  // node "gpu-0" | pod "ns/name"
  std::string rbac;    // what the service account needs, for 403 answers
  bool is_node = false;
};

// What came back from the last attempt of a call.
struct Reply {
  int status = 0;  // 0: no HTTP answer (see transport)
  std::string body;
  std::string retry_after;
  httplib::Error transport = httplib::Error::Success;
  std::optional<TlsVerifyFailure> tls_failure;  // the server's certificate was refused
  int attempts = 0;
  bool ok() const { return status >= 200 && status < 300; }
};

// "HTTP 404 NotFound: nodes "gpu-9" not found" from a Kubernetes Status body (or raw text).
std::string describe_status(const Reply& r) {
  std::string text = "HTTP " + std::to_string(r.status);
  const json status = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object()) {
    if (auto it = status.find("reason"); it != status.end() && it->is_string()) {
      text += " " + it->get<std::string>();
    }
    if (auto it = status.find("message"); it != status.end() && it->is_string()) {
      text += ": " + it->get<std::string>();
    }
    return text;
  }
  std::string raw = r.body.substr(0, 200);
  std::replace_if(
      raw.begin(), raw.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return raw.empty() ? text : text + ": " + raw;
}

std::optional<milliseconds> retry_after_of(const Reply& r) {
  std::optional<int> seconds = parse_seconds(r.retry_after);
  if (!seconds) {
    const json status = json::parse(r.body, nullptr, false);
    if (status.is_object() && status.contains("details") && status["details"].is_object()) {
      const json& d = status["details"];
      if (auto it = d.find("retryAfterSeconds"); it != d.end() && it->is_number_integer()) {
        seconds = std::max(0, it->get<int>());
      }
    }
  }
  if (!seconds) return std::nullopt;
  return std::min<milliseconds>(std::chrono::seconds(*seconds), kMaxRetryAfter);
}

milliseconds backoff(int attempt) {
  std::int64_t d = 0;
  for (int i = 0; i <= attempt; ++i)
    d = next_backoff(d, kInitialBackoff.count(), kMaxBackoff.count());
  return milliseconds(d);
}

bool retryable_transport(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
    case httplib::Error::ConnectionTimeout:
    case httplib::Error::Read:
    case httplib::Error::Write:
    case httplib::Error::SSLConnection:
    case httplib::Error::Unknown:
      return true;
    default:
      return false;  // certificate problems and bad configuration do not heal by retrying
  }
}

std::string describe_transport(httplib::Error e, int timeout_ms) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection failed (refused, or host unreachable)";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out after " + std::to_string(timeout_ms) + " ms";
    case httplib::Error::Read:
      return "no complete answer (read error, or no answer within " + std::to_string(timeout_ms) +
             " ms)";
    case httplib::Error::Write:
      return "sending the request failed (is the server speaking the expected http/https?)";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed (is the server speaking https?)";
    default:
      return httplib::to_string(e);
  }
}

class KubeClient final : public KubeApi {
 public:
  explicit KubeClient(KubeConfig cfg) : cfg_(std::move(cfg)) {
    const auto url = parse_server_url(cfg_.server);
    if (!url) {
      init_error_ = Error{"invalid API server URL \"" + cfg_.server +
                              "\" (expected https://host[:port]); check the kubeconfig server",
                          "make_kube_api"};
      return;
    }
    base_path_ = url->base_path;
    if (url->tls) {
      tls_ = std::make_unique<httplib::SSLClient>(url->host, url->port);
      http_ = tls_.get();
      if (!tls_->is_valid()) {
        init_error_ = Error{"cannot create a TLS context", "SSL_CTX_new"};
        return;
      }
      if (!cfg_.ca_file.empty()) tls_->set_ca_cert_path(cfg_.ca_file);
      tls_->enable_server_certificate_verification(!cfg_.insecure_skip_verify);
    } else {
      // Plain http is for `kubectl proxy` on this host; never send a token in clear elsewhere.
      const bool loopback =
          url->host == "127.0.0.1" || url->host == "localhost" || url->host == "::1";
      if (!cfg_.token.empty() && !loopback) {
        init_error_ = Error{"refusing to send the bearer token over plain http to " + cfg_.server +
                                "; use https://",
                            "make_kube_api"};
        return;
      }
      plain_ = std::make_unique<httplib::ClientImpl>(url->host, url->port);
      http_ = plain_.get();
    }
    const milliseconds timeout(std::max(1, cfg_.timeout_ms));
    http_->set_connection_timeout(timeout);
    http_->set_read_timeout(timeout);
    http_->set_write_timeout(timeout);
    if (!cfg_.token.empty()) http_->set_bearer_token_auth(cfg_.token);
    http_->set_default_headers({{"Accept", "application/json"}, {"User-Agent", kUserAgent}});
  }

  VoidResult annotate_node(const std::string& node,
                           const std::map<std::string, std::optional<std::string>>& a) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_error_) return *init_error_;
    if (auto bad = check_name(node, "node")) return *bad;
    if (a.empty()) return ok_result();
    json annotations = json::object();
    for (const auto& [key, value] : a) {
      annotations[key] = value ? json(*value) : json(nullptr);  // null removes (RFC 7386)
    }
    const std::string body = json{{"metadata", {{"annotations", annotations}}}}.dump();
    const Call call{"PATCH", "/api/v1/nodes/" + node, "node \"" + node + "\"",
                    "verb \"patch\" on resource \"nodes\"", true};
    for (int conflicts = 0;; ++conflicts) {
      Reply r = send(call, &body);
      if (r.ok()) return ok_result();
      // This patch carries no resourceVersion precondition, so sending it again is safe.
      if (r.status == 409 && conflicts < cfg_.max_retries) continue;
      r.attempts += conflicts;
      return to_error(call, r);
    }
  }

  // Read, merge, conditional write: GET the object, let `merge` build the merge-patch body from
  // it (nullopt: already as wanted, nothing is written), send it with the object's
  // resourceVersion. JSON merge patches replace lists whole, so a writer in between (kubelet
  // heartbeat) must turn the write into 409: then re-read and retry, up to max_retries.
  VoidResult patch_conditionally(const Call& get, const Call& patch,
                                 const std::function<std::optional<json>(const json&)>& merge) {
    for (int conflicts = 0;; ++conflicts) {
      Reply got = send(get, nullptr);
      if (!got.ok()) return to_error(get, got);
      json current = json::parse(got.body, nullptr, false);
      if (!current.is_object()) return invalid_json(get);
      std::optional<json> body = merge(current);
      if (!body) return ok_result();
      const json rv = current["metadata"].is_object()
                          ? current["metadata"].value("resourceVersion", json())
                          : json();
      if (rv.is_string() && !rv.get<std::string>().empty()) {
        (*body)["metadata"] = {{"resourceVersion", rv}};
      }
      const std::string text = body->dump();
      Reply r = send(patch, &text);
      if (r.ok()) return ok_result();
      if (r.status == 409 && conflicts < cfg_.max_retries) continue;
      r.attempts += conflicts;
      return to_error(patch, r);
    }
  }

  VoidResult set_node_condition(const std::string& node, const NodeCondition& c) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_error_) return *init_error_;
    if (auto bad = check_name(node, "node")) return *bad;
    if (c.type.empty()) return Error{"the condition type is empty", "set_node_condition"};
    if (c.status != "True" && c.status != "False" && c.status != "Unknown") {
      return Error{"condition status \"" + c.status + "\" must be True, False or Unknown",
                   "set_node_condition"};
    }
    const std::string rbac = "verbs \"get\" on \"nodes\" and \"patch\" on \"nodes/status\"";
    const Call get{"GET", "/api/v1/nodes/" + node, "node \"" + node + "\"", rbac, true};
    const Call patch{"PATCH", "/api/v1/nodes/" + node + "/status", get.object, rbac, true};
    return patch_conditionally(get, patch, [&](const json& current) -> std::optional<json> {
      json conditions = json::array();
      if (auto s = current.find("status"); s != current.end() && s->is_object()) {
        if (auto cs = s->find("conditions"); cs != s->end() && cs->is_array()) conditions = *cs;
      }
      const std::string now = rfc3339_now();
      json updated = {{"type", c.type},           {"status", c.status},
                      {"reason", c.reason},       {"message", c.message},
                      {"lastHeartbeatTime", now}, {"lastTransitionTime", now}};
      bool replaced = false;
      for (json& existing : conditions) {
        if (!existing.is_object() || existing.value("type", "") != c.type) continue;
        // The transition time moves only when the status changes (as the kubelet does it).
        if (existing.value("status", "") == c.status && existing.contains("lastTransitionTime")) {
          updated["lastTransitionTime"] = existing["lastTransitionTime"];
        }
        existing = updated;
        replaced = true;
        break;
      }
      if (!replaced) conditions.push_back(updated);
      return json{{"status", {{"conditions", conditions}}}};
    });
  }

  // spec.taints of the main resource (a merge patch replaces the list whole).
  VoidResult set_node_taint(const std::string& node, const std::string& key,
                            const std::optional<NodeTaint>& taint) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_error_) return *init_error_;
    if (auto bad = check_name(node, "node")) return *bad;
    if (key.empty()) return Error{"the taint key is empty", "set_node_taint"};
    if (taint && (taint->key != key ||
                  (taint->effect != "NoSchedule" && taint->effect != "PreferNoSchedule" &&
                   taint->effect != "NoExecute"))) {
      return Error{"taint effect must be NoSchedule, PreferNoSchedule or NoExecute and its key \"" +
                       key + "\"",
                   "set_node_taint"};
    }
    const std::string rbac = "verbs \"get\" and \"patch\" on resource \"nodes\"";
    const Call get{"GET", "/api/v1/nodes/" + node, "node \"" + node + "\"", rbac, true};
    const Call patch{"PATCH", get.path, get.object, rbac, true};
    return patch_conditionally(get, patch, [&](const json& current) -> std::optional<json> {
      json taints = json::array();
      if (auto spec = current.find("spec"); spec != current.end() && spec->is_object()) {
        if (auto ts = spec->find("taints"); ts != spec->end() && ts->is_array()) taints = *ts;
      }
      json kept = json::array();
      bool already = false;
      for (const json& t : taints) {
        if (t.is_object() && t.value("key", "") == key) {
          if (taint && t.value("value", "") == taint->value &&
              t.value("effect", "") == taint->effect) {
            already = true;
            kept.push_back(t);
          }
          continue;
        }
        kept.push_back(t);
      }
      if (taint && !already) {
        kept.push_back({{"key", key}, {"value", taint->value}, {"effect", taint->effect}});
      }
      if (kept == taints) return std::nullopt;  // nothing to change: no write
      return json{{"spec", {{"taints", kept.empty() ? json(nullptr) : kept}}}};
    });
  }

  Result<std::string> pod_node_name(const std::string& ns, const std::string& pod) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_error_) return *init_error_;
    if (!is_dns_name(ns, 63, false)) {
      return Error{"\"" + ns + "\" is not a valid namespace name", "pod_node_name"};
    }
    if (auto bad = check_name(pod, "pod")) return *bad;
    const Call call{"GET", "/api/v1/namespaces/" + ns + "/pods/" + pod,
                    "pod \"" + ns + "/" + pod + "\"",
                    "verb \"get\" on resource \"pods\" in namespace \"" + ns + "\"", false};
    Reply r = send(call, nullptr);
    if (!r.ok()) return to_error(call, r);
    const json obj = json::parse(r.body, nullptr, false);
    if (!obj.is_object()) return invalid_json(call);
    std::string node;
    if (auto spec = obj.find("spec"); spec != obj.end() && spec->is_object()) {
      node = spec->value("nodeName", "");
    }
    if (node.empty()) {
      return Error{call.object + " is not scheduled to a node yet (spec.nodeName is empty)",
                   call.method + " " + call.path};
    }
    return node;
  }

 private:
  static std::optional<Error> check_name(const std::string& name, const char* kind) {
    if (is_dns_name(name, 253, true)) return std::nullopt;
    return Error{std::string("\"") + name + "\" is not a valid Kubernetes " + kind +
                     " name (lowercase RFC 1123 subdomain)",
                 "kube_api"};
  }

  static Error invalid_json(const Call& call) {
    return Error{"the API server answered with a body that is not a JSON object",
                 call.method + " " + call.path};
  }

  // Follows token rotation: re-reads cfg_.token_file when its mtime changed. A rotated file
  // that cannot be read or is empty keeps the previous token (the API server will say if it
  // expired) rather than sending none.
  void refresh_token() {
    if (cfg_.token_file.empty()) return;
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(cfg_.token_file, ec);
    if (ec || mtime == token_mtime_) return;
    std::ifstream in(cfg_.token_file);
    std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
      token.pop_back();
    if (!in.bad() && !token.empty()) {
      token_mtime_ = mtime;
      if (token != cfg_.token) {
        cfg_.token = token;
        http_->set_bearer_token_auth(cfg_.token);
      }
    }
  }

  // One attempt on the wire.
  Reply send_once(const Call& call, const std::string* body) {
    refresh_token();
    Reply r;
    const std::string path = base_path_ + call.path;
    httplib::Result res =
        body == nullptr ? http_->Get(path.c_str()) : http_->Patch(path.c_str(), *body, kMergePatch);
    if (!res) {
      r.transport = res.error();
      if (tls_) r.tls_failure = tls_verify_failure(*tls_, r.transport);
      return r;
    }
    r.status = res->status;
    r.body = res->body;
    r.retry_after = res->get_header_value("Retry-After");
    return r;
  }

  // Sends with bounded retries for 429, 5xx and transport errors.
  Reply send(const Call& call, const std::string* body) {
    for (int attempt = 0;; ++attempt) {
      Reply r = send_once(call, body);
      r.attempts = attempt + 1;
      std::optional<milliseconds> wait;
      if (r.status == 0) {
        if (retryable_transport(r.transport)) wait = backoff(attempt);
      } else if (r.status == 429 || r.status >= 500) {
        wait = retry_after_of(r).value_or(backoff(attempt));
      }
      if (!wait || attempt >= cfg_.max_retries) return r;
      std::this_thread::sleep_for(*wait);
    }
  }

  Error to_error(const Call& call, const Reply& r) const {
    const std::string where = call.method + " " + call.path;
    const std::string tries =
        " after " + std::to_string(r.attempts) + (r.attempts == 1 ? " attempt" : " attempts");
    if (r.status == 0) {
      if (r.tls_failure) {
        return Error{"TLS verification of the API server " + cfg_.server + " failed (" +
                         r.tls_failure->why + "); check the CA bundle (" +
                         (cfg_.ca_file.empty() ? "system default" : cfg_.ca_file) +
                         ") and the server address",
                     where};
      }
      if (r.transport == httplib::Error::SSLLoadingCerts) {
        return Error{"cannot load the CA bundle " + cfg_.ca_file + " (not a readable PEM file)",
                     where};
      }
      return Error{"could not reach the API server " + cfg_.server + tries + ": " +
                       describe_transport(r.transport, cfg_.timeout_ms),
                   where};
    }
    const std::string status = describe_status(r);
    switch (r.status) {
      case 404:
        return Error{call.object + " not found (" + status + ")" +
                         (call.is_node ? "; check the Slurm-to-Kubernetes node mapping" : ""),
                     where};
      case 401:
        return Error{"the API server rejected the bearer token (" + status +
                         "); check the service-account token or the kubeconfig user",
                     where};
      case 403:
        return Error{
            "forbidden (" + status + "); the drainer's service account needs RBAC " + call.rbac,
            where};
      case 409:
        return Error{
            call.object + " kept changing under us: conflict" + tries + " (" + status + ")", where};
      case 429:
        return Error{"the API server is still throttling" + tries + " (" + status + ")", where};
      default:
        if (r.status >= 500) {
          return Error{"API server error" + tries + " (" + status + ")", where};
        }
        return Error{"request rejected (" + status + ")", where};
    }
  }

  std::mutex mu_;
  KubeConfig cfg_;
  std::filesystem::file_time_type token_mtime_{};
  std::optional<Error> init_error_;
  std::unique_ptr<httplib::SSLClient> tls_;
  std::unique_ptr<httplib::ClientImpl> plain_;
  httplib::ClientImpl* http_ = nullptr;
  std::string base_path_;
};

}  // namespace

std::unique_ptr<KubeApi> make_kube_api(const KubeConfig& cfg) {
  return std::make_unique<KubeClient>(cfg);
}

}  // namespace vigil::kube
