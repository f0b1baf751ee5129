// The HTTP API's routes and answers; see http_api.h.
#include "http_api.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "vigil/drainer/calibrate.h"
#include "vigil/drainer/http_server.h"
#include "vigil/drainer/munge_auth.h"

namespace vigil::drainer {
namespace {

HttpReply json_reply(int status, const nlohmann::json& j) {
  HttpReply r;
  r.status = status;
  r.body = j.dump();
  return r;
}

HttpReply error_reply(int status, const std::string& msg, const std::string& field = "") {
  nlohmann::json j{{"error", msg}};
  if (!field.empty()) j["field"] = field;
  return json_reply(status, j);
}

HttpReply text_reply(int status, std::string body, std::string type = "text/plain") {
  HttpReply r;
  r.status = status;
  r.content_type = std::move(type);
  r.body = std::move(body);
  return r;
}

HttpReply refusal_reply(const AuthRefusal& r) {
  auto reply = error_reply(r.status, r.message);
  if (r.status == 401) reply.headers.emplace_back("WWW-Authenticate", "Munge");
  if (r.status == 503) reply.headers.emplace_back("Retry-After", "5");
  return reply;
}

}  // namespace

HttpApi::HttpApi(Drainer& d, const DrainerConfig& cfg, std::shared_ptr<MungeAuth> munge)
    : d_(d), cfg_(cfg), munge_(std::move(munge)) {
  // Every refusal reason reads 0 from the start (also in token mode, where none occurs).
  d_.metrics().declare_rejected(munge_refusal_reasons());
  if (cfg_.auth_enabled && cfg_.munge.enabled && !munge_)
    munge_ = make_munge_auth(cfg_, d_.slurm_api(), d_.clock());
}

std::optional<HttpReply> HttpApi::munge_refusal(const HttpRequest& req, const Route& route) const {
  const bool admin = route.kind == Route::kResume || route.kind == Route::kBreakerReset;
  if (!cfg_.admin_token.empty() && token_equal(req.authorization, "Bearer " + cfg_.admin_token))
    return std::nullopt;
  if (auto r = munge_->verify_request(req.authorization, req.method, req.path, req.body, admin))
    return refusal_reply(*r);
  return std::nullopt;
}

HttpReply HttpApi::busy() {
  auto r = error_reply(503, "ingest busy (every worker busy, queue full); retry");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

HttpReply HttpApi::too_large(uint64_t bytes) const {
  d_.metrics().on_ingest("too_large");
  return error_reply(413, "body of " + std::to_string(bytes) + " bytes exceeds max_body_bytes " +
                              std::to_string(cfg_.max_body_bytes) + "; send smaller batches");
}

std::optional<HttpReply> HttpApi::before_body(const HttpRequest& req) const {
  const bool v1 = req.path.rfind("/v1/", 0) == 0;
  const bool reports = req.path == "/v1/reports";
  if (v1 && cfg_.auth_enabled && cfg_.munge.enabled) {
    // The credential itself is decoded by a worker (handle): munged is a socket round trip.
    const std::string scheme = std::string(munge::kAuthScheme) + " ";
    const bool cred = req.authorization.compare(0, scheme.size(), scheme) == 0;
    const bool admin =
        !cfg_.admin_token.empty() && token_equal(req.authorization, "Bearer " + cfg_.admin_token);
    if (!cred && !(admin && !reports)) {
      if (reports) {
        d_.metrics().on_ingest("unauthorized");
        d_.metrics().on_rejected("missing_credential");
      }
      return refusal_reply({401, "missing_credential",
                            "missing MUNGE credential (Authorization: Munge <credential>); this "
                            "drainer runs auth mode munge (docs/security.md)"});
    }
  } else if (v1 && cfg_.auth_enabled) {
    constexpr std::string_view kBearer = "Bearer ";
    const std::string& h = req.authorization;
    int code = 0;
    const bool bearer = h.size() > kBearer.size() && h.compare(0, kBearer.size(), kBearer) == 0;
    const std::string given = bearer ? h.substr(kBearer.size()) : "";
    const bool admin = !cfg_.admin_token.empty() && bearer && token_equal(given, cfg_.admin_token);
    if (!bearer)
      code = 401;
    else if (!admin && !token_equal(given, cfg_.token))
      code = 403;
    if (code) {
      if (reports) d_.metrics().on_ingest("unauthorized");
      auto r =
          error_reply(code, code == 401 ? "missing bearer token (Authorization: Bearer <token>)"
                                        : "invalid token");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return r;
    }
  }
  int none = 404;
  auto route = match_route(req.method, req.path, &none);
  if (route && cfg_.auth_enabled && !cfg_.munge.enabled && !cfg_.admin_token.empty() &&
      (route->kind == Route::kResume || route->kind == Route::kBreakerReset) &&
      !token_equal(req.authorization, "Bearer " + cfg_.admin_token))
    return error_reply(403, "operator endpoint: needs the admin token (auth.admin_token_file)");
  if (!route)
    return error_reply(none, none == 405 ? "method " + req.method + " not allowed on " + req.path
                                         : "no such endpoint " + req.path);
  if (!route->node.empty())
    if (auto why = node_name_problem(route->node)) return error_reply(400, *why);
  if (reports && req.content_length) {
    uint64_t len = 0;
    const auto& s = *req.content_length;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), len);
    if (ec != std::errc() || end != s.data() + s.size())
      return error_reply(400, "Content-Length '" + s.substr(0, 32) + "' is not a number");
    if (len > static_cast<uint64_t>(cfg_.max_body_bytes)) return too_large(len);
  }
  return std::nullopt;
}

// POST /v1/reports: parse strictly, verify MUNGE credentials, journal (durable before the 202);
// a Slurm hook also gets the drainer's verdict on each report.
HttpReply HttpApi::post_reports(const HttpRequest& req) const {
  if (!d_.ready()) {
    auto r = error_reply(503, "not ready (replaying journal); retry");
    r.headers.emplace_back("Retry-After", "5");
    return r;
  }
  if (req.body.size() > static_cast<size_t>(cfg_.max_body_bytes)) return too_large(req.body.size());
  std::vector<nlohmann::json> received;  // each report's JSON, journaled as it came
  auto parsed = parse_node_reports(req.body, &received);
  if (!parsed) {
    d_.metrics().on_ingest("invalid");
    const auto colon = parsed.error.find(": ");
    return error_reply(400, parsed.error,
                       colon == std::string::npos ? "" : parsed.error.substr(0, colon));
  }
  if (munge_) {
    if (auto r = munge_->verify_reports(req.authorization, req.path, req.body, *parsed.value)) {
      d_.metrics().on_ingest("unauthorized");
      d_.metrics().on_rejected(r->reason);
      return refusal_reply(*r);
    }
  }
  auto out = d_.ingest(*parsed.value, &received);
  if (!out.ok()) {
    auto r = error_reply(503, "not stored: " + out.error().to_string());
    r.headers.emplace_back("Retry-After", "5");
    return r;
  }
  ReportReply reply;
  reply.accepted = out->accepted;
  reply.duplicates = out->duplicates;
  if (req.want_decision) {  // a Slurm hook: it obeys the verdict (docs/hooks.md)
    reply.decisions = d_.decide_now(*parsed.value);
    reply.policy = d_.shared_policy();
  }
  return json_reply(202, to_json(reply));
}

HttpReply HttpApi::handle(const HttpRequest& req) const {
  if (auto early = before_body(req)) return *early;
  int none = 404;
  const Route route = *match_route(req.method, req.path, &none);
  const bool v1 = req.path.rfind("/v1/", 0) == 0;
  if (munge_ && v1 && route.kind != Route::kReports)
    if (auto refused = munge_refusal(req, route)) return *refused;
  switch (route.kind) {
    case Route::kReports:
      return post_reports(req);
    case Route::kNodes:
      return json_reply(200, d_.nodes_view());
    case Route::kNode: {
      auto s = d_.node(route.node);
      if (!s) return error_reply(404, "no state for node '" + route.node + "'");
      return json_reply(200, to_json(*s));
    }
    case Route::kResume: {
      auto r = d_.resume(route.node);
      if (!r.ok()) return error_reply(409, r.error().to_string());
      return json_reply(200, {{"result", r.value()}});
    }
    case Route::kBreaker:
      return json_reply(200, to_json(d_.breaker()));
    case Route::kBreakerReset: {
      auto r = d_.reset_breaker();
      if (!r.ok()) return error_reply(500, r.error().to_string());
      return json_reply(200, {{"result", "circuit breaker closed"}});
    }
    case Route::kHealthz:
      return text_reply(200, "ok\n");
    case Route::kReadyz:
      return d_.ready() ? text_reply(200, "ready\n") : text_reply(503, "not ready\n");
    case Route::kMetrics:
      return text_reply(200, d_.metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
    case Route::kClasses: {
      nlohmann::json classes = nlohmann::json::array();
      for (const auto& c : d_.hardware_classes()) {
        nlohmann::json one = {{"class", c.name},
                              {"nodes", c.nodes},
                              {"consensus", c.consensus},
                              {"versions", c.versions}};
        if (!c.declared.figures.empty() || !c.declared.versions.empty()) {
          nlohmann::json declared = c.declared.figures;
          for (const auto& [figure, version] : c.declared.versions) declared[figure] = version;
          one["declared"] = std::move(declared);
        }
        classes.push_back(std::move(one));
      }
      return json_reply(200, {{"classes", classes}});
    }
    case Route::kRechecks: {
      nlohmann::json due = nlohmann::json::array();
      for (const auto& r : d_.rechecks_due()) {
        nlohmann::json e = {{"node", r.node}, {"why", r.why}};
        if (!r.suite.empty()) e["suite"] = r.suite;
        due.push_back(std::move(e));
      }
      return json_reply(200, {{"rechecks", due}});
    }
    case Route::kCalibration: {
      nlohmann::json figures = nlohmann::json::array();
      for (const auto& f : d_.healthy_figures(route.node)) figures.push_back(to_json(f));
      return json_reply(200, {{"sku", route.node}, {"figures", figures}});
    }
  }
  return error_reply(500, "unrouted request");
}

}  // namespace vigil::drainer
