#pragma once
// The one way Vigil sets up a cpp-httplib client, and says why a request failed: the report
// client (libs/report), the slurmrestd session (libs/slurm), the webhook sink and the
// vigil-drainer commands' service client (drainer). Header-only: vigil::base itself links no
// cpp-httplib; its includers do. The Kubernetes client keeps its own SSLClient (it needs
// insecure-skip-verify and a base path from the kubeconfig) but says TLS failures through the
// same tls_verify_failure (httplib_tls.h).
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "vigil/base/httplib_tls.h"

namespace vigil {

struct HttpClientSettings {
  std::string base_url;  // scheme://host[:port]
  // https: the server's certificate is always verified, against this CA file when set, else
  // against the system's CAs. There is no switch to turn verification off.
  std::string ca_file;
  int64_t timeout_ms = 5000;  // connect, read and write, each (at least 1)
  bool keep_alive = false;
};

inline std::unique_ptr<httplib::Client> make_http_client(const HttpClientSettings& s) {
  auto c = std::make_unique<httplib::Client>(s.base_url);
  c->enable_server_certificate_verification(true);  // cpp-httplib's default, pinned here
  if (!s.ca_file.empty()) c->set_ca_cert_path(s.ca_file);
  const std::chrono::milliseconds t(std::max<int64_t>(1, s.timeout_ms));
  c->set_connection_timeout(t);
  c->set_read_timeout(t);
  c->set_write_timeout(t);
  c->set_keep_alive(s.keep_alive);
  return c;
}

// Why a request to `peer` ("the drainer", "the webhook receiver") failed, in words an operator
// can act on: a certificate that names another host or that `ca_file` (or the system's CAs)
// does not trust, a CA file that does not load, a failed handshake, else cpp-httplib's words.
inline std::string http_failure_text(const httplib::Client& c, httplib::Error e,
                                     const std::string& peer, const std::string& ca_file) {
  const std::string ca = ca_file.empty() ? "the system's CAs" : "the CA in '" + ca_file + "'";
  if (auto f = tls_verify_failure(c, e)) {
    if (f->wrong_name) return "TLS: " + peer + "'s certificate does not name the host in the URL";
    return "TLS: " + peer + "'s certificate is not trusted by " + ca + " (" + f->why + ")";
  }
  if (e == httplib::Error::SSLLoadingCerts) return "TLS: cannot load " + ca;
  if (e == httplib::Error::SSLConnection)
    return "TLS handshake with " + peer + " failed (does it serve https on this port?)";
  return "connection: " + httplib::to_string(e);
}

}  // namespace vigil
