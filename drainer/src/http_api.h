#pragma once
// The drainer's HTTP API as plain functions of a request: which route, which answer. Free of
// any transport so the server (http_server.cpp, libmicrohttpd) stays plumbing, and so the
// fuzzer can drive the path and header checks directly.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http_route.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/drainer.h"
#include "vigil/report/drain_decision.h"

namespace vigil::drainer {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // URL path, percent-decoded, without the query
  std::string authorization;
  std::optional<std::string> content_length;  // header value as sent
  std::string body;
  bool want_decision = false;  // kDecisionHeader: 1 (POST /v1/reports: answer with verdicts)
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class MungeAuth;

class HttpApi {
 public:
  // With auth.mode munge and no `munge` given, the real one is made (libmunge, Slurm's node
  // table through the drainer's Slurm client); tests pass one with a fake decoder.
  HttpApi(Drainer& d, const DrainerConfig& cfg, std::shared_ptr<MungeAuth> munge = nullptr);

  // Runs once the headers are in, before the body is read: unknown routes, missing or wrong
  // credentials and oversized bodies are answered here, so no body is read for them.
  std::optional<HttpReply> before_body(const HttpRequest& req) const;
  // The answer to a whole request (headers and body). May block (journal fsync).
  HttpReply handle(const HttpRequest& req) const;

  // 503 for a request that found every worker busy and the queue full.
  static HttpReply busy();
  // 413 for a body that grew past max_body_bytes while it was read.
  HttpReply too_large(uint64_t bytes) const;

 private:
  // Under auth mode munge: the refusal of a /v1 request other than a report, or nullopt.
  std::optional<HttpReply> munge_refusal(const HttpRequest& req, const Route& route) const;
  HttpReply post_reports(const HttpRequest& req) const;

  Drainer& d_;
  const DrainerConfig& cfg_;
  std::shared_ptr<MungeAuth> munge_;
};

}  // namespace vigil::drainer
