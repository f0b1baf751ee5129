// load_tls_files (drainer/src/tls_files.cpp) on TLS material made at test time: a good pair
// loads, and each bad file is named with its field, so that the start stops before any node
// fails a handshake.
#include "tls_files.h"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"
#include "test_pki.h"

namespace vigil::drainer {
namespace {

using testing::TempDir;
using testing::TestPki;

ListenTls files(const std::string& cert, const std::string& key, const std::string& ca = "") {
  ListenTls t;
  t.cert_file = cert;
  t.key_file = key;
  t.ca_file = ca;
  return t;
}

TEST(TlsFiles, a_matching_pair_and_ca_load) {
  const auto& pki = TestPki::shared();
  ListenTls t = files(pki.path("server.pem"), pki.path("server.key"), pki.path("ca.pem"));
  EXPECT_FALSE(load_tls_files(t).has_value());
  EXPECT_NE(t.cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(t.key_pem.find("PRIVATE KEY"), std::string::npos);
}

TEST(TlsFiles, each_bad_file_is_named_by_its_field) {
  const auto& pki = TestPki::shared();
  TempDir d;
  std::ofstream(d / "junk.pem") << "not a certificate\n";

  ListenTls missing = files(d / "nope.pem", pki.path("server.key"));
  auto p = load_tls_files(missing);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "cert_file");
  EXPECT_TRUE(missing.cert_pem.empty());  // nothing loaded on a problem

  ListenTls junk = files(d / "junk.pem", pki.path("server.key"));
  p = load_tls_files(junk);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "cert_file");
  EXPECT_NE(p->what.find("holds no PEM certificate"), std::string::npos) << p->what;

  ListenTls other_key = files(pki.path("server.pem"), pki.path("ip-only.key"));
  p = load_tls_files(other_key);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "key_file");
  EXPECT_NE(p->what.find("is not the key of the certificate"), std::string::npos) << p->what;

  ListenTls bad_ca = files(pki.path("server.pem"), pki.path("server.key"), d / "junk.pem");
  p = load_tls_files(bad_ca);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->field, "ca_file");
}

}  // namespace
}  // namespace vigil::drainer
