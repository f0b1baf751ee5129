// dashboards/ against the real Debian Prometheus (docs/dashboards.md): a vigil-drainer (auth
// off, local Slurm cluster behind it) ingests reports that put nodes in every state; Prometheus
// scrapes it on loopback every second with dashboards/alerts.yaml loaded; then every panel query
// of every dashboard (template variables substituted) must run without error and return data,
// and the alerts whose scenario is live (breaker open, stale node, drainer down) must be
// pending or firing. Every process is stopped by PID; temp dirs are removed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "background_process.h"
#include "local_slurm_cluster.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using vigil::testing::BackgroundProcess;
using vigil::testing::LocalSlurmCluster;

namespace {

const std::string kSrc = VIGIL_SOURCE_DIR;

class Scratch {
 public:
  Scratch() {
    char tmpl[] = "/tmp/vigil-dash-test.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& n) const { return path_ + "/" + n; }

 private:
  std::string path_;
};

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

std::string rfc3339(std::time_t t) {
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json meas(const std::string& name, double v, const std::string& unit, const std::string& op,
          double fail, std::optional<double> warn = {}, std::optional<int> gpu = {},
          std::optional<std::string> port = {}) {
  json m = {{"name", name},
            {"value", v},
            {"unit", unit},
            {"threshold", {{"op", op}, {"fail", fail}, {"unit", unit}}}};
  if (warn) m["threshold"]["warn"] = *warn;
  if (gpu) m["gpu"] = *gpu;
  if (port) m["port"] = *port;
  return m;
}

// A check result as vigil-check writes it; short_name is what the Slurm reason shows.
json check(const std::string& name, const std::string& status, json measurements,
           const std::string& message = "", const std::string& fault = "",
           const std::string& short_name = "") {
  json j = {{"check", name},
            {"status", status},
            {"measurements", std::move(measurements)},
            {"message", message},
            {"fault_code", fault}};
  if (!short_name.empty()) j["short_name"] = short_name;
  return j;
}

// A figure without a bound (vigil-check reports these too: link counts, NCCL's connections).
json figure(const std::string& name, double v, const std::string& unit,
            std::optional<int> gpu = {}) {
  json m = {{"name", name}, {"value", v}, {"unit", unit}};
  if (gpu) m["gpu"] = *gpu;
  return m;
}

// Healthy figures for every family the dashboards plot (per GPU, per port, busbw). The warn node
// (nvl_status "warn") also has the NVL72/GPUDirect findings that warn: a fabric registration in
// progress, an IMEX daemon waiting for peers, no GPUDirect path, 2 of 8 connections without GDR.
json healthy_checks(double nvl_busbw, const std::string& nvl_status) {
  const bool warn = nvl_status == "warn";
  json nvlink = json::array(), ecc = json::array();
  for (int g = 0; g < 2; ++g) {
    nvlink.push_back(meas("nvlink_links_down", 0, "count", "<=", 0, {}, g));
    nvlink.push_back(figure("nvlink_link_count", 18, "count", g));
    ecc.push_back(meas("volatile_uncorrected_ecc", 0, "count", "<=", 0, {}, g));
  }
  json ib = {meas("busbw", 41.7, "GB/s", ">=", 36, 38), figure("net_connections", 8, "count"),
             figure("gdr_connections", warn ? 6 : 8, "count")};
  json checks = json::array({
      check("nvml_ecc", "pass", ecc),
      check("nvml_nvlink", "pass", nvlink),
      check("ib_port", "pass", {meas("port_rate", 400, "Gb/s", ">=", 400, {}, {}, "mlx5_0/1")}),
      check("ib_counters", "pass",
            {meas("symbol_error_delta", 0, "count", "<=", 10, {}, {}, "mlx5_0/1")}),
      check("nccl_allreduce_nvlink", nvl_status, {meas("busbw", nvl_busbw, "GB/s", ">=", 440, 465)},
            nvl_status == "warn" ? "busbw 455 < warn 465 GB/s" : ""),
      check("nccl_allreduce_ib", "pass", ib),
  });
  if (warn) {
    checks.push_back(check("nvml_fabric", "warn", {figure("fabric_state", 2, "enum", 0)},
                           "gpu0 NVLink fabric registration in progress",
                           "VIGIL-NVML-FABRIC-PENDING", "nvl-fabric"));
    checks.push_back(check("nvlink_imex", "warn", {figure("imex_daemon_state", 2, "enum")},
                           "IMEX daemon WAITING_FOR_PEERS", "VIGIL-IMEX-PENDING", "imex"));
    checks.push_back(check("ib_gpudirect", "warn", json::array(), "no GPUDirect RDMA path",
                           "VIGIL-IB-NO-GPUDIRECT", "gdr"));
  }
  return checks;
}

json report(const std::string& node, int seq, json checks, const std::string& run_suffix = "") {
  const std::time_t now = std::time(nullptr);
  return {{"schema_version", 1},
          {"node", node},
          {"sku", "H100-SXM5-80GB"},
          {"run_id", node + "-" + std::to_string(seq) + run_suffix},
          {"start_time", rfc3339(now - 5)},
          {"end_time", rfc3339(now)},
          {"checks", std::move(checks)}};
}

// The scenario: one node per state.
// The scenario, one node per state: gpu-0 healthy, gpu-1 warn, gpu-2 fails (drained), gpu-3 fails
// after the breaker's one drain (would_drain, breaker open), cpu-err errors, cpu-unknown sends an
// empty report (unknown), cpu-stale reports once and goes stale.
json reports_for(int seq, bool include_stale_node) {
  json out = json::array();
  out.push_back(report("gpu-0", seq, healthy_checks(472, "pass")));
  out.push_back(report("gpu-1", seq, healthy_checks(455, "warn")));
  // gpu-0 and gpu-1 were paired by a fabric job: one report each, carrying only the pair test.
  for (const char* node : {"gpu-0", "gpu-1"}) {
    out.push_back(
        report(node, seq,
               {check("fabric_allreduce_ib", "pass", {meas("busbw", 372.5, "GB/s", ">=", 330, 360)},
                      "pair gpu-0+gpu-1: busbw 372.50 GB/s")},
               "-fabric"));
  }
  // A 6-node fabric job with a topology (nodes unknown to Slurm, so nothing is drained): fab-2
  // and fab-3 sit under leaf1, which the job suspects; fab-5 is localized.
  const std::map<std::string, std::string> leaf_of = {{"fab-0", "leaf0"}, {"fab-1", "leaf0"},
                                                      {"fab-2", "leaf1"}, {"fab-3", "leaf1"},
                                                      {"fab-4", "leaf2"}, {"fab-5", "leaf2"}};
  for (const auto& [node, leaf] : leaf_of) {
    const bool under = leaf == "leaf1", bad = node == "fab-5";
    json pairs = json::array();
    for (const char* partner : {"fab-0", "fab-2", "fab-4"}) {
      if (node == partner) continue;
      json m = meas("pair_busbw", under || bad ? 21.0 : 40.5, "GB/s", ">=", 36, 38);
      m["port"] = std::string("pair:") + partner;
      pairs.push_back(m);
    }
    json sw = {{"name", "switch_suspected"},
               {"value", under ? 1 : 0},
               {"unit", "bool"},
               {"port", "switch:" + leaf}};
    if (!bad) pairs.push_back(sw);
    out.push_back(report(node, seq,
                         {check("fabric_allreduce_ib",
                                bad     ? "fail"
                                : under ? "warn"
                                        : "pass",
                                pairs, bad ? "6-node fabric job: slow with 2 partners" : "",
                                bad     ? "VIGIL-FABRIC-LOCALIZED"
                                : under ? "VIGIL-FABRIC-SWITCH"
                                        : "",
                                "fabric-ib")},
                         "-fabric"));
  }
  // A 3-tray NVLink domain job (NVL72; nodes unknown to Slurm): nvl-2 is localized, and every
  // tray carries the job's whole-domain figure.
  for (const char* node : {"nvl-0", "nvl-1", "nvl-2"}) {
    const bool bad = std::string(node) == "nvl-2";
    json whole = figure("domain_busbw", 612.0, "GB/s");
    whole["port"] = "domain:3-nodes";
    out.push_back(report(node, seq,
                         {check("domain_allreduce_nvlink", bad ? "fail" : "pass", {whole},
                                bad ? "3-node NVLink domain job: slow with 2 partners" : "",
                                bad ? "VIGIL-DOMAIN-LOCALIZED" : "", "nvl-domain")},
                         "-domain"));
  }
  const json remap = meas("row_remap_pending", 1, "count", "<=", 0, {}, 3);
  out.push_back(report("gpu-2", seq,
                       {check("nvml_row_remap", "fail", {remap}, "gpu3 row remap pending (1)",
                              "VIGIL-NVML-REMAP-PENDING", "remap")}));
  const json dbe = meas("volatile_uncorrected_ecc", 2, "count", "<=", 0, {}, 1);
  out.push_back(report("gpu-3", seq,
                       {check("nvml_ecc", "fail", {dbe}, "gpu1 2 DBE", "VIGIL-NVML-DBE", "ecc")}));
  out.push_back(
      report("cpu-err", seq, {check("gpu_count", "error", json::array(), "NVML not available")}));
  out.push_back(report("cpu-unknown", seq, json::array()));
  if (include_stale_node) out.push_back(report("cpu-stale", seq, healthy_checks(470, "pass")));
  return out;
}

class DashboardsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    feeding_ = false;
    if (feeder_.joinable()) feeder_.join();
    if (prometheus_) prometheus_->stop();
    if (drainer_) drainer_->stop();
    if (cluster_) cluster_->stop();
  }

  void post(const json& body) {
    httplib::Client c("127.0.0.1", drainer_port_);
    c.set_connection_timeout(5);
    auto r = c.Post("/v1/reports", body.dump(), "application/json");
    ASSERT_TRUE(r) << "POST failed";
    ASSERT_TRUE(r->status == 202 || r->status == 200) << r->status << " " << r->body;
  }

  std::string drainer_metrics() {
    httplib::Client c("127.0.0.1", drainer_port_);
    auto r = c.Get("/metrics");
    return r ? r->body : "";
  }

  json prom(const std::string& path, const httplib::Params& params) {
    httplib::Client c("127.0.0.1", prom_port_);
    c.set_read_timeout(30);
    auto r = c.Get(path, params, httplib::Headers{});
    if (!r) return {{"status", "transport error"}};
    try {
      return json::parse(r->body);
    } catch (...) {
      return {{"status", "bad json"}, {"body", r->body}};
    }
  }

  Scratch scratch_;
  std::unique_ptr<LocalSlurmCluster> cluster_;
  std::unique_ptr<BackgroundProcess> drainer_, prometheus_;
  int drainer_port_ = 0, prom_port_ = 0;
  std::thread feeder_;
  std::atomic<bool> feeding_{false};
};

// Grafana variables -> PromQL text: multi-value/All variables become regexes.
std::string substitute(std::string expr, const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars) {
    for (const std::string& form : {"${" + k + "}", "$" + k}) {
      size_t pos;
      while ((pos = expr.find(form)) != std::string::npos) expr.replace(pos, form.size(), v);
    }
  }
  return expr;
}

TEST_F(DashboardsTest, every_panel_query_returns_data_from_a_real_prometheus_and_alerts_fire) {
  cluster_ = std::make_unique<LocalSlurmCluster>();
  std::ofstream(scratch_.file("drainer.yaml"))
      << "listen: {address: 127.0.0.1, port: 0}\nauth: disabled\n"
      << "state_dir: " << scratch_.file("state") << "\n"
      << "policy:\n  defaults: {drain_after: 1, resume_after: 2}\n  staleness_s: 12\n"
      << "breaker: {max_drains: 3, max_percent: 100, window_s: 3600}\n"
      << "slurm: {enabled: true, conf: " << cluster_->slurm_conf() << ", batch_window_ms: 50}\n"
      << "kubernetes: {enabled: false}\n"
      << "gate: {repaired: true}\n";
  drainer_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{VIGIL_DRAINER_BINARY, "serve", "--config",
                               scratch_.file("drainer.yaml")},
      scratch_.file("drainer.log"));
  const auto addr = drainer_->wait_for_log("listening on 127.0.0.1:", 60s);
  ASSERT_TRUE(addr) << drainer_->log();
  drainer_port_ = std::stoi(*addr);

  // The reliability figures: gpu-0 is drained and resumed by an operator twice (two of the
  // breaker's three drains; gpu-2's is the third and gpu-3's opens it) before it reports healthy.
  for (int episode = 0; episode < 2; ++episode) {
    const json dbe = meas("volatile_uncorrected_ecc", 2, "count", "<=", 0, {}, 1);
    post(json::array(
        {report("gpu-0", 1000 + episode,
                {check("nvml_ecc", "fail", {dbe}, "gpu1 2 DBE", "VIGIL-NVML-DBE", "ecc")})}));
    auto drained = [&] {
      return cluster_->run({"sinfo", "-h", "-N", "-n", "gpu-0", "-o", "%E"})
                 .out.rfind("vigil:", 0) == 0;
    };
    for (int i = 0; i < 100 && !drained(); ++i) std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(drained()) << drainer_->log();
    httplib::Client c("127.0.0.1", drainer_port_);
    auto r = c.Post("/v1/nodes/gpu-0/resume", "", "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer") << drainer_->log();
    for (int i = 0; i < 100 && drained(); ++i) std::this_thread::sleep_for(100ms);
    ASSERT_FALSE(drained()) << drainer_->log();
  }
  // The stale node reports once; everyone else keeps reporting (new run ids) so they stay fresh.
  post(reports_for(0, true));
  {  // an invalid report: ingest outcome "invalid"
    httplib::Client c("127.0.0.1", drainer_port_);
    auto r = c.Post("/v1/reports", R"({"schema_version": 99})", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
  }
  feeding_ = true;
  feeder_ = std::thread([this] {
    for (int seq = 1; feeding_; ++seq) {
      httplib::Client c("127.0.0.1", drainer_port_);
      c.Post("/v1/reports", reports_for(seq, false).dump(), "application/json");
      for (int i = 0; i < 20 && feeding_; ++i) std::this_thread::sleep_for(100ms);
    }
  });

  // Wait until the drainer exports every state (stale takes staleness_s).
  const std::vector<std::string> states = {"healthy", "warn",  "drained", "would_drain",
                                           "stale",   "error", "unknown"};
  std::string metrics;
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  auto missing_states = [&] {
    std::vector<std::string> missing;
    for (const auto& s : states) {
      const std::regex re("vigil_node_state\\{[^}]*state=\"" + s + "\"[^}]*\\} 1");
      if (!std::regex_search(metrics, re)) missing.push_back(s);
    }
    return missing;
  };
  while (std::chrono::steady_clock::now() < deadline) {
    metrics = drainer_metrics();
    if (missing_states().empty() &&
        metrics.find("vigil_circuit_breaker_open 1") != std::string::npos)
      break;
    std::this_thread::sleep_for(500ms);
  }
  ASSERT_TRUE(missing_states().empty())
      << "states missing: " << testing::PrintToString(missing_states()) << "\n"
      << metrics << "\n"
      << drainer_->log();
  ASSERT_NE(metrics.find("vigil_circuit_breaker_open 1"), std::string::npos) << metrics;
  const auto sinfo = cluster_->run({"sinfo", "-R", "-h", "-o", "%E|%N"});
  EXPECT_NE(sinfo.out.find("vigil: remap"), std::string::npos) << sinfo.out;

  // Prometheus on loopback, 1 s scrape and rule evaluation, our alert rules loaded.
  prom_port_ = free_port();
  std::ofstream(scratch_.file("prometheus.yml"))
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "rule_files: [" << kSrc << "/dashboards/alerts.yaml]\n"
      << "scrape_configs:\n  - job_name: vigil-drainer\n    static_configs:\n"
      << "      - targets: ['127.0.0.1:" << drainer_port_ << "']\n";
  prometheus_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{"prometheus", "--config.file=" + scratch_.file("prometheus.yml"),
                               "--storage.tsdb.path=" + scratch_.file("tsdb"),
                               "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_)},
      scratch_.file("prometheus.log"));
  ASSERT_TRUE(prometheus_->wait_for_log("Server is ready to receive web requests", 60s))
      << prometheus_->log();
  // ~15 scrapes, so rates and increases have samples.
  bool scraped = false;
  for (int i = 0; i < 60 && !scraped; ++i) {
    std::this_thread::sleep_for(1s);
    const auto r =
        prom("/api/v1/query", {{"query", "count_over_time(up{job=\"vigil-drainer\"}[1m])"}});
    scraped = r.value("status", "") == "success" && !r["data"]["result"].empty() &&
              std::stod(r["data"]["result"][0]["value"][1].get<std::string>()) >= 15;
  }
  ASSERT_TRUE(scraped) << prometheus_->log();

  // Every panel of every dashboard.
  int queries = 0;
  for (const std::string name : {"vigil-fleet", "vigil-node", "vigil-fabric"}) {
    const json d = json::parse(std::ifstream(kSrc + "/dashboards/" + name + ".json"));
    std::map<std::string, std::string> vars = {
        {"__rate_interval", "1m"}, {"__interval", "1s"}, {"__range", "1m"}};
    // Template variables: their label_values() query must have values; a single-value variable
    // takes the first one, the others "All" (.*).
    for (const auto& v : d["templating"]["list"]) {
      if (v["type"] == "datasource") continue;
      const std::string q = v["query"]["query"];
      std::smatch m;
      ASSERT_TRUE(std::regex_match(q, m, std::regex(R"(label_values\((.*), *(\w+)\))")))
          << name << " variable " << v["name"] << ": " << q;
      const std::string matcher = substitute(m[1].str(), vars);
      const auto r = prom("/api/v1/label/" + m[2].str() + "/values", {{"match[]", matcher}});
      ASSERT_EQ(r.value("status", ""), "success") << r.dump();
      ASSERT_FALSE(r["data"].empty()) << name << " variable " << v["name"] << " has no values";
      std::string value = v.value("includeAll", false) ? ".*" : r["data"][0].get<std::string>();
      if (v["name"] == "node" && !v.value("includeAll", false)) value = "gpu-0";
      vars[v["name"]] = value;
    }
    std::set<int> ids;
    for (const auto& p : d["panels"]) {
      EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << name << " duplicate panel id";
      EXPECT_EQ(p["datasource"]["uid"], "${datasource}") << name << " " << p["title"];
      for (const auto& t : p["targets"]) {
        const std::string expr = substitute(t["expr"], vars);
        ++queries;
        const std::time_t now = std::time(nullptr);
        const json r = t.value("instant", false)
                           ? prom("/api/v1/query", {{"query", expr}})
                           : prom("/api/v1/query_range", {{"query", expr},
                                                          {"start", std::to_string(now - 20)},
                                                          {"end", std::to_string(now)},
                                                          {"step", "1"}});
        EXPECT_EQ(r.value("status", ""), "success")
            << name << " / " << p["title"] << ": " << expr << "\n"
            << r.dump();
        EXPECT_FALSE(r["data"]["result"].empty())
            << name << " / " << p["title"] << " returned no data: " << expr;
      }
    }
  }
  // The suspects panels name exactly the suspected switch and the localized node.
  const auto switches = prom("/api/v1/query", {{"query", "vigil_fabric_switch_suspect == 1"}});
  ASSERT_EQ(switches["data"]["result"].size(), 1u) << switches.dump();
  EXPECT_EQ(switches["data"]["result"][0]["metric"]["switch"], "leaf1");
  const auto localized = prom(
      "/api/v1/query",
      {{"query",
        R"(max by (node) (vigil_check_status{check="fabric_allreduce_ib", status="fail"}) == 1)"}});
  ASSERT_EQ(localized["data"]["result"].size(), 1u) << localized.dump();
  EXPECT_EQ(localized["data"]["result"][0]["metric"]["node"], "fab-5");
  EXPECT_GE(queries, 29);
  std::printf("evaluated %d panel queries of 3 dashboards through the Prometheus API\n", queries);

  // Alerts: the breaker and the stale node are live; both must be active (pending: `for`).
  auto active_alerts = [&] {
    std::set<std::string> names;
    const auto r = prom("/api/v1/alerts", {});
    for (const auto& a : r["data"]["alerts"])
      names.insert(a["labels"]["alertname"].get<std::string>());
    return names;
  };
  std::set<std::string> alerts;
  for (int i = 0; i < 20; ++i) {
    alerts = active_alerts();
    if (alerts.count("VigilCircuitBreakerOpen") && alerts.count("VigilStaleReports") &&
        alerts.count("VigilFabricSwitchSuspect"))
      break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_TRUE(alerts.count("VigilCircuitBreakerOpen")) << testing::PrintToString(alerts);
  EXPECT_TRUE(alerts.count("VigilStaleReports")) << testing::PrintToString(alerts);
  EXPECT_TRUE(alerts.count("VigilFabricSwitchSuspect")) << testing::PrintToString(alerts);
  EXPECT_FALSE(alerts.count("VigilDrainerDown")) << testing::PrintToString(alerts);
  EXPECT_FALSE(alerts.count("VigilDrainsSpike")) << "one drain is no spike";

  // Drainer down: up == 0 on the next scrapes -> VigilDrainerDown becomes active.
  feeding_ = false;
  feeder_.join();
  drainer_->stop();
  for (int i = 0; i < 30; ++i) {
    alerts = active_alerts();
    if (alerts.count("VigilDrainerDown")) break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_TRUE(alerts.count("VigilDrainerDown")) << testing::PrintToString(alerts);
}

}  // namespace
