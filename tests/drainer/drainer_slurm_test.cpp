// Issue 4 against the real local Slurm cluster (gpu-[0-3]): `vigil-drainer serve` receives
// NodeReports over HTTP and drains / resumes through libslurm. Every test starts its own
// drainer process (state dir under /tmp, removed after) and checks Slurm with sinfo/scontrol.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <slurm/slurm_version.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "slurm_test_cluster.h"
#include "vigil/report/report.h"

namespace {

using vigil::testing::SlurmTestCluster;
using Json = nlohmann::json;

constexpr const char* kToken = "integration-test-token-0123456789";
// slurmrestd serves node updates from v0.0.40 (Slurm 23.11) on: below that, no REST cases.
constexpr bool kRestCanUpdate = SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0);

bool eventually(const std::function<bool()>& pred, int seconds = 60) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return pred();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One failing or passing result of a real check with one measurement, as vigil-check's runner
// writes it (with the check's short name).
vigil::CheckResult result(const std::string& check, const std::string& short_name, vigil::Status st,
                          const std::string& name, double value, double fail_at, vigil::Op op,
                          const std::string& unit, const std::string& fault) {
  vigil::CheckResult c;
  c.check = check;
  c.short_name = short_name;
  c.status = st;
  vigil::Measurement m;
  m.name = name;
  m.value = value;
  m.unit = unit;
  m.gpu = 3;
  vigil::Threshold t;
  t.op = op;
  t.fail = fail_at;
  t.unit = unit;
  m.threshold = t;
  c.measurements.push_back(m);
  if (st == vigil::Status::kFail) {
    c.message = name + " out of bounds";
    c.fault_code = fault;
  }
  return c;
}

// nvml_ecc is a fatal check: one failing report drains.
vigil::CheckResult ecc(bool fail) {
  return result("nvml_ecc", "ecc", fail ? vigil::Status::kFail : vigil::Status::kPass,
                "volatile_uncorrected_ecc", fail ? 2 : 0, 0, vigil::Op::kLe, "count",
                "VIGIL-NVML-DBE");
}
// gpu_gemm is configured with drain_after 2 below.
vigil::CheckResult gemm(bool fail) {
  return result("gpu_gemm", "gemm", fail ? vigil::Status::kFail : vigil::Status::kPass,
                "gemm_bf16_tflops", fail ? 300 : 750, 700, vigil::Op::kGe, "TFLOP/s",
                "VIGIL-CUDA-GEMM-SLOW");
}

// gpu_gemm on 8 GPUs, every figure above the 700 TFLOP/s floor; gpu3 12% below its peers,
// re-measured `repeats` times at the same figure (vigil-check repeats a suspicious probe).
vigil::CheckResult slow_gpu3(int repeats) {
  vigil::CheckResult c = result("gpu_gemm", "gemm", vigil::Status::kPass, "gemm_bf16_tflops", 800,
                                700, vigil::Op::kGe, "TFLOP/s", "");
  vigil::Measurement m = c.measurements.front();
  c.measurements.clear();
  for (int g = 0; g < 8; ++g) {
    m.gpu = g;
    m.value = g == 3 ? 704 : 800 + g;
    m.repeats.assign(g == 3 ? repeats : 0, 705);
    c.measurements.push_back(m);
  }
  return c;
}

vigil::NodeReport report(const std::string& node, const std::string& run_id,
                         std::vector<vigil::CheckResult> checks) {
  vigil::NodeReport r;
  r.node = node;
  r.sku = "h100-sxm5-80gb";
  r.run_id = run_id;
  const auto now = static_cast<int64_t>(std::time(nullptr));
  r.start_time = vigil::rfc3339_utc(now - 30);
  r.end_time = vigil::rfc3339_utc(now);
  r.checks = std::move(checks);
  return r;
}

// A report a real GPU machine wrote (tests/fixtures/gpu-validation/SOURCES.md), as node `node`
// sent it now: only the node, the run id and the times change (and the suite, when given: the
// captures ran with --only, which leaves it out).
vigil::NodeReport genuine(const std::string& capture, const std::string& node,
                          const std::string& run_id, std::optional<std::string> suite = {}) {
  const std::string path =
      std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/gpu-validation/" + capture;
  auto parsed = vigil::parse_node_report(std::string_view(read_file(path)));
  if (!parsed) throw std::runtime_error(path + ": " + parsed.error);
  vigil::NodeReport r = std::move(*parsed.value);
  r.node = node;
  r.run_id = run_id;
  const auto now = static_cast<int64_t>(std::time(nullptr));
  r.start_time = vigil::rfc3339_utc(now - 30);
  r.end_time = vigil::rfc3339_utc(now);
  if (suite) r.suite = suite;
  return r;
}

// A `vigil-drainer serve` child process, logs in <dir>/drainer.log.
class DrainerProcess {
 public:
  explicit DrainerProcess(std::string dir) : dir_(std::move(dir)) {}
  ~DrainerProcess() { kill_now(SIGKILL); }

  bool start(const std::string& config) {
    const std::string log = dir_ + "/drainer.log";
    log_offset_ = std::filesystem::exists(log) ? std::filesystem::file_size(log) : 0;
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      setpgid(0, 0);
      // A test killed by ctest's timeout or SIGKILL runs no destructor: the drainer goes with it
      // (as BackgroundProcess's children do).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execl(VIGIL_DRAINER_BINARY, "vigil-drainer", "serve", "--config", config.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // Port 0 in the config: the drainer says where it listens, then that it is ready.
    return eventually(
        [&] {
          std::string text = read_file(log).substr(log_offset_);
          std::smatch m;
          if (text.find("vigil-drainer: ready") == std::string::npos) return false;
          if (!std::regex_search(text, m, std::regex(R"(listening on [0-9.]+:(\d+))")))
            return false;
          port_ = std::stoi(m[1].str());
          return true;
        },
        30);
  }

  // SIGTERM (orderly) or SIGKILL (crash); waits for the exit.
  void kill_now(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int status = 0;
    for (int i = 0; i < 150 && waitpid(pid_, &status, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }

  int post(const std::vector<vigil::NodeReport>& reports) {
    Json body = Json::array();
    for (const auto& r : reports) body.push_back(vigil::to_json(r));
    httplib::Client cli("127.0.0.1", port_);
    cli.set_bearer_token_auth(kToken);
    cli.set_read_timeout(30, 0);
    auto res = cli.Post("/v1/reports", body.dump(), "application/json");
    return res ? res->status : -1;
  }

  Json node(const std::string& name) {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_bearer_token_auth(kToken);
    auto res = cli.Get(("/v1/nodes/" + name).c_str());
    if (!res || res->status != 200) return Json();
    return Json::parse(res->body, nullptr, false);
  }

  std::string metrics() {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_bearer_token_auth(kToken);
    auto res = cli.Get("/metrics");
    return res ? res->body : "";
  }

  std::string log() const { return read_file(dir_ + "/drainer.log"); }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  size_t log_offset_ = 0;
};

class DrainerSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = SlurmTestCluster::get(/*rest=*/kRestCanUpdate);
    ASSERT_NE(cluster_, nullptr);
    ASSERT_TRUE(cluster_->reset_nodes()) << cluster_->run("sinfo -N; sinfo -R");
    char tmpl[] = "/tmp/vigil-drainer-it.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/token") << kToken << "\n";
    drainer_ = std::make_unique<DrainerProcess>(dir_);
  }

  void TearDown() override {
    if (HasFailure() && drainer_) std::cerr << "--- drainer log ---\n" << drainer_->log();
    drainer_.reset();  // kills the drainer
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // view_max_age_s < 0: the default.
  // rest: slurm.backend rest (slurmrestd + JWT) instead of libslurm.
  std::string write_config(int max_drains = 10, int view_max_age_s = -1, bool rest = false) {
    const std::string path = dir_ + "/drainer.yaml";
    std::ofstream(path) << "listen: {address: 127.0.0.1, port: 0}\n"
                        << "auth: {token_file: " << dir_ << "/token}\n"
                        << "state_dir: " << dir_ << "/state\n"
                        << "policy:\n"
                        << "  defaults: {drain_after: 1, resume_after: 2}\n"
                        << "  checks:\n"
                        << "    gpu_gemm: {drain_after: 2, resume_after: 2}\n"
                        << "  fatal_checks: [nvml_ecc]\n"
                        << "breaker: {max_drains: " << max_drains
                        << ", max_percent: 100, window_s: 3600}\n"
                        << "slurm:\n"
                        << (rest
                                ? "  backend: rest\n  rest: {url: " + cluster_->local().rest_url() +
                                      ", token_file: " + cluster_->local().jwt_token_file() + "}\n"
                                : "  conf: " + cluster_->conf() + "\n")
                        << "  retry_initial_ms: 200\n"
                        << "  retry_max_ms: 2000\n"
                        << "  batch_window_ms: 100\n"
                        << (view_max_age_s < 0
                                ? std::string()
                                : "  view_max_age_s: " + std::to_string(view_max_age_s) + "\n")
                        << "kubernetes: {enabled: false}\n";
    return path;
  }

  // The drainer.yaml the package installs (packaging/drainer/drainer.yaml: its policy, breaker
  // and gate), with this test's address, token, state, Slurm and dry_run: false; `gate`, when
  // given, replaces its gate line.
  std::string write_shipped_config(const std::string& gate = "") {
    const std::string path = dir_ + "/drainer.yaml";
    std::istringstream shipped(
        read_file(std::string(VIGIL_SOURCE_DIR) + "/packaging/drainer/drainer.yaml"));
    std::ofstream out(path);
    for (std::string line; std::getline(shipped, line);) {
      if (line.rfind("listen:", 0) == 0) {
        out << "listen: {address: 127.0.0.1, port: 0}\n";
      } else if (line.rfind("auth:", 0) == 0) {
        out << "auth: {token_file: " << dir_ << "/token}\n";
      } else if (line.rfind("state_dir:", 0) == 0) {
        out << "state_dir: " << dir_ << "/state\n";
      } else if (line.rfind("dry_run:", 0) == 0) {
        out << "dry_run: false\n";
      } else if (line.rfind("slurm:", 0) == 0) {
        out << "slurm: {enabled: true, backend: libslurm, conf: " << cluster_->conf() << "}\n";
      } else if (line.rfind("gate:", 0) == 0 && !gate.empty()) {
        out << "gate: " << gate << "\n";
      } else {
        out << line << "\n";
      }
    }
    return path;
  }

  // "State=... Reason=..." of `scontrol show node`.
  std::string node_field(const std::string& node, const std::string& field) {
    std::string out = cluster_->run("scontrol -o show node " + node);
    std::smatch m;
    if (field == "Reason") {
      // Reason is last-but-a-few and may contain spaces: up to " [user@time]".
      if (std::regex_search(out, m, std::regex(R"(Reason=(.*?) \[)"))) return m[1].str();
      return "";
    }
    if (std::regex_search(out, m, std::regex(field + R"(=(\S+))"))) return m[1].str();
    return "";
  }

  bool drained_with(const std::string& node, const std::string& reason_prefix) {
    return node_field(node, "State").find("DRAIN") != std::string::npos &&
           node_field(node, "Reason").rfind(reason_prefix, 0) == 0;
  }

  // The drainer has decided on run_id for node (so a non-change can be asserted).
  bool decided(const std::string& node, const std::string& run_id) {
    Json j = drainer_->node(node);
    return j.is_object() && j.value("last_run_id", "") == run_id;
  }

  SlurmTestCluster* cluster_ = nullptr;
  std::string dir_;
  std::unique_ptr<DrainerProcess> drainer_;
};

TEST_F(DrainerSlurm, failing_report_drains_the_node_with_the_vigil_reason_in_sinfo_R) {
  ASSERT_TRUE(drainer_->start(write_config()));
  ASSERT_EQ(drainer_->post({report("gpu-2", "run-1", {ecc(true)})}), 202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-2", "vigil: ecc"); }))
      << cluster_->run("scontrol show node gpu-2");
  std::string sinfo = cluster_->run("sinfo -R");
  EXPECT_NE(sinfo.find("vigil: ecc"), std::string::npos) << sinfo;
  EXPECT_NE(sinfo.find("gpu-2"), std::string::npos) << sinfo;
  EXPECT_EQ(node_field("gpu-1", "State"), "IDLE");
}

// Fail-slow: no bound is broken, but gpu3 is 12% below its 7 peers. Confirmed by the checker's
// repeats it drains after one report, with the peers in the reason; unconfirmed it only warns.
TEST_F(DrainerSlurm, a_gpu_12_percent_below_its_peers_drains_with_the_peers_in_sinfo_R) {
  ASSERT_TRUE(drainer_->start(write_config()));
  ASSERT_EQ(drainer_->post({report("gpu-1", "run-1", {slow_gpu3(0)})}), 202);
  ASSERT_EQ(drainer_->post({report("gpu-2", "run-1", {slow_gpu3(2)})}), 202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-2", "vigil: gemm gpu3"); }))
      << cluster_->run("scontrol show node gpu-2");
  const std::string reason = node_field("gpu-2", "Reason");
  EXPECT_NE(reason.find("below its 7 peers"), std::string::npos) << reason;
  EXPECT_NE(cluster_->run("sinfo -R").find("vigil: gemm gpu3"), std::string::npos);
  ASSERT_TRUE(eventually([&] { return decided("gpu-1", "run-1"); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_FALSE(drained_with("gpu-1", "vigil:")) << "an unconfirmed slow GPU drained at once";
  EXPECT_EQ(drainer_->node("gpu-1").value("state", ""), "warn") << drainer_->node("gpu-1").dump();
}

// The qualify suite's figures as a real H200 gave them (run 10, docs/gpu-validation.md), judged by
// the shipped drainer.yaml on the real Slurm: the bit flip drains at once with the GPU and the
// element in sinfo -R; the healthy GPU's soak and gpu_sdc drain nothing.
TEST_F(DrainerSlurm, a_genuine_h200_bit_flip_drains_the_node_naming_the_gpu_and_the_element) {
  ASSERT_TRUE(drainer_->start(write_shipped_config()));
  ASSERT_EQ(drainer_->post({genuine("2026-12-04-h200-run10/inject.json", "gpu-2", "run-1"),
                            genuine("2026-12-04-h200-run10/qualify.json", "gpu-1", "run-1")}),
            202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-2", "vigil: sdc gpu 0 bf16"); }))
      << cluster_->run("scontrol show node gpu-2");
  const std::string reason = node_field("gpu-2", "Reason");
  EXPECT_NE(reason.find("(row 17, col 4000)"), std::string::npos) << reason;
  EXPECT_NE(cluster_->run("sinfo -R").find("vigil: sdc gpu 0"), std::string::npos);
  ASSERT_TRUE(eventually([&] { return decided("gpu-1", "run-1"); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(node_field("gpu-1", "State"), "IDLE") << cluster_->run("sinfo -R");
  EXPECT_EQ(drainer_->node("gpu-1").value("state", ""), "healthy")
      << drainer_->node("gpu-1").dump();
}

// A slow-clocking GPU among its peers in a soak. DERIVED from run 10's genuine one-GPU soak
// (every figure as the H200 gave it), copied to 8 GPUs: no 8-GPU soak has run yet. GPU 3 clocks
// 11% below the other seven, with the throughput that follows. A soak has no repeats, so the
// verdict is unconfirmed (VIGIL-SLOW): the shipped policy drains on the second such qualify run.
TEST_F(DrainerSlurm, a_gpu_clocking_low_among_its_peers_in_a_soak_drains_naming_it) {
  ASSERT_TRUE(drainer_->start(write_shipped_config()));
  auto eight = [&](const std::string& run_id) {
    vigil::NodeReport r =
        genuine("2026-12-04-h200-run10/qualify.json", "gpu-0", run_id, std::string("qualify"));
    for (vigil::CheckResult& c : r.checks) {
      if (c.check != "gpu_soak") continue;
      const std::vector<vigil::Measurement> one = c.measurements;
      c.measurements.clear();
      for (int g = 0; g < 8; ++g) {
        for (vigil::Measurement m : one) {
          m.gpu = g;
          if (g == 3 && (m.name == "soak_sm_clock" || m.name == "soak_tflops")) m.value *= 0.89;
          c.measurements.push_back(m);
        }
      }
    }
    return r;
  };
  ASSERT_EQ(drainer_->post({eight("run-1")}), 202);
  ASSERT_TRUE(eventually([&] { return decided("gpu-0", "run-1"); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(node_field("gpu-0", "State"), "IDLE") << "one unconfirmed soak drained at once";
  ASSERT_EQ(drainer_->post({eight("run-2")}), 202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-0", "vigil: soak gpu3"); }))
      << cluster_->run("scontrol show node gpu-0") << drainer_->node("gpu-0").dump(2);
  const std::string reason = node_field("gpu-0", "Reason");
  EXPECT_NE(reason.find("below its 7 peers"), std::string::npos) << reason;
}

// The gate on the real Slurm with genuine H200 reports: a new node is held; its qualify run that
// finds the bit flip keeps it drained, now for the flip, with the GPU named; two clean qualify
// runs (run 10's, with the suite it would carry without --only) resume it.
TEST_F(DrainerSlurm, a_held_node_whose_qualify_run_finds_a_flip_stays_drained_until_clean_runs) {
  ASSERT_TRUE(drainer_->start(
      write_shipped_config("{new_nodes: true, repaired: true, suite: qualify, learn_s: 0}")));
  ASSERT_EQ(drainer_->post({genuine("2026-12-04-h200-run10/qualify.json", "gpu-3", "run-1")}), 202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-3", "vigil: qualify new node"); }))
      << cluster_->run("scontrol show node gpu-3");
  ASSERT_EQ(drainer_->post({genuine("2026-12-04-h200-run10/inject.json", "gpu-3", "run-2",
                                    std::string("qualify"))}),
            202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-3", "vigil: sdc gpu 0 bf16"); }))
      << cluster_->run("scontrol show node gpu-3") << drainer_->node("gpu-3").dump(2);
  const Json held = drainer_->node("gpu-3");
  EXPECT_EQ(held.value("gate_cause", ""), "new") << held.dump(2);
  EXPECT_EQ(held.at("driving_checks"), Json::array({"gpu_sdc"})) << held.dump(2);
  for (const char* run : {"run-3", "run-4"}) {
    ASSERT_EQ(drainer_->post({genuine("2026-12-04-h200-run10/qualify.json", "gpu-3", run,
                                      std::string("qualify"))}),
              202);
  }
  EXPECT_TRUE(eventually([&] { return node_field("gpu-3", "State") == "IDLE"; }))
      << cluster_->run("scontrol show node gpu-3") << drainer_->node("gpu-3").dump(2);
}

TEST_F(DrainerSlurm, resume_after_passing_reports_resume_the_node) {
  ASSERT_TRUE(drainer_->start(write_config()));
  ASSERT_EQ(drainer_->post({report("gpu-2", "run-1", {ecc(true)})}), 202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-2", "vigil: ecc"); }));
  ASSERT_EQ(drainer_->post({report("gpu-2", "run-2", {ecc(false)})}), 202);
  ASSERT_TRUE(eventually([&] { return decided("gpu-2", "run-2"); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_TRUE(drained_with("gpu-2", "vigil: ecc")) << "resumed after 1 pass; resume_after is 2";
  ASSERT_EQ(drainer_->post({report("gpu-2", "run-3", {ecc(false)})}), 202);
  EXPECT_TRUE(eventually([&] { return node_field("gpu-2", "State") == "IDLE"; }))
      << cluster_->run("scontrol show node gpu-2");
  EXPECT_EQ(cluster_->run("sinfo -h -R"), "");
}

// The same service over slurmrestd: drain, an admin's drain left alone, resume after passes.
TEST_F(DrainerSlurm, over_slurmrestd_drains_resumes_and_never_resumes_an_admin_drain) {
  if (!kRestCanUpdate) GTEST_SKIP() << "slurmrestd of this Slurm release cannot update nodes";
  int rc = 0;
  cluster_->run("scontrol update nodename=gpu-1 state=drain reason='hw ticket 42'", &rc);
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(drainer_->start(write_config(10, -1, /*rest=*/true)));
  ASSERT_EQ(drainer_->post(
                {report("gpu-2", "run-1", {ecc(true)}), report("gpu-1", "run-1", {ecc(true)})}),
            202);
  ASSERT_TRUE(eventually([&] { return drained_with("gpu-2", "vigil: ecc"); }))
      << cluster_->run("scontrol show node gpu-2");
  for (int i = 2; i <= 3; ++i) {
    const std::string run = "run-" + std::to_string(i);
    ASSERT_EQ(
        drainer_->post({report("gpu-2", run, {ecc(false)}), report("gpu-1", run, {ecc(false)})}),
        202);
  }
  EXPECT_TRUE(eventually([&] { return node_field("gpu-2", "State") == "IDLE"; }))
      << cluster_->run("scontrol show node gpu-2");
  ASSERT_TRUE(eventually([&] { return decided("gpu-1", "run-3"); }));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // give a wrong resume time to land
  EXPECT_TRUE(drained_with("gpu-1", "hw ticket 42")) << cluster_->run("scontrol show node gpu-1");
}

TEST_F(DrainerSlurm, a_node_an_admin_drained_is_never_resumed) {
  int rc = 0;
  cluster_->run("scontrol update nodename=gpu-1 state=drain reason='hw ticket 42'", &rc);
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(drainer_->start(write_config()));
  ASSERT_EQ(drainer_->post({report("gpu-1", "run-1", {ecc(true)})}), 202);
  for (int i = 2; i <= 4; ++i) {
    ASSERT_EQ(drainer_->post({report("gpu-1", "run-" + std::to_string(i), {ecc(false)})}), 202);
  }
  ASSERT_TRUE(eventually([&] { return decided("gpu-1", "run-4"); }));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // give a wrong resume time to land
  EXPECT_TRUE(drained_with("gpu-1", "hw ticket 42")) << cluster_->run("scontrol show node gpu-1");
}

// Decisions may reuse the node table read by an earlier pass (slurm.view_max_age_s), so a
// failing report can be decided on a view older than an admin's drain. The sink re-reads Slurm
// before acting: the admin's reason stays, and the node is not recorded as drained by vigil.
TEST_F(DrainerSlurm, an_admin_drain_after_the_decisions_view_was_read_is_not_overwritten) {
  ASSERT_TRUE(drainer_->start(write_config(10, 300)));  // the view is surely reused
  ASSERT_EQ(drainer_->post({report("gpu-1", "run-1", {ecc(false)})}), 202);
  ASSERT_TRUE(eventually([&] { return decided("gpu-1", "run-1"); }));
  int rc = 0;
  cluster_->run("scontrol update nodename=gpu-1 state=drain reason='hw ticket 77'", &rc);
  ASSERT_EQ(rc, 0);
  ASSERT_EQ(drainer_->post({report("gpu-1", "run-2", {ecc(true)})}), 202);
  ASSERT_TRUE(eventually([&] {
    return drainer_->node("gpu-1").value("last_action", "") == "drain_skipped";
  })) << drainer_->node("gpu-1").dump();
  EXPECT_TRUE(drained_with("gpu-1", "hw ticket 77")) << cluster_->run("scontrol show node gpu-1");
  EXPECT_FALSE(drainer_->node("gpu-1").value("drained_by_vigil", true));
}

TEST_F(DrainerSlurm, a_down_node_is_not_touched) {
  int rc = 0;
  cluster_->run("scontrol update nodename=gpu-3 state=down reason=admin-down", &rc);
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(drainer_->start(write_config()));
  ASSERT_EQ(drainer_->post({report("gpu-3", "run-1", {ecc(true)})}), 202);
  ASSERT_TRUE(eventually([&] { return decided("gpu-3", "run-1"); }));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(node_field("gpu-3", "State"), "DOWN") << cluster_->run("scontrol show node gpu-3");
  EXPECT_EQ(node_field("gpu-3", "Reason"), "admin-down");
}

TEST_F(DrainerSlurm, the_breaker_stops_mass_drains) {
  ASSERT_TRUE(drainer_->start(write_config(/*max_drains=*/2)));
  std::vector<vigil::NodeReport> all;
  for (int i = 0; i < 4; ++i)
    all.push_back(report("gpu-" + std::to_string(i), "run-1", {ecc(true)}));
  ASSERT_EQ(drainer_->post(all), 202);
  auto drained = [&] {
    int n = 0;
    for (int i = 0; i < 4; ++i) n += drained_with("gpu-" + std::to_string(i), "vigil:") ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(eventually([&] { return drained() >= 2; }));
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < 4; ++i)
      if (!decided("gpu-" + std::to_string(i), "run-1")) return false;
    return true;
  }));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(drained(), 2) << cluster_->run("sinfo -R");
  EXPECT_NE(drainer_->metrics().find("vigil_circuit_breaker_open 1"), std::string::npos);
}

TEST_F(DrainerSlurm, restart_mid_stream_keeps_state) {
  const std::string config = write_config();
  ASSERT_TRUE(drainer_->start(config));
  // gpu_gemm drains after 2 consecutive fails; the drainer dies (kill -9) between them.
  ASSERT_EQ(drainer_->post({report("gpu-0", "run-1", {gemm(true)})}), 202);
  drainer_->kill_now(SIGKILL);
  EXPECT_EQ(node_field("gpu-0", "State"), "IDLE");
  ASSERT_TRUE(drainer_->start(config));
  EXPECT_EQ(drainer_->post({report("gpu-0", "run-1", {gemm(true)})}), 202);  // duplicate: no-op
  ASSERT_TRUE(eventually([&] { return decided("gpu-0", "run-1"); }));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(node_field("gpu-0", "State"), "IDLE") << "a replayed report counted twice";
  ASSERT_EQ(drainer_->post({report("gpu-0", "run-2", {gemm(true)})}), 202);
  EXPECT_TRUE(eventually([&] { return drained_with("gpu-0", "vigil: gemm"); }))
      << cluster_->run("scontrol show node gpu-0");
}

TEST_F(DrainerSlurm, with_slurmctld_stopped_actions_wait_and_are_applied_when_it_is_back) {
  ASSERT_TRUE(drainer_->start(write_config()));
  ASSERT_TRUE(cluster_->stop_controller());
  ASSERT_EQ(drainer_->post({report("gpu-1", "run-1", {ecc(true)})}), 202);
  EXPECT_TRUE(eventually(
      [&] {
        std::string m = drainer_->metrics();
        return m.find("vigil_pending_actions{sink=\"slurm\"} 1") != std::string::npos;
      },
      30))
      << drainer_->metrics();
  EXPECT_NE(drainer_->node("gpu-1").dump(), "null");  // the service stays up and answers
  ASSERT_TRUE(cluster_->start_controller());
  EXPECT_TRUE(eventually([&] { return drained_with("gpu-1", "vigil: ecc"); }, 120))
      << cluster_->run("scontrol show node gpu-1");
}

}  // namespace
