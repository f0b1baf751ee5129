#pragma once
// Throwaway TLS material for tests, made at test time with the openssl CLI in a TempDir (no
// private key is ever committed): a CA named "ca" that signs "server" (IP 127.0.0.1 and
// localhost) and "ip-only" (IP 127.0.0.1 only), and a CA "other-ca" that signs nothing served.
// Files: <dir>/<name>.pem and <dir>/<name>.key. P-256 keys: generated in milliseconds.
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_command.h"
#include "temp_dir.h"

namespace vigil::testing {

class TestPki {
 public:
  TestPki() {
    make_ca("ca");
    make_ca("other-ca");
    make_server_cert("ca", "server", "IP:127.0.0.1,DNS:localhost");
    make_server_cert("ca", "ip-only", "IP:127.0.0.1");
  }
  std::string path(const std::string& file) const { return dir_ / file; }

  // One set per test binary, removed at exit.
  static const TestPki& shared() {
    static const TestPki pki;
    return pki;
  }

 private:
  static void openssl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_command(argv);
    if (r.exit_code != 0) throw std::runtime_error("openssl failed: " + r.describe());
  }
  void make_ca(const std::string& name) {
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", path(name + ".key"), "-out", path(name + ".pem"), "-days", "2", "-subj",
             "/CN=vigil test " + name, "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
             "keyUsage=critical,keyCertSign"});
  }
  void make_server_cert(const std::string& ca, const std::string& name, const std::string& san) {
    std::ofstream(path(name + ".ext"))
        << "subjectAltName=" << san << "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             path(name + ".key"), "-out", path(name + ".csr"), "-subj", "/CN=vigil-drainer"});
    openssl({"x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey",
             path(ca + ".key"), "-CAcreateserial", "-out", path(name + ".pem"), "-days", "2",
             "-extfile", path(name + ".ext")});
  }

  TempDir dir_;
};

}  // namespace vigil::testing
