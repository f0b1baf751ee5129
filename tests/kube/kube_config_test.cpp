// Loading kube::KubeConfig in-cluster (service-account dir + env) and from kubeconfig files,
// including the errors for missing, bad and unsupported fields; and a kubeconfig end to end against
// the fake.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "fake_kube_api_server.h"
#include "k8s_test_support.h"
#include "scoped_env.h"
#include "vigil/kube/kube_api.h"

namespace vigil::drainer {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::TestPki;
using vigil::testing::ScopedEnv;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class KubeConfigTest : public ::testing::Test {
 protected:
  std::string kubeconfig(const std::string& cluster, const std::string& user,
                         const std::string& current_context = "ctx") {
    return dir.write("kubeconfig",
                     "apiVersion: v1\nkind: Config\ncurrent-context: " + current_context +
                         "\ncontexts:\n- name: ctx\n  context:\n    cluster: c1\n"
                         "    user: u1\n    namespace: slurm\n"
                         "clusters:\n- name: c1\n  cluster:\n" +
                         cluster + "users:\n- name: u1\n  user:\n" + user);
  }

  TempDir dir;
  TestPki pki = testing::make_test_pki(dir.path(), "cfg");
};

TEST_F(KubeConfigTest, in_cluster_reads_env_token_and_ca) {
  dir.write("sa/token", "sa-token-123\n");
  dir.write("sa/ca.crt", pki.ca_pem);
  dir.write("sa/namespace", "vigil");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  auto cfg = kube::kube_config_in_cluster(dir.path() + "/sa");
  ASSERT_TRUE(cfg.ok()) << cfg.error().to_string();
  EXPECT_EQ(cfg->server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg->token, "sa-token-123");
  EXPECT_EQ(cfg->ca_file, dir.path() + "/sa/ca.crt");
  EXPECT_FALSE(cfg->insecure_skip_verify);

  ScopedEnv v6("KUBERNETES_SERVICE_HOST", "fd00::1");
  auto cfg6 = kube::kube_config_in_cluster(dir.path() + "/sa");
  ASSERT_TRUE(cfg6.ok()) << cfg6.error().to_string();
  EXPECT_EQ(cfg6->server, "https://[fd00::1]:443");
}

TEST_F(KubeConfigTest, in_cluster_errors_name_what_is_missing) {
  dir.write("sa/token", "sa-token-123\n");
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    auto cfg = kube::kube_config_in_cluster(dir.path() + "/sa");
    ASSERT_FALSE(cfg.ok());
    EXPECT_THAT(cfg.error().message, HasSubstr("KUBERNETES_SERVICE_HOST is not set"));
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  {
    ScopedEnv port("KUBERNETES_SERVICE_PORT", std::nullopt);
    auto cfg = kube::kube_config_in_cluster(dir.path() + "/sa");
    ASSERT_FALSE(cfg.ok());
    EXPECT_THAT(cfg.error().message, HasSubstr("KUBERNETES_SERVICE_PORT is not set"));
  }
  {
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "https");
    auto cfg = kube::kube_config_in_cluster(dir.path() + "/sa");
    ASSERT_FALSE(cfg.ok());
    EXPECT_THAT(cfg.error().message, HasSubstr("is not a TCP port"));
  }
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  auto no_ca = kube::kube_config_in_cluster(dir.path() + "/sa");
  ASSERT_FALSE(no_ca.ok());
  EXPECT_THAT(no_ca.error().message, HasSubstr(dir.path() + "/sa/ca.crt"));

  auto no_token = kube::kube_config_in_cluster(dir.path() + "/nowhere");
  ASSERT_FALSE(no_token.ok());
  EXPECT_THAT(no_token.error().message,
              HasSubstr("cannot read service-account token " + dir.path() + "/nowhere/token"));

  dir.write("sa/ca.crt", "not a certificate\n");
  auto bad_ca = kube::kube_config_in_cluster(dir.path() + "/sa");
  ASSERT_FALSE(bad_ca.ok());
  EXPECT_THAT(bad_ca.error().message, HasSubstr("holds no PEM certificate"));
}

TEST_F(KubeConfigTest, kubeconfig_with_token_and_ca_data) {
  const std::string path =
      kubeconfig("    server: https://10.0.0.1:6443\n    certificate-authority-data: " +
                     testing::base64_encode(pki.ca_pem) + "\n",
                 "    token: abc.def\n");
  auto cfg = kube::kube_config_from_file(path);
  ASSERT_TRUE(cfg.ok()) << cfg.error().to_string();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:6443");
  EXPECT_EQ(cfg->token, "abc.def");
  EXPECT_FALSE(cfg->insecure_skip_verify);
  ASSERT_FALSE(cfg->ca_file.empty());
  EXPECT_EQ(slurp(cfg->ca_file), pki.ca_pem);  // decoded, readable, and not left on disk
  EXPECT_EQ(cfg->ca_file.rfind("/proc/self/fd/", 0), 0u);
}

TEST_F(KubeConfigTest, a_cluster_that_is_not_a_mapping_is_an_error_not_a_crash) {
  // tests/fuzz/regressions/fuzz_kubeconfig/cluster-is-a-scalar, reduced.
  const std::string path = kubeconfig("    https://10.0.0.1:6443\n", "    token: t\n");
  auto cfg = kube::kube_config_from_file(path);
  EXPECT_FALSE(cfg.ok());
}

TEST_F(KubeConfigTest, a_user_that_is_not_a_mapping_is_an_error_not_a_crash) {
  // tests/fuzz/regressions/fuzz_kubeconfig/user-is-a-scalar, reduced: "toka:enb" (no space
  // after the colon) makes the user a string, not a map.
  const std::string path = kubeconfig("    server: https://10.0.0.1:6443\n", "    toka:enb c\n");
  auto cfg = kube::kube_config_from_file(path);
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().to_string().find("users[u1].user must be a map"), std::string::npos)
      << cfg.error().to_string();
}

TEST_F(KubeConfigTest, kubeconfig_relative_paths_are_relative_to_the_file) {
  dir.write("certs/ca.pem", pki.ca_pem);
  dir.write("secrets/token", "file-token\n");
  const std::string path =
      kubeconfig("    server: https://api.example:6443\n    certificate-authority: certs/ca.pem\n",
                 "    tokenFile: secrets/token\n");
  auto cfg = kube::kube_config_from_file(path);
  ASSERT_TRUE(cfg.ok()) << cfg.error().to_string();
  EXPECT_EQ(cfg->ca_file, dir.path() + "/certs/ca.pem");
  EXPECT_EQ(cfg->token, "file-token");
}

TEST_F(KubeConfigTest, kubeconfig_insecure_skip_tls_verify) {
  const std::string path =
      kubeconfig("    server: https://api.example:6443\n    insecure-skip-tls-verify: true\n",
                 "    token: t\n");
  auto cfg = kube::kube_config_from_file(path);
  ASSERT_TRUE(cfg.ok()) << cfg.error().to_string();
  EXPECT_TRUE(cfg->insecure_skip_verify);
  EXPECT_TRUE(cfg->ca_file.empty());
}

TEST_F(KubeConfigTest, kubeconfig_errors_name_the_field) {
  const std::string server = "    server: https://api.example:6443\n";
  struct Case {
    std::string cluster, user, context, expected;
  };
  const Case cases[] = {
      {server, "    token: t\n", "", "current-context is not set"},
      {server, "    token: t\n", "other", "current-context \"other\" is not listed in contexts"},
      {"    insecure-skip-tls-verify: true\n", "    token: t\n", "ctx",
       "clusters[c1].cluster.server is not set"},
      {"    server: api.example:6443\n", "    token: t\n", "ctx", "must start with https://"},
      {server + "    certificate-authority-data: '***'\n", "    token: t\n", "ctx",
       "certificate-authority-data is not valid base64"},
      {server + "    certificate-authority-data: " + testing::base64_encode("hello") + "\n",
       "    token: t\n", "ctx", "does not hold a PEM certificate"},
      {server + "    certificate-authority: missing.pem\n", "    token: t\n", "ctx",
       "cannot read clusters[c1].cluster.certificate-authority"},
      {server, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n",
       "ctx", "users[u1].user.exec: exec credential plugins (command \"aws\") are not supported"},
      {server, "    client-certificate-data: AAAA\n    client-key-data: AAAA\n", "ctx",
       "client-certificate authentication is not supported"},
      {server, "    username: admin\n    password: secret\n", "ctx", "basic auth"},
      {server, "    tokenFile: nope/token\n", "ctx", "cannot read users[u1].user.tokenFile"},
      {server, "    {}\n", "ctx", "users[u1].user has neither token nor tokenFile"},
  };
  for (const Case& c : cases) {
    const std::string path = kubeconfig(c.cluster, c.user, c.context);
    auto cfg = kube::kube_config_from_file(path);
    ASSERT_FALSE(cfg.ok()) << "expected an error containing: " << c.expected;
    EXPECT_THAT(cfg.error().message, HasSubstr(c.expected));
    EXPECT_EQ(cfg.error().where, "kubeconfig " + path);
  }
}

TEST_F(KubeConfigTest, kubeconfig_bad_yaml_and_missing_file) {
  const std::string path = dir.write("broken", "current-context: [unclosed\nclusters: x\n");
  auto bad = kube::kube_config_from_file(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("invalid YAML at line"));

  auto missing = kube::kube_config_from_file(dir.path() + "/absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().where, HasSubstr(dir.path() + "/absent"));
  EXPECT_THAT(missing.error().message, HasSubstr("cannot read"));
}

TEST_F(KubeConfigTest, kubeconfig_drives_the_client_end_to_end) {
  testing::FakeKubeApiServer server(pki, "kubeconfig-token");
  server.put_node("gpu-1");
  const std::string path = kubeconfig(
      "    server: " + server.url() +
          "\n    certificate-authority-data: " + testing::base64_encode(pki.ca_pem) + "\n",
      "    token: kubeconfig-token\n");
  auto cfg = kube::kube_config_from_file(path);
  ASSERT_TRUE(cfg.ok()) << cfg.error().to_string();
  auto api = kube::make_kube_api(cfg.value());
  auto r = api->annotate_node("gpu-1", {{"vigil.io/state", "healthy"}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(server.node("gpu-1")["metadata"]["annotations"]["vigil.io/state"], "healthy");
}

}  // namespace
}  // namespace vigil::drainer
