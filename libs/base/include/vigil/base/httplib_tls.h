#pragma once
// Why a cpp-httplib request failed to verify the server's TLS certificate, across the releases
// Debian ships: 0.11 (bookworm), 0.18 (trixie), 0.41 (forky). Header-only and templated on
// cpp-httplib's types, so vigil::base itself needs no cpp-httplib; include <httplib.h> first.
// - A certificate that does not name the host: 0.11 reports SSLServerVerification with the X.509
//   result X509_V_OK; later releases have their own SSLServerHostnameVerification.
// - The X.509 result: the client's get_openssl_verify_result() up to 0.38; 0.39 renamed it
//   get_verify_result() and marked it deprecated, and a later release removes it. Where neither
//   exists, the reason is left general rather than read from Result::ssl_backend_error(), which
//   holds an OpenSSL error code on some paths and the X.509 result on others.
#include <openssl/x509.h>

#include <optional>
#include <string>

namespace vigil {

struct TlsVerifyFailure {
  bool wrong_name = false;  // the chain is trusted but the certificate names another host
  std::string why;          // X509_verify_cert_error_string, or a general reason
};

// The failure when `e` is a certificate verification error of `client`'s last request.
template <class Client, class ErrorT>
std::optional<TlsVerifyFailure> tls_verify_failure(const Client& client, ErrorT e) {
  if constexpr (requires { ErrorT::SSLServerHostnameVerification; }) {
    if (e == ErrorT::SSLServerHostnameVerification)
      return TlsVerifyFailure{true, "the certificate does not name this host"};
  }
  if (e != ErrorT::SSLServerVerification) return std::nullopt;
  std::optional<long> result;
  if constexpr (requires { client.get_openssl_verify_result(); }) {
    result = client.get_openssl_verify_result();
  } else if constexpr (requires { client.get_verify_result(); }) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    result = client.get_verify_result();
#pragma GCC diagnostic pop
  }
  if (!result) return TlsVerifyFailure{false, "certificate verification failed"};
  if (*result == X509_V_OK)
    return TlsVerifyFailure{true, "the certificate does not name this host"};
  return TlsVerifyFailure{false, X509_verify_cert_error_string(*result)};
}

}  // namespace vigil
