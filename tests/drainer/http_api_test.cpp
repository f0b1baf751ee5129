// HTTP API on 127.0.0.1:0: auth, limits, schema validation (each rejection changes nothing),
// 202 after durability, node views, operator endpoints, and /metrics through promtool. The
// listener's own limits are http_server_test.cpp; the test server is http_test_server.h.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "fake_clock.h"
#include "fakes.h"
#include "http_test_server.h"
#include "slow_clients.h"
#include "temp_dir.h"
#include "vigil/drainer/calibrate.h"
#include "vigil/drainer/journal.h"
#include "vigil/submit/submit.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;
using testing::FakeSlurm;
using testing::make_check;
using testing::make_report;
using testing::SlowClients;
using testing::TempDir;

TEST(HttpApi, valid_report_is_accepted_with_202_and_stored) {
  Server s;
  auto r = s.post(report_body("gpu-0", "r1"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["accepted"], 1);
  EXPECT_EQ(s.journal_records(), 1u);
  auto dup = s.post(report_body("gpu-0", "r1"));
  EXPECT_EQ(dup->status, 202);
  EXPECT_EQ(nlohmann::json::parse(dup->body)["duplicates"], 1);
  EXPECT_EQ(s.journal_records(), 1u);
}

TEST(HttpApi, batch_of_reports_in_one_post) {
  Server s;
  nlohmann::json arr = nlohmann::json::array();
  for (int i = 0; i < 4; ++i)
    arr.push_back(nlohmann::json::parse(report_body("gpu-" + std::to_string(i), "b")));
  auto r = s.post(arr.dump());
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body)["accepted"], 4);
}

// Each report is journaled as it was sent (once strictly read), not rebuilt from the struct: a
// field sent as null, which the struct reads as absent, is still in the journal's line.
TEST(HttpApi, the_journal_holds_each_report_as_it_was_sent) {
  Server s;
  nlohmann::json sent = nlohmann::json::parse(report_body("gpu-2", "as-sent"));
  sent["k8s_node"] = nullptr;
  auto r = s.post(nlohmann::json::array({sent}).dump());
  ASSERT_EQ(r->status, 202) << r->body;
  std::vector<nlohmann::json> reports;
  for (const auto& e : std::filesystem::directory_iterator(s.cfg.state_dir)) {
    if (!e.path().filename().string().starts_with("journal-")) continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      const auto rec = nlohmann::json::parse(line);
      if (rec.value("t", "") == "report") reports.push_back(rec.at("report"));
    }
  }
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].dump(), sent.dump());
}

struct Rejection {
  std::string name;
  std::string body;
  std::string token;
  int want;
  std::string field;  // expected "field" in the answer (400 only)
};

TEST(HttpApi, bad_requests_are_rejected_with_the_right_code_and_change_nothing) {
  Server s;
  auto good = nlohmann::json::parse(report_body("gpu-1", "x"));
  auto no_node = good;
  no_node.erase("node");
  auto bad_status = good;
  bad_status["checks"][0]["status"] = "broken";
  auto bad_version = good;
  bad_version["schema_version"] = 99;
  auto keyword = good;
  keyword["node"] = "ALL";  // slurm_update_node would drain every node
  auto hostlist = good;
  hostlist["node"] = "gpu-[0-3]";
  const std::vector<Rejection> cases = {
      {"no token", report_body("gpu-1", "x"), "", 401, ""},
      {"wrong token", report_body("gpu-1", "x"), "s3cret-token-0123456788", 403, ""},
      {"oversized", std::string(70 * 1024, ' ') + report_body("gpu-1", "x"), kToken, 413, ""},
      {"not json", "{\"node\": ", kToken, 400, ""},
      {"missing field", no_node.dump(), kToken, 400, "/node"},
      {"bad status", bad_status.dump(), kToken, 400, "/checks/0/status"},
      {"wrong schema version", bad_version.dump(), kToken, 400, "/schema_version"},
      {"slurm keyword as node", keyword.dump(), kToken, 400, "/node"},
      {"hostlist as node", hostlist.dump(), kToken, 400, "/node"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = s.post(c.body, c.token);
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, c.want) << r->body;
    if (!c.field.empty()) {
      auto j = nlohmann::json::parse(r->body);
      EXPECT_EQ(j.value("field", ""), c.field) << r->body;
    }
  }
  EXPECT_EQ(s.journal_records(), 0u);
  EXPECT_TRUE(s.d->nodes().empty());
  auto m = s.d->metrics_text();
  EXPECT_NE(m.find(R"(vigil_reports_ingested_total{outcome="unauthorized"} 2)"), std::string::npos)
      << m;
  EXPECT_NE(m.find(R"(vigil_reports_ingested_total{outcome="too_large"} 1)"), std::string::npos);
  EXPECT_NE(m.find(R"(vigil_reports_ingested_total{outcome="invalid"} 6)"), std::string::npos);
  // The same report, sent properly, is then accepted.
  EXPECT_EQ(s.post(report_body("gpu-1", "x"))->status, 202);
}

TEST(HttpApi, not_ready_answers_503) {
  Server s(/*open_drainer=*/false);
  auto r = s.post(report_body("gpu-0", "r1"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(s.cli->Get("/readyz")->status, 503);
  EXPECT_EQ(s.cli->Get("/healthz")->status, 200);
  ASSERT_TRUE(s.d->open().ok());
  EXPECT_EQ(s.cli->Get("/readyz")->status, 200);
}

TEST(HttpApi, node_views_and_operator_endpoints) {
  Server s;
  ASSERT_EQ(s.post(report_body("gpu-2", "a", Status::kFail))->status, 202);
  s.d->process_pending();
  s.d->run_slurm_sink_once();
  httplib::Headers h{{"Authorization", "Bearer " + kToken}};
  EXPECT_EQ(s.cli->Get("/v1/nodes")->status, 401);
  auto all = s.cli->Get("/v1/nodes", h);
  ASSERT_EQ(all->status, 200);
  auto j = nlohmann::json::parse(all->body);
  ASSERT_EQ(j["nodes"].size(), 1u);
  EXPECT_EQ(j["nodes"][0]["state"], "drained");
  auto one = s.cli->Get("/v1/nodes/gpu-2", h);
  ASSERT_EQ(one->status, 200);
  EXPECT_EQ(nlohmann::json::parse(one->body)["drained_by_vigil"], true);
  EXPECT_EQ(s.cli->Get("/v1/nodes/nope", h)->status, 404);
  // Names Slurm would expand are refused before anything looks them up.
  for (const char* bad : {"ALL", "all", "DEFAULT", "gpu-%5B0-3%5D", "gpu-1,gpu-2"}) {
    SCOPED_TRACE(bad);
    auto r = s.cli->Post(std::string("/v1/nodes/") + bad + "/resume", h, "", "application/json");
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(s.cli->Get(std::string("/v1/nodes/") + bad, h)->status, 400);
  }
  auto res = s.cli->Post("/v1/nodes/gpu-2/resume", h, "", "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200) << res->body;
  s.d->run_slurm_sink_once();
  EXPECT_FALSE(s.slurm->get("gpu-2").drain);
  EXPECT_EQ(s.cli->Post("/v1/nodes/gpu-2/resume", h, "", "application/json")->status, 409);
  EXPECT_EQ(s.cli->Post("/v1/breaker/reset", h, "", "application/json")->status, 200);
}

// GET /v1/calibration/{sku}: the healthy figures `vigil-drainer calibrate` proposes floors from.
TEST(HttpApi, calibration_serves_the_healthy_figures_of_a_sku) {
  Server s;
  for (int n = 0; n < 4; ++n) {
    CheckResult gemm;
    gemm.check = "gpu_gemm";
    for (int g = 0; g < 8; ++g) {
      Measurement m;
      m.name = "gemm_bf16_tflops";
      m.unit = "TFLOP/s";
      m.gpu = g;
      m.value = 640 + g;
      gemm.measurements.push_back(m);
    }
    const std::string node = "gpu-" + std::to_string(n);
    ASSERT_EQ(s.post(to_json(make_report(node, "c1", {gemm}, "H100-SXM5-80GB")).dump())->status,
              202);
  }
  s.d->process_pending();
  httplib::Headers h{{"Authorization", "Bearer " + kToken}};
  EXPECT_EQ(s.cli->Get("/v1/calibration/H100-SXM5-80GB")->status, 401);
  auto r = s.cli->Get("/v1/calibration/H100-SXM5-80GB", h);
  ASSERT_EQ(r->status, 200) << r->body;
  auto figures = healthy_figures_from_json(nlohmann::json::parse(r->body));
  ASSERT_TRUE(figures.ok()) << figures.error().to_string();
  ASSERT_EQ(figures.value().size(), 1u) << r->body;
  EXPECT_EQ(figures.value()[0].nodes, 4u);
  EXPECT_EQ(figures.value()[0].runs, 32u);
  EXPECT_DOUBLE_EQ(figures.value()[0].centre, 643.5);
  auto other = s.cli->Get("/v1/calibration/B200-SXM-180GB", h);
  ASSERT_EQ(other->status, 200);
  EXPECT_TRUE(nlohmann::json::parse(other->body)["figures"].empty());
  EXPECT_EQ(s.cli->Get("/v1/calibration/", h)->status, 404);
  EXPECT_EQ(s.cli->Post("/v1/calibration/H100-SXM5-80GB", h, "", "application/json")->status, 405);
}

// GET /v1/classes: the hardware classes and their consensus (classes.h). Six nodes Slurm declares
// gpu:8 with feature ib report 8 active ports and one VBIOS; the site declares that class's
// VBIOS, and a second class no node has (shown with nodes 0).
TEST(HttpApi, classes_serve_each_class_and_its_consensus) {
  Server s(true, [](DrainerConfig& c) {
    c.classes.declared["H100-SXM5-80GB gpu:8 [ib]"].versions["vbios"] = "96.00.89.00.01";
    c.classes.declared["H100-SXM5-80GB gpu:8 [ndr,ib]"].figures["ib_port/active_ports"] = 8;
  });
  s.slurm->add_node("gpu-4");
  s.slurm->add_node("gpu-5");
  s.clock.advance(3600);  // past any Slurm table the drainer read when it opened
  for (int n = 0; n < 6; ++n) {
    auto& node = s.slurm->nodes["gpu-" + std::to_string(n)];
    node.gres = "gpu:8";
    node.features = {"ib"};
    CheckResult ib;
    ib.check = "ib_port";
    Measurement m;
    m.name = "active_ports";
    m.unit = "count";
    m.value = 8;
    ib.measurements.push_back(m);
    const std::string name = "gpu-" + std::to_string(n);
    NodeReport report = make_report(name, "c1", {ib}, "H100-SXM5-80GB");
    for (int g = 0; g < 8; ++g) report.gpus.push_back({g, "", "", "96.00.89.00.01"});
    ASSERT_EQ(s.post(to_json(report).dump())->status, 202);
  }
  s.d->process_pending();
  httplib::Headers h{{"Authorization", "Bearer " + kToken}};
  EXPECT_EQ(s.cli->Get("/v1/classes")->status, 401);
  auto r = s.cli->Get("/v1/classes", h);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto j = nlohmann::json::parse(r->body);
  ASSERT_EQ(j["classes"].size(), 2u) << r->body;
  EXPECT_EQ(j["classes"][0]["class"], "H100-SXM5-80GB gpu:8 [ib]");
  EXPECT_EQ(j["classes"][0]["nodes"], 6);
  EXPECT_EQ(j["classes"][0]["consensus"]["ib_port/active_ports"], 8);
  EXPECT_EQ(j["classes"][0]["versions"]["vbios"], "96.00.89.00.01");
  EXPECT_EQ(j["classes"][0]["declared"]["vbios"], "96.00.89.00.01");
  // Features in another order than the class name's sorted ones: a declaration no node matches.
  EXPECT_EQ(j["classes"][1]["class"], "H100-SXM5-80GB gpu:8 [ndr,ib]");
  EXPECT_EQ(j["classes"][1]["nodes"], 0);
  EXPECT_EQ(j["classes"][1]["declared"]["ib_port/active_ports"], 8);
}

// GET /v1/rechecks: a drain on performance alone, two minutes old, as vigil-submit --rechecks-from
// reads it (requalify.h); an ECC drain is not listed. With the wrong token vigil-submit says why.
TEST(HttpApi, rechecks_list_performance_drains_for_vigil_submit) {
  Server s(true, [](DrainerConfig& c) { c.policy.checks["gpu_gemm"].drain_after = 1; });
  const auto gemm =
      make_check("gpu_gemm", Status::kFail, 500, 640, "TFLOP/s", "VIGIL-SLOW-CONFIRMED");
  ASSERT_EQ(s.post(to_json(make_report("gpu-1", "a", {gemm})).dump())->status, 202);
  ASSERT_EQ(s.post(report_body("gpu-2", "a", Status::kFail))->status, 202);
  s.d->process_pending();
  httplib::Headers h{{"Authorization", "Bearer " + kToken}};
  EXPECT_EQ(s.cli->Get("/v1/rechecks")->status, 401);
  auto r = s.cli->Get("/v1/rechecks", h);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(nlohmann::json::parse(r->body), nlohmann::json::parse(R"({"rechecks": []})"));
  s.clock.advance(120);
  r = s.cli->Get("/v1/rechecks", h);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto j = nlohmann::json::parse(r->body);
  ASSERT_EQ(j["rechecks"].size(), 1u) << r->body;
  EXPECT_EQ(j["rechecks"][0]["node"], "gpu-1");
  EXPECT_EQ(j["rechecks"][0]["why"],
            "requalify: drained 120 s ago on performance alone (gpu_gemm)");
  EXPECT_EQ(s.cli->Post("/v1/rechecks", h, "", "application/json")->status, 405);

  const std::string token_file = s.dir.str() + "/token";
  std::ofstream(token_file) << kToken << "\n";
  s.clock.advance(120);  // listed once: the next listing after the backoff (requalify.h)
  ReportClientOptions drainer;
  drainer.url = "http://127.0.0.1:" + std::to_string(s.port) + "/v1/reports";  // path replaced
  drainer.token_file = token_file;
  auto due = submit::load_rechecks_due(drainer);
  ASSERT_TRUE(due.ok()) << due.error().to_string();
  EXPECT_EQ(*due, (std::vector<submit::DueRecheck>{{"gpu-1", ""}}));
  std::ofstream(token_file, std::ios::trunc) << "wrong-token\n";
  due = submit::load_rechecks_due(drainer);
  ASSERT_FALSE(due.ok());
  EXPECT_NE(due.error().to_string().find("HTTP 403: {\"error\":\"invalid token\"}"),
            std::string::npos)
      << due.error().to_string();
}

// A node the qualify gate holds is listed with the gate's suite, and vigil-submit reads it.
TEST(HttpApi, rechecks_name_the_qualify_gates_suite_for_a_held_node) {
  Server s(true, [](DrainerConfig& c) {
    c.policy.gate.new_nodes = true;
    c.policy.gate.learn_s = 0;
  });
  ASSERT_EQ(s.post(report_body("gpu-2", "a", Status::kPass))->status, 202);
  s.d->process_pending();
  const std::string token_file = s.dir.str() + "/token";
  std::ofstream(token_file) << kToken << "\n";
  ReportClientOptions drainer;
  drainer.url = "http://127.0.0.1:" + std::to_string(s.port) + "/v1/reports";
  drainer.token_file = token_file;
  auto due = submit::load_rechecks_due(drainer);
  ASSERT_TRUE(due.ok()) << due.error().to_string();
  EXPECT_EQ(*due, (std::vector<submit::DueRecheck>{{"gpu-2", "qualify"}}));
}

TEST(HttpApi, with_an_admin_token_operator_endpoints_refuse_the_ingest_token) {
  const std::string admin = "admin-token-abcdefghij0123";
  Server s(true, [&](DrainerConfig& c) { c.admin_token = admin; });
  ASSERT_EQ(s.post(report_body("gpu-2", "a", Status::kFail))->status, 202);
  s.d->process_pending();
  s.d->run_slurm_sink_once();
  ASSERT_TRUE(s.slurm->get("gpu-2").drain);
  httplib::Headers node_token{{"Authorization", "Bearer " + kToken}};
  httplib::Headers admin_token{{"Authorization", "Bearer " + admin}};
  // The ingest token (on every node) can no longer resume a node or close the breaker.
  auto r = s.cli->Post("/v1/nodes/gpu-2/resume", node_token, "", "application/json");
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_EQ(s.cli->Post("/v1/breaker/reset", node_token, "", "application/json")->status, 403);
  s.d->run_slurm_sink_once();
  EXPECT_TRUE(s.slurm->get("gpu-2").drain);
  // It still posts reports and reads state; the admin token does everything.
  EXPECT_EQ(s.cli->Get("/v1/nodes", node_token)->status, 200);
  EXPECT_EQ(s.post(report_body("gpu-1", "b"), admin)->status, 202);
  EXPECT_EQ(s.cli->Post("/v1/nodes/gpu-2/resume", admin_token, "", "application/json")->status,
            200);
  s.d->run_slurm_sink_once();
  EXPECT_FALSE(s.slurm->get("gpu-2").drain);
  EXPECT_EQ(s.cli->Post("/v1/breaker/reset", admin_token, "", "application/json")->status, 200);
}

TEST(HttpApi, metrics_pass_promtool_check_metrics) {
  Server s(true, [](DrainerConfig& c) {
    c.policy.gate.repaired = true;  // the gate's gauge
    c.breaker.max_drains = 100;     // three drains in a small cluster
    c.breaker.max_percent = 100;
  });
  // The reliability figures: gpu-2 drained, resumed by an operator a minute later, drained again.
  ASSERT_EQ(s.post(report_body("gpu-2", "a", Status::kFail))->status, 202);
  s.d->process_pending();
  s.d->run_slurm_sink_once();
  s.clock.advance(60);
  const auto resumed = s.d->resume("gpu-2");
  ASSERT_TRUE(resumed.ok()) << resumed.error().to_string();
  s.d->run_slurm_sink_once();
  ASSERT_EQ(s.post(report_body("gpu-2", "b", Status::kFail))->status, 202);
  s.d->process_pending();
  s.d->run_slurm_sink_once();
  auto r = make_report("gpu-1", "m", {make_check("nvml_ecc", Status::kFail, 3, 0)});
  Measurement m;
  m.name = "busbw";
  m.value = 151.5;
  m.unit = "GB/s";
  m.port = "mlx5_0/1";
  Threshold t;
  t.op = Op::kGe;
  t.fail = 180;
  t.warn = 190;
  t.unit = "GB/s";
  m.threshold = t;
  CheckResult c;
  c.check = "nccl_allreduce_ib";
  c.status = Status::kFail;
  c.measurements = {m};
  c.fault_code = "VIGIL-NCCL-BUSBW";
  r.checks.push_back(c);
  // Eight GPUs' GEMM figures: the fail-slow engine judges them against their peers, which
  // gives vigil_measurement_deviation_ratio a series.
  CheckResult gemm;
  gemm.check = "gpu_gemm";
  gemm.status = Status::kPass;
  for (int g = 0; g < 8; ++g) {
    Measurement gm;
    gm.name = "gemm_bf16_tflops";
    gm.value = g == 3 ? 760 : 800;
    gm.unit = "TFLOP/s";
    gm.gpu = g;
    gemm.measurements.push_back(gm);
  }
  r.checks.push_back(gemm);
  // A fabric job's switch evidence gives vigil_fabric_switch_suspect a series.
  CheckResult fabric;
  fabric.check = "fabric_allreduce_ib";
  fabric.status = Status::kWarn;
  fabric.fault_code = "VIGIL-FABRIC-SWITCH";
  fabric.message = "switch leaf1 suspected";
  Measurement sw;
  sw.name = "switch_suspected";
  sw.value = 1;
  sw.unit = "bool";
  sw.port = "switch:leaf1";
  fabric.measurements = {sw};
  r.checks.push_back(fabric);
  ASSERT_EQ(s.post(to_json(r).dump())->status, 202);
  s.d->process_pending();
  s.d->run_slurm_sink_once();
  auto res = s.cli->Get("/metrics");
  ASSERT_EQ(res->status, 200);
  const std::string& text = res->body;
  for (const auto& d : metric_table())
    EXPECT_NE(text.find("# TYPE " + std::string(d.name) + " " + std::string(d.type)),
              std::string::npos)
        << d.name;
  EXPECT_NE(
      text.find(
          R"(vigil_check_measurement_value{check="nccl_allreduce_ib",gpu="",measurement="busbw",node="gpu-1",port="mlx5_0/1",unit="GB/s"} 151.5)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(bound="warn")"), std::string::npos);
  EXPECT_NE(text.find(R"(vigil_fabric_switch_suspect{switch="leaf1"} 1)"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          R"(vigil_node_state{node="gpu-1",partition="gpu",sku="h100-sxm-80gb",state="drained"} 1)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(vigil_check_status{check="nvml_ecc",node="gpu-1",status="fail"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(vigil_actions_total{action="drain",outcome="ok",sink="slurm"} 3)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(vigil_drain_duration_seconds_count{cause="nvml_ecc"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(vigil_held_node_seconds_total{cause="nvml_ecc"} 60)"), std::string::npos);
  EXPECT_NE(text.find(R"(vigil_incident_interval_seconds_bucket{le="3600"} 1)"), std::string::npos);
  EXPECT_NE(text.find(R"(vigil_qualifying_nodes{cause="repaired"} 0)"), std::string::npos);
#ifdef VIGIL_PROMTOOL
  TempDir d;
  const std::string file = d / "metrics.txt";
  std::ofstream(file) << text;
  const std::string cmd = std::string(VIGIL_PROMTOOL) + " check metrics < " + file + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int rc = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << "promtool check metrics:\n" << out;
#else
  GTEST_SKIP() << "promtool not found at configure time";
#endif
}

}  // namespace
}  // namespace vigil::drainer
