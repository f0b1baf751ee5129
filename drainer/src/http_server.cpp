// HTTP API; see http_server.h.
#include "vigil/drainer/http_server.h"

#include <httplib.h>
#include <openssl/crypto.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace vigil::drainer {
namespace {

void send_json(httplib::Response& res, int status, const nlohmann::json& j) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& msg,
                const std::string& field = "") {
  nlohmann::json j{{"error", msg}};
  if (!field.empty()) j["field"] = field;
  send_json(res, status, j);
}

}  // namespace

bool token_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

struct HttpServer::Impl {
  Drainer& d;
  DrainerConfig cfg;
  httplib::Server srv;
  std::thread thread;
  int port = -1;

  Impl(Drainer& dr, const DrainerConfig& c) : d(dr), cfg(c) { routes(); }

  // 0 when authorized, else the HTTP status to answer.
  int check_auth(const httplib::Request& req) const {
    if (!cfg.auth_enabled) return 0;
    const std::string h = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (h.size() <= kBearer.size() || h.compare(0, kBearer.size(), kBearer) != 0) return 401;
    return token_equal(h.substr(kBearer.size()), cfg.token) ? 0 : 403;
  }

  void routes() {
    srv.set_payload_max_length(static_cast<size_t>(cfg.max_body_bytes));
    // Small answers (202) must not wait for Nagle + delayed ACK (~40 ms each).
    srv.set_tcp_nodelay(true);
    // Runs before the body is read: unauthenticated or oversized uploads are refused cheaply.
    srv.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
      const bool reports = req.path == "/v1/reports";
      if (int code = check_auth(req)) {
        if (reports) d.metrics().on_ingest("unauthorized");
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(
            res, code,
            code == 401 ? "missing bearer token (Authorization: Bearer <token>)" : "invalid token");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (reports && req.has_header("Content-Length")) {
        const auto len = std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10);
        if (len > static_cast<unsigned long long>(cfg.max_body_bytes)) {
          d.metrics().on_ingest("too_large");
          send_error(res, 413,
                     "body of " + std::to_string(len) + " bytes exceeds max_body_bytes " +
                         std::to_string(cfg.max_body_bytes) + "; send smaller batches");
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });

    srv.Post("/v1/reports", [this](const httplib::Request& req, httplib::Response& res) {
      if (!d.ready()) {
        res.set_header("Retry-After", "5");
        return send_error(res, 503, "not ready (replaying journal); retry");
      }
      if (req.body.size() > static_cast<size_t>(cfg.max_body_bytes)) {
        d.metrics().on_ingest("too_large");
        return send_error(res, 413, "body exceeds max_body_bytes");
      }
      auto parsed = parse_node_reports(req.body);
      if (!parsed) {
        d.metrics().on_ingest("invalid");
        const auto colon = parsed.error.find(": ");
        return send_error(res, 400, parsed.error,
                          colon == std::string::npos ? "" : parsed.error.substr(0, colon));
      }
      auto out = d.ingest(*parsed.value);
      if (!out.ok()) {
        res.set_header("Retry-After", "5");
        return send_error(res, 503, "not stored: " + out.error().to_string());
      }
      send_json(res, 202, {{"accepted", out->accepted}, {"duplicates", out->duplicates}});
    });

    srv.Get("/v1/nodes", [this](const httplib::Request&, httplib::Response& res) {
      nlohmann::json nodes = nlohmann::json::array();
      for (const auto& s : d.nodes()) nodes.push_back(to_json(s));
      send_json(res, 200,
                {{"nodes", nodes},
                 {"breaker", to_json(d.breaker())},
                 {"pending_actions",
                  {{"slurm", d.pending(SinkKind::kSlurm)},
                   {"kubernetes", d.pending(SinkKind::kKubernetes)}}},
                 {"dry_run", cfg.dry_run}});
    });
    srv.Get(R"(/v1/nodes/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      auto s = d.node(req.matches[1]);
      if (!s)
        return send_error(res, 404, "no state for node '" + std::string(req.matches[1]) + "'");
      send_json(res, 200, to_json(*s));
    });
    srv.Post(R"(/v1/nodes/([^/]+)/resume)",
             [this](const httplib::Request& req, httplib::Response& res) {
               auto r = d.resume(req.matches[1]);
               if (!r.ok()) return send_error(res, 409, r.error().to_string());
               send_json(res, 200, {{"result", r.value()}});
             });
    srv.Get("/v1/breaker", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, to_json(d.breaker()));
    });
    srv.Post("/v1/breaker/reset", [this](const httplib::Request&, httplib::Response& res) {
      auto r = d.reset_breaker();
      if (!r.ok()) return send_error(res, 500, r.error().to_string());
      send_json(res, 200, {{"result", "circuit breaker closed"}});
    });
    srv.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    srv.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      if (d.ready()) return res.set_content("ready\n", "text/plain");
      res.status = 503;
      res.set_content("not ready\n", "text/plain");
    });
    srv.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(d.metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }
};

HttpServer::HttpServer(Drainer& drainer, const DrainerConfig& cfg)
    : impl_(std::make_unique<Impl>(drainer, cfg)) {}

HttpServer::~HttpServer() { stop(); }

Result<int> HttpServer::bind() {
  const auto& c = impl_->cfg;
  int port = c.listen_port;
  if (port == 0) {
    port = impl_->srv.bind_to_any_port(c.listen_address);
    if (port < 0) return Error{"cannot bind", "bind(" + c.listen_address + ":0)"};
  } else if (!impl_->srv.bind_to_port(c.listen_address, port)) {
    return Error{"cannot bind (in use? wrong address?)",
                 "bind(" + c.listen_address + ":" + std::to_string(port) + ")"};
  }
  impl_->port = port;
  return port;
}

void HttpServer::start() {
  // The socket is bound and listening already: connections queue until the loop runs.
  impl_->thread = std::thread([this] { impl_->srv.listen_after_bind(); });
  // stop() before the loop runs would be lost (httplib only stops a running server).
  for (int i = 0; i < 5000 && !impl_->srv.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::run() { impl_->srv.listen_after_bind(); }

void HttpServer::shutdown() { impl_->srv.stop(); }

void HttpServer::wait() {
  if (impl_->thread.joinable()) impl_->thread.join();
}

void HttpServer::stop() {
  if (!impl_) return;
  shutdown();
  wait();
}

int HttpServer::port() const { return impl_->port; }

}  // namespace vigil::drainer
