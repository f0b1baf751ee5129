#pragma once
// Test helpers for the Kubernetes sink: a self-cleaning temp dir and a throwaway PKI (a CA plus a
// server certificate for 127.0.0.1 / localhost) generated with the OpenSSL API at test time.
#include <string>

namespace vigil::testing {

// mkdtemp under the system temp dir; removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `content` to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

struct TestPki {
  std::string ca_cert_path;      // PEM, self-signed CA
  std::string ca_pem;            // the same, in memory
  std::string server_cert_path;  // PEM, signed by the CA, SAN IP:127.0.0.1 + DNS:localhost
  std::string server_key_path;   // PEM, unencrypted EC P-256 key
};

// Generates a fresh CA (named ca_name) and server certificate into dir. Throws on failure.
TestPki make_test_pki(const std::string& dir, const std::string& ca_name);

std::string base64_encode(const std::string& data);

}  // namespace vigil::testing
