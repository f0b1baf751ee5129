#pragma once
// HTTP API of `vigil-drainer serve` (libmicrohttpd, event-driven; limits in
// DrainerConfig::limits). docs/drainer.md "API" and "Ingest under attack".
//   POST /v1/reports            one NodeReport or an array; 202 once durable
//   GET  /v1/nodes, /v1/nodes/{name}
//   POST /v1/nodes/{name}/resume, POST /v1/breaker/reset   (operator commands)
//   GET  /healthz, /readyz, /metrics                         (no auth)
// /v1/* needs `Authorization: Bearer <token>` unless auth is disabled.
#include <memory>

#include "vigil/base/result.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {

class HttpServer {
 public:
  HttpServer(Drainer& drainer, const DrainerConfig& cfg);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds listen_address:listen_port (port 0: any free port). Returns the bound port.
  Result<int> bind();
  // Serves from background threads until stop().
  VoidResult start();
  // Asks the server to end (safe from any thread, e.g. a signal thread); no join.
  void shutdown();
  // Blocks until shutdown() or stop(), then stops: requests already queued are answered.
  void wait();
  void stop();  // stops now (queued requests are still answered); idempotent
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Constant-time token comparison (OpenSSL CRYPTO_memcmp).
bool token_equal(const std::string& a, const std::string& b);

}  // namespace vigil::drainer
