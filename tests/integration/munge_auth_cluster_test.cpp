// auth mode munge end to end, everything real: a local Slurm cluster whose nodes have their own
// addresses (gpu-i: NodeAddr 127.0.1.(i+1)) and their own munged (origin 127.0.1.(i+1), the
// cluster's key), a `vigil-drainer serve` process that decodes with the cluster's munged and
// drains through libslurm, and reports sent by the report client vigil-check and the hooks use.
//
// What is simulated: the nodes share one host, so "gpu-0's munged" is a munged started with
// --origin=127.0.1.1 rather than one on another machine; munged stamps that origin into every
// credential exactly as it stamps a real node's address (its hostname's, by default).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "background_process.h"
#include "local_slurm_cluster.h"
#include "vigil/base/time.h"
#include "vigil/munge/munge.h"
#include "vigil/report/report_client.h"

namespace {

using vigil::testing::BackgroundProcess;
using vigil::testing::LocalSlurmCluster;
using Json = nlohmann::json;

bool eventually(const std::function<bool()>& pred, int seconds = 60) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return pred();
}

vigil::NodeReport ecc_report(const std::string& node, const std::string& run_id, bool fail) {
  vigil::CheckResult c;
  c.check = "nvml_ecc";
  c.short_name = "ecc";
  c.status = fail ? vigil::Status::kFail : vigil::Status::kPass;
  vigil::Measurement m;
  m.name = "volatile_uncorrected_ecc";
  m.value = fail ? 2 : 0;
  m.unit = "count";
  m.gpu = 3;
  vigil::Threshold t;
  t.op = vigil::Op::kLe;
  t.fail = 0;
  t.unit = "count";
  m.threshold = t;
  c.measurements.push_back(m);
  if (fail) {
    c.message = "uncorrectable ECC errors";
    c.fault_code = "VIGIL-NVML-DBE";
  }
  vigil::NodeReport r;
  r.node = node;
  r.sku = "h100-sxm5-80gb";
  r.run_id = run_id;
  const auto now = static_cast<int64_t>(std::time(nullptr));
  r.start_time = vigil::rfc3339_utc(now - 10);
  r.end_time = vigil::rfc3339_utc(now);
  r.checks.push_back(c);
  return r;
}

// One cluster and one drainer for the whole suite (starting them takes ~10 s).
class MungeAuthCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalSlurmCluster::Options o;
    o.nodes = 3;
    o.node_addresses = true;
    cluster_ = new LocalSlurmCluster(o);
    dir_ = cluster_->dir() + "/drainer";
    std::filesystem::create_directories(dir_);
    config_ = dir_ + "/drainer.yaml";
    std::ofstream(config_) << "listen: {address: 127.0.0.1, port: 0}\n"
                           << "auth:\n  mode: munge\n  munge:\n"
                           << "    socket: " << cluster_->munge_socket() << "\n"
                           << "    allowed_uids: [0]\n    admin_uids: [0]\n"
                           << "    allow_loopback_origin: true\n"
                           << "state_dir: " << dir_ << "/state\n"
                           << "policy:\n  defaults: {drain_after: 1, resume_after: 2}\n"
                           << "  fatal_checks: [nvml_ecc]\n"
                           << "breaker: {max_drains: 10, max_percent: 100, window_s: 3600}\n"
                           << "slurm:\n  conf: " << cluster_->slurm_conf() << "\n"
                           << "  retry_initial_ms: 200\n  retry_max_ms: 2000\n"
                           << "  batch_window_ms: 100\n"
                           << "kubernetes: {enabled: false}\n";
    drainer_ = new BackgroundProcess({VIGIL_DRAINER_BINARY, "serve", "--config", config_},
                                     dir_ + "/drainer.log");
    auto listening = drainer_->wait_for_log("listening on 127.0.0.1:", std::chrono::seconds(30));
    if (listening) port_ = std::stoi(*listening);
    drainer_->wait_for_log("vigil-drainer: ready", std::chrono::seconds(30));
  }
  static void TearDownTestSuite() {
    delete drainer_;  // stops it by PID
    delete cluster_;  // stops every daemon by PID, removes the directory
  }
  void SetUp() override { ASSERT_GT(port_, 0) << drainer_->log(); }
  void TearDown() override {
    if (HasFailure()) std::cerr << "--- drainer log ---\n" << drainer_->log();
  }

  static std::string url() { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/reports"; }

  // The report client as vigil-check --auth munge uses it, on `from`'s munged.
  static vigil::ReportClientOptions client_on(const std::string& from) {
    vigil::ReportClientOptions o;
    o.url = url();
    o.max_attempts = 1;
    o.auth.mode = vigil::ReportAuthMode::kMunge;
    o.auth.munge_socket = cluster_->node_munge_socket(from);
    return o;
  }

  // HTTP status of one report posted by `from`'s report client (no spool: the status shows).
  static int post_from(const std::string& from, const vigil::NodeReport& r) {
    auto o = client_on(from);
    auto out = vigil::post_report(r, o);
    if (out.ok()) return out->delivered ? 202 : out->last_http_status;
    const std::string e = out.error().message;
    std::smatch m;
    if (std::regex_search(e, m, std::regex(R"(HTTP (\d+))"))) return std::stoi(m[1].str());
    return -1;
  }

  // POST with a credential given as is (replays, foreign uids, expired ones).
  static httplib::Result post_raw(const std::string& credential, const std::string& body) {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_read_timeout(30, 0);
    return cli.Post("/v1/reports", {{"Authorization", "Munge " + credential}}, body,
                    "application/json");
  }

  static std::string metrics() {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Get("/metrics");
    return r ? r->body : "";
  }
  static double rejected(const std::string& reason) {
    std::smatch m;
    const std::string text = metrics();
    if (!std::regex_search(
            text, m,
            std::regex("vigil_reports_rejected_total\\{reason=\"" + reason + "\"\\} ([0-9.e+]+)")))
      return -1;
    return std::stod(m[1].str());
  }

  static std::string node_line(const std::string& node) {
    return cluster_->run({"scontrol", "-o", "show", "node", node}).out;
  }
  static bool drained(const std::string& node) {
    const std::string l = node_line(node);
    return l.find("DRAIN") != std::string::npos && l.find("Reason=vigil:") != std::string::npos;
  }

  static LocalSlurmCluster* cluster_;
  static BackgroundProcess* drainer_;
  static std::string dir_, config_;
  static int port_;
};
LocalSlurmCluster* MungeAuthCluster::cluster_ = nullptr;
BackgroundProcess* MungeAuthCluster::drainer_ = nullptr;
std::string MungeAuthCluster::dir_, MungeAuthCluster::config_;
int MungeAuthCluster::port_ = 0;

// The scenario of the issue: a node drained for an uncorrectable ECC error must not be resumed
// by passing reports that another node signs. The same reports from the node itself do resume
// it, so the refusal is what kept it drained.
TEST_F(MungeAuthCluster, forged_passing_reports_do_not_resume_an_ecc_drain) {
  ASSERT_EQ(post_from("gpu-1", ecc_report("gpu-1", "ecc-1", true)), 202);
  ASSERT_TRUE(eventually([] { return drained("gpu-1"); })) << node_line("gpu-1");
  const double before = rejected("forged_origin");
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(post_from("gpu-0", ecc_report("gpu-1", "forged-" + std::to_string(i), false)), 403);
  EXPECT_EQ(rejected("forged_origin"), before + 3);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // what a resume would have needed
  EXPECT_TRUE(drained("gpu-1")) << node_line("gpu-1");

  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(post_from("gpu-1", ecc_report("gpu-1", "repaired-" + std::to_string(i), false)), 202);
  EXPECT_TRUE(eventually([] { return !drained("gpu-1"); })) << node_line("gpu-1");
}

// Forged failures cannot drain a healthy node either.
TEST_F(MungeAuthCluster, forged_failure_does_not_drain_a_healthy_node) {
  EXPECT_EQ(post_from("gpu-0", ecc_report("gpu-2", "forged-fail", true)), 403);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_FALSE(drained("gpu-2")) << node_line("gpu-2");
}

TEST_F(MungeAuthCluster, a_replayed_credential_is_refused) {
  const std::string body = vigil::to_json(ecc_report("gpu-2", "replay-1", false)).dump();
  auto cred = vigil::munge::encode(vigil::munge::request_payload("POST", "/v1/reports", body),
                                   {cluster_->node_munge_socket("gpu-2"), 0});
  ASSERT_TRUE(cred.ok()) << cred.error().to_string();
  const double before = rejected("replayed");
  auto first = post_raw(*cred, body);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 202) << first->body;
  auto again = post_raw(*cred, body);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 403) << again->body;
  EXPECT_NE(again->body.find("replayed"), std::string::npos) << again->body;
  EXPECT_EQ(rejected("replayed"), before + 1);
}

TEST_F(MungeAuthCluster, a_credential_of_a_uid_not_allowed_is_refused) {
  const std::string body = vigil::to_json(ecc_report("gpu-2", "nobody-1", true)).dump();
  const std::string payload = vigil::munge::request_payload("POST", "/v1/reports", body);
  const std::string socket = cluster_->node_munge_socket("gpu-2");
  // munged encodes the uid of the process that asks; ask as nobody (65534) from a child.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    auto c = vigil::munge::encode(payload, {socket, 0});
    if (!c.ok()) _exit(3);
    const std::string& s = *c;
    _exit(write(fds[1], s.data(), s.size()) == static_cast<ssize_t>(s.size()) ? 0 : 4);
  }
  close(fds[1]);
  std::string cred;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    cred.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  const double before = rejected("uid_not_allowed");
  auto r = post_raw(cred, body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_NE(r->body.find("uid 65534"), std::string::npos) << r->body;
  EXPECT_EQ(rejected("uid_not_allowed"), before + 1);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(drained("gpu-2")) << node_line("gpu-2");
}

TEST_F(MungeAuthCluster, an_expired_credential_is_refused) {
  const std::string body = vigil::to_json(ecc_report("gpu-2", "late-1", true)).dump();
  auto cred = vigil::munge::encode(vigil::munge::request_payload("POST", "/v1/reports", body),
                                   {cluster_->node_munge_socket("gpu-2"), /*ttl_s=*/1});
  ASSERT_TRUE(cred.ok()) << cred.error().to_string();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const double before = rejected("expired");
  auto r = post_raw(*cred, body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_EQ(rejected("expired"), before + 1);
  EXPECT_FALSE(drained("gpu-2")) << node_line("gpu-2");
}

// A report spooled while the drainer was unreachable is resent by the node's next delivery,
// with a fresh credential from the node's own munged, and accepted.
TEST_F(MungeAuthCluster, a_spooled_report_is_resent_with_a_fresh_credential) {
  const std::string spool = dir_ + "/spool-gpu-0";
  auto down = client_on("gpu-0");
  down.url = "http://127.0.0.1:9/v1/reports";  // discard port: nothing listens
  down.spool_dir = spool;
  auto spooled = vigil::post_report(ecc_report("gpu-0", "while-down", false), down);
  ASSERT_TRUE(spooled.ok()) << spooled.error().to_string();
  ASSERT_FALSE(spooled->spooled_path.empty());

  auto up = client_on("gpu-0");
  up.spool_dir = spool;
  auto out = vigil::post_report(ecc_report("gpu-0", "back-up", false), up);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_TRUE(out->delivered) << out->last_error;
  EXPECT_EQ(out->resent.delivered, 1) << out->resent.last_error;
  EXPECT_EQ(out->resent.left, 0);
  EXPECT_FALSE(std::filesystem::exists(spooled->spooled_path));
}

// vigil-check itself with --auth munge: the report of gpu-1 is delivered when signed by gpu-1's
// munged and refused (403) when signed by gpu-0's.
TEST_F(MungeAuthCluster, vigil_check_run_signs_its_report_with_the_nodes_munged) {
  const std::string empty = dir_ + "/no-ib";  // no InfiniBand: ib_port is skipped, nothing drains
  std::filesystem::create_directories(empty + "/sys/class");
  auto run_on = [&](const std::string& munged_of) {
    return cluster_->run({VIGIL_CHECK_BINARY, "run", "--only", "ib_port", "--sysfs-root", empty,
                          "--node", "gpu-1", "--report-url", url(), "--auth", "munge",
                          "--munge-socket", cluster_->node_munge_socket(munged_of)});
  };
  const double before = rejected("forged_origin");
  auto forged = run_on("gpu-0");
  EXPECT_NE(forged.err.find("HTTP 403"), std::string::npos) << forged.describe();
  EXPECT_EQ(rejected("forged_origin"), before + 1);
  auto own = run_on("gpu-1");
  EXPECT_NE(own.err.find("delivered to"), std::string::npos) << own.describe();
}

// The operator CLI signs its request with the operator's own uid (0: in admin_uids).
TEST_F(MungeAuthCluster, operator_resume_is_signed_with_munge) {
  ASSERT_EQ(post_from("gpu-2", ecc_report("gpu-2", "op-ecc", true)), 202);
  ASSERT_TRUE(eventually([] { return drained("gpu-2"); })) << node_line("gpu-2");
  // The CLI finds the service at the configured address: the same config with the real port.
  std::ifstream in(config_);
  std::stringstream text;
  text << in.rdbuf();
  const std::string cli_config = dir_ + "/cli.yaml";
  std::ofstream(cli_config) << std::regex_replace(text.str(), std::regex("port: 0"),
                                                  "port: " + std::to_string(port_));
  auto r = cluster_->run({VIGIL_DRAINER_BINARY, "resume", "gpu-2", "--config", cli_config});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "resume of gpu-2 queued for Slurm (UNDRAIN)\n") << r.describe();
  EXPECT_TRUE(eventually([] { return !drained("gpu-2"); })) << node_line("gpu-2");
  // Without a credential the endpoint answers 401.
  httplib::Client cli("127.0.0.1", port_);
  auto bare = cli.Post("/v1/breaker/reset", "", "application/json");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 401);
}

}  // namespace
