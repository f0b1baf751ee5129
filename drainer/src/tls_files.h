#pragma once
// The listener's TLS files (`listen.tls`): read and checked with OpenSSL when the config is
// validated, so that a missing, unreadable, expired or mismatched file stops the start with the
// field named, instead of a TLS handshake failing on every node later.
#include <optional>
#include <string>

#include "vigil/drainer/config.h"

namespace vigil::drainer {

struct TlsFileProblem {
  std::string field;  // "cert_file", "key_file" or "ca_file"
  std::string what;
};

// Fills cert_pem and key_pem from the files named in `tls`; the first problem found, if any.
std::optional<TlsFileProblem> load_tls_files(ListenTls& tls);

}  // namespace vigil::drainer
