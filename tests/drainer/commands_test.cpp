// Operator commands against a service that serves HTTPS: `vigil-drainer status` finds the
// service holding the state dir and asks it over TLS, verified with listen.tls.ca_file; with a
// CA that did not sign the service's certificate it refuses to talk and says so.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "background_process.h"
#include "run_command.h"
#include "temp_dir.h"
#include "test_pki.h"

namespace {

using vigil::testing::BackgroundProcess;
using vigil::testing::run_command;
using vigil::testing::TempDir;
using vigil::testing::TestPki;
using namespace std::chrono_literals;

std::string config(const TempDir& d, const std::string& ca) {
  const auto& pki = TestPki::shared();
  return "listen:\n  address: 127.0.0.1\n  port: 0\n  tls:\n    cert_file: " +
         pki.path("server.pem") + "\n    key_file: " + pki.path("server.key") +
         "\n    ca_file: " + pki.path(ca) + "\nauth:\n  token_file: " + (d / "token") +
         "\nstate_dir: " + (d / "state") + "\nslurm: {enabled: false}\n";
}

TEST(CommandsTls, status_asks_the_running_service_over_verified_https) {
  TempDir d;
  std::ofstream(d / "token") << "commands-tls-token-0123456789\n";
  std::ofstream(d / "drainer.yaml") << config(d, "ca.pem");
  BackgroundProcess serve({VIGIL_DRAINER_BINARY, "serve", "--config", d / "drainer.yaml"},
                          d / "serve.log");
  const auto listening = serve.wait_for_log("listening on 127.0.0.1:", 30s);
  ASSERT_TRUE(listening) << serve.log();
  EXPECT_NE(listening->find("(https,"), std::string::npos) << *listening;
  ASSERT_TRUE(serve.wait_for_log("vigil-drainer: ready", 30s)) << serve.log();
  // port 0 in the file: the commands need the port the service got.
  const std::string port = listening->substr(0, listening->find(' '));
  auto with_port = [&](const std::string& ca) {
    std::string text = config(d, ca);
    text.replace(text.find("port: 0"), 7, "port: " + port);
    std::ofstream(d / "ops.yaml") << text;
    return run_command({VIGIL_DRAINER_BINARY, "status", "--json", "--config", d / "ops.yaml"});
  };
  const auto ok = with_port("ca.pem");
  ASSERT_EQ(ok.exit_code, 0) << ok.describe();
  EXPECT_TRUE(nlohmann::json::parse(ok.out).contains("nodes")) << ok.out;
  const auto refused = with_port("other-ca.pem");
  EXPECT_EQ(refused.exit_code, 1) << refused.describe();
  EXPECT_NE(refused.err.find("SSLServerVerification"), std::string::npos) << refused.describe();
}

}  // namespace
