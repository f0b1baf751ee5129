// Reads and checks the listener's PEM files; see tls_files.h.
#include "tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

namespace vigil::drainer {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

std::optional<std::string> slurp(const std::string& path, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot read '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

BioPtr bio_of(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Never ask for a passphrase on a terminal: an encrypted key is refused.
int no_passphrase(char*, int, int, void*) { return -1; }

// The certificates in a PEM text, in order; empty when there is none.
std::vector<X509Ptr> read_certs(const std::string& pem) {
  std::vector<X509Ptr> out;
  BioPtr bio = bio_of(pem);
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr))
    out.emplace_back(x);
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

}  // namespace

std::optional<TlsFileProblem> load_tls_files(ListenTls& tls) {
  std::string why;
  auto cert = slurp(tls.cert_file, why);
  if (!cert) return TlsFileProblem{"cert_file", why};
  auto certs = read_certs(*cert);
  if (certs.empty())
    return TlsFileProblem{"cert_file", "'" + tls.cert_file + "' holds no PEM certificate"};
  X509* leaf = certs.front().get();
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0)
    return TlsFileProblem{"cert_file", "the certificate in '" + tls.cert_file + "' has expired"};
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0)
    return TlsFileProblem{"cert_file",
                          "the certificate in '" + tls.cert_file + "' is not valid yet"};

  auto key = slurp(tls.key_file, why);
  if (!key) return TlsFileProblem{"key_file", why};
  BioPtr bio = bio_of(*key);
  KeyPtr pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  ERR_clear_error();
  if (!pkey)
    return TlsFileProblem{"key_file", "'" + tls.key_file +
                                          "' holds no PEM private key (or it is encrypted: "
                                          "give the key without a passphrase)"};
  if (X509_check_private_key(leaf, pkey.get()) != 1) {
    ERR_clear_error();
    return TlsFileProblem{
        "key_file",
        "'" + tls.key_file + "' is not the key of the certificate in '" + tls.cert_file + "'"};
  }
  if (!tls.ca_file.empty()) {
    auto ca = slurp(tls.ca_file, why);
    if (!ca) return TlsFileProblem{"ca_file", why};
    if (read_certs(*ca).empty())
      return TlsFileProblem{"ca_file", "'" + tls.ca_file + "' holds no PEM certificate"};
  }
  tls.cert_pem = std::move(*cert);
  tls.key_pem = std::move(*key);
  return std::nullopt;
}

}  // namespace vigil::drainer
