#include "k8s_test_support.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace vigil::testing {
namespace {

namespace fs = std::filesystem;

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

KeyPtr new_key() {
  KeyPtr key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  return key;
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "X509V3_EXT_nconf_nid");
  check(X509_add_ext(cert, ext, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(ext);
}

// issuer == nullptr: self-signed (subject key signs).
CertPtr make_cert(const std::string& cn, EVP_PKEY* subject_key, X509* issuer, EVP_PKEY* issuer_key,
                  long serial, bool is_ca) {
  CertPtr cert(X509_new());
  check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  check(X509_set_pubkey(cert.get(), subject_key) == 1, "X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  check(X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) == 1, "set_issuer");
  if (is_ca) {
    add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    add_ext(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    add_ext(cert.get(), signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    add_ext(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  }
  check(X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : subject_key, EVP_sha256()) > 0,
        "X509_sign");
  return cert;
}

std::string cert_pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string key_pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

}  // namespace

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "vigil-k8s-test-XXXXXX").string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  const std::string full = (fs::path(path_) / name).string();
  fs::create_directories(fs::path(full).parent_path());
  std::ofstream out(full, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + full);
  return full;
}

TestPki make_test_pki(const std::string& dir, const std::string& ca_name) {
  KeyPtr ca_key = new_key();
  CertPtr ca = make_cert(ca_name, ca_key.get(), nullptr, nullptr, 1, true);
  KeyPtr server_key = new_key();
  CertPtr server =
      make_cert("fake-kube-apiserver", server_key.get(), ca.get(), ca_key.get(), 2, false);
  TestPki pki;
  pki.ca_pem = cert_pem(ca.get());
  const auto write = [&](const std::string& name, const std::string& content) {
    const std::string path = (fs::path(dir) / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    check(static_cast<bool>(out), "writing a PEM file");
    return path;
  };
  pki.ca_cert_path = write(ca_name + "-ca.crt", pki.ca_pem);
  pki.server_cert_path = write(ca_name + "-server.crt", cert_pem(server.get()));
  pki.server_key_path = write(ca_name + "-server.key", key_pem(server_key.get()));
  return pki;
}

std::string base64_encode(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace vigil::testing
