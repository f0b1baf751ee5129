// The Kubernetes REST client (kube::make_kube_api) against the fake API server: TLS + token,
// merge-patch semantics, conditions merged by type, pod lookup, and the error/retry policy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "fake_kube_api_server.h"
#include "k8s_test_support.h"
#include "vigil/kube/kube_api.h"

namespace vigil::drainer {
namespace {

using json = nlohmann::json;
using testing::FakeKubeApiServer;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::TestPki;

class KubeClientTest : public ::testing::Test {
 protected:
  KubeClientTest() {
    server.put_node(
        "gpu-0",
        {{"metadata", {{"annotations", {{"site.example/owner", "team-a"}}}}},
         {"spec", {{"podCIDR", "10.0.0.0/24"}}},
         {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
    server.put_pod("slurm", "slurmd-gpu-0", "gpu-0");
    server.put_pod("slurm", "slurmd-pending", "");
  }

  kube::KubeConfig config() const {
    kube::KubeConfig c;
    c.server = server.url();
    c.token = "good-token";
    c.ca_file = pki.ca_cert_path;
    c.timeout_ms = 2000;
    c.max_retries = 3;
    return c;
  }

  json annotations(const std::string& node) const {
    return server.node(node)["metadata"]["annotations"];
  }

  TempDir dir;
  TestPki pki = testing::make_test_pki(dir.path(), "vigil-test");
  FakeKubeApiServer server{pki, "good-token"};
};

TEST_F(KubeClientTest, annotations_land_with_a_merge_patch_and_keep_others) {
  auto api = kube::make_kube_api(config());
  auto r = api->annotate_node(
      "gpu-0", {{"vigil.io/state", "drained"}, {"vigil.io/reason", "vigil: ecc gpu3 dbe 1>0"}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const json a = annotations("gpu-0");
  EXPECT_EQ(a["vigil.io/state"], "drained");
  EXPECT_EQ(a["vigil.io/reason"], "vigil: ecc gpu3 dbe 1>0");
  EXPECT_EQ(a["site.example/owner"], "team-a");
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "PATCH");
  EXPECT_EQ(reqs[0].path, "/api/v1/nodes/gpu-0");
  EXPECT_EQ(reqs[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(json::parse(reqs[0].body),
            json::parse(R"({"metadata":{"annotations":{"vigil.io/reason":"vigil: ecc gpu3 dbe 1>0",
                                                        "vigil.io/state":"drained"}}})"));
  // The patch touched neither spec nor status.
  EXPECT_EQ(server.node("gpu-0")["spec"]["podCIDR"], "10.0.0.0/24");
  EXPECT_EQ(server.node("gpu-0")["status"]["conditions"].size(), 1u);
}

TEST_F(KubeClientTest, null_value_removes_the_annotation) {
  auto api = kube::make_kube_api(config());
  ASSERT_TRUE(
      api->annotate_node("gpu-0", {{"vigil.io/state", "drained"}, {"vigil.io/summary", "{}"}})
          .ok());
  auto r = api->annotate_node("gpu-0",
                              {{"vigil.io/state", "healthy"}, {"vigil.io/summary", std::nullopt}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const json a = annotations("gpu-0");
  EXPECT_EQ(a["vigil.io/state"], "healthy");
  EXPECT_FALSE(a.contains("vigil.io/summary"));
  EXPECT_TRUE(a.contains("site.example/owner"));
  EXPECT_EQ(
      json::parse(server.requests().back().body)["metadata"]["annotations"]["vigil.io/summary"],
      nullptr);
}

TEST_F(KubeClientTest, condition_is_added_then_replaced_by_type) {
  auto api = kube::make_kube_api(config());
  auto r = api->set_node_condition(
      "gpu-0", {"VigilHealthy", "False", "CheckFailed", "vigil: ecc gpu3 dbe 1>0"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  json conds = server.node("gpu-0")["status"]["conditions"];
  ASSERT_EQ(conds.size(), 2u);
  EXPECT_EQ(conds[0]["type"], "Ready");
  EXPECT_EQ(conds[1]["type"], "VigilHealthy");
  EXPECT_EQ(conds[1]["status"], "False");
  EXPECT_EQ(conds[1]["reason"], "CheckFailed");
  EXPECT_EQ(conds[1]["message"], "vigil: ecc gpu3 dbe 1>0");
  EXPECT_TRUE(conds[1].contains("lastTransitionTime"));
  EXPECT_TRUE(conds[1].contains("lastHeartbeatTime"));
  const json first_transition = conds[1]["lastTransitionTime"];

  // Same status again: still one VigilHealthy entry, transition time kept.
  ASSERT_TRUE(
      api->set_node_condition("gpu-0", {"VigilHealthy", "False", "CheckFailed", "again"}).ok());
  conds = server.node("gpu-0")["status"]["conditions"];
  ASSERT_EQ(conds.size(), 2u);
  EXPECT_EQ(conds[1]["message"], "again");
  EXPECT_EQ(conds[1]["lastTransitionTime"], first_transition);

  ASSERT_TRUE(
      api->set_node_condition("gpu-0", {"VigilHealthy", "True", "ChecksPassed", "all pass"}).ok());
  conds = server.node("gpu-0")["status"]["conditions"];
  ASSERT_EQ(conds.size(), 2u);
  EXPECT_EQ(conds[0]["type"], "Ready");
  EXPECT_EQ(conds[0]["status"], "True");
  EXPECT_EQ(conds[1]["status"], "True");
  EXPECT_EQ(conds[1]["reason"], "ChecksPassed");

  // Each update was a GET followed by a conditional merge patch of the status subresource.
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 6u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].path, "/api/v1/nodes/gpu-0/status");
  EXPECT_EQ(reqs[1].content_type, "application/merge-patch+json");
  EXPECT_TRUE(json::parse(reqs[1].body)["metadata"].contains("resourceVersion"));
  // The status subresource left the annotations alone.
  EXPECT_EQ(annotations("gpu-0")["site.example/owner"], "team-a");
}

TEST_F(KubeClientTest, condition_update_rereads_the_node_after_a_real_conflict) {
  auto api = kube::make_kube_api(config());
  server.touch_node_before_next_patch("gpu-0");  // a kubelet heartbeat lands between GET and PATCH
  auto r = api->set_node_condition("gpu-0", {"VigilHealthy", "True", "ChecksPassed", ""});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);  // GET, PATCH -> 409, GET, PATCH -> 200
  EXPECT_EQ(reqs[2].method, "GET");
  EXPECT_NE(json::parse(reqs[1].body)["metadata"]["resourceVersion"],
            json::parse(reqs[3].body)["metadata"]["resourceVersion"]);
  EXPECT_EQ(server.node("gpu-0")["status"]["conditions"].size(), 2u);
}

TEST_F(KubeClientTest, persistent_conflict_gives_up_after_max_retries) {
  kube::KubeConfig c = config();
  c.max_retries = 2;
  auto api = kube::make_kube_api(c);
  server.inject_fault(409, 100, std::nullopt, "PATCH");
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "warn"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("HTTP 409 Conflict"));
  EXPECT_THAT(r.error().message, HasSubstr("the object has been modified"));
  EXPECT_EQ(server.request_count(), 3u);
}

TEST_F(KubeClientTest, taint_is_set_replaced_and_removed_keeping_other_taints) {
  server.put_node("gpu-3", {{"spec",
                             {{"taints", json::array({{{"key", "site.example/gpu"},
                                                       {"value", "true"},
                                                       {"effect", "NoSchedule"}}})}}}});
  auto api = kube::make_kube_api(config());
  auto r = api->set_node_taint("gpu-3", "vigil.io/unhealthy",
                               kube::NodeTaint{"vigil.io/unhealthy", "ecc", "NoSchedule"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  json taints = server.node("gpu-3")["spec"]["taints"];
  ASSERT_EQ(taints.size(), 2u);
  EXPECT_EQ(taints[0]["key"], "site.example/gpu");
  EXPECT_EQ(taints[1],
            json({{"key", "vigil.io/unhealthy"}, {"value", "ecc"}, {"effect", "NoSchedule"}}));

  // The same taint again changes nothing and writes nothing (GET only).
  server.clear_requests();
  ASSERT_TRUE(api->set_node_taint("gpu-3", "vigil.io/unhealthy",
                                  kube::NodeTaint{"vigil.io/unhealthy", "ecc", "NoSchedule"})
                  .ok());
  ASSERT_EQ(server.request_count(), 1u);
  EXPECT_EQ(server.requests()[0].method, "GET");

  ASSERT_TRUE(api->set_node_taint("gpu-3", "vigil.io/unhealthy",
                                  kube::NodeTaint{"vigil.io/unhealthy", "nvlink", "NoExecute"})
                  .ok());
  taints = server.node("gpu-3")["spec"]["taints"];
  ASSERT_EQ(taints.size(), 2u);
  EXPECT_EQ(taints[1]["value"], "nvlink");
  EXPECT_EQ(taints[1]["effect"], "NoExecute");

  ASSERT_TRUE(api->set_node_taint("gpu-3", "vigil.io/unhealthy", std::nullopt).ok());
  taints = server.node("gpu-3")["spec"]["taints"];
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0]["key"], "site.example/gpu");

  // Removing the last taint deletes the field (merge-patch null).
  server.put_node("gpu-4", {{"spec",
                             {{"taints", json::array({{{"key", "vigil.io/unhealthy"},
                                                       {"value", "x"},
                                                       {"effect", "NoSchedule"}}})}}}});
  ASSERT_TRUE(api->set_node_taint("gpu-4", "vigil.io/unhealthy", std::nullopt).ok());
  EXPECT_FALSE(server.node("gpu-4")["spec"].contains("taints"));

  auto bad = api->set_node_taint("gpu-3", "vigil.io/unhealthy",
                                 kube::NodeTaint{"vigil.io/unhealthy", "x", "Sometimes"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("NoSchedule, PreferNoSchedule or NoExecute"));
}

TEST_F(KubeClientTest, pod_lookup_returns_spec_node_name) {
  auto api = kube::make_kube_api(config());
  auto node = api->pod_node_name("slurm", "slurmd-gpu-0");
  ASSERT_TRUE(node.ok()) << node.error().to_string();
  EXPECT_EQ(node.value(), "gpu-0");
  EXPECT_EQ(server.requests().back().path, "/api/v1/namespaces/slurm/pods/slurmd-gpu-0");

  auto pending = api->pod_node_name("slurm", "slurmd-pending");
  ASSERT_FALSE(pending.ok());
  EXPECT_THAT(pending.error().message, HasSubstr("not scheduled"));

  auto missing = api->pod_node_name("slurm", "slurmd-gpu-7");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("pod \"slurm/slurmd-gpu-7\" not found"));
  EXPECT_THAT(missing.error().message, HasSubstr("HTTP 404"));
}

TEST_F(KubeClientTest, missing_node_is_an_error_without_retry) {
  auto api = kube::make_kube_api(config());
  auto r = api->annotate_node("gpu-9", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("node \"gpu-9\" not found"));
  EXPECT_THAT(r.error().message, HasSubstr("HTTP 404 NotFound: nodes \"gpu-9\" not found"));
  EXPECT_EQ(r.error().where, "PATCH /api/v1/nodes/gpu-9");
  EXPECT_EQ(server.request_count(), 1u);

  auto c = api->set_node_condition("gpu-9", {"VigilHealthy", "True", "ChecksPassed", ""});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("not found"));
  EXPECT_EQ(server.request_count(), 2u);
}

TEST_F(KubeClientTest, server_errors_are_retried_then_succeed) {
  auto api = kube::make_kube_api(config());
  server.inject_fault(500, 2);
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "warn"}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(server.request_count(), 3u);
  EXPECT_EQ(annotations("gpu-0")["vigil.io/state"], "warn");
}

TEST_F(KubeClientTest, server_errors_beyond_the_retry_budget_are_reported) {
  kube::KubeConfig c = config();
  c.max_retries = 2;
  auto api = kube::make_kube_api(c);
  server.inject_fault(500, 10);
  const auto start = std::chrono::steady_clock::now();
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "warn"}});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("after 3 attempts"));
  EXPECT_THAT(r.error().message,
              HasSubstr("HTTP 500 InternalError: Internal error occurred: injected fault"));
  EXPECT_EQ(server.request_count(), 3u);
  // Exponential backoff between the attempts: 100 ms then 200 ms.
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_FALSE(annotations("gpu-0").contains("vigil.io/state"));
}

TEST_F(KubeClientTest, too_many_requests_waits_for_retry_after) {
  auto api = kube::make_kube_api(config());
  server.inject_fault(429, 1, 1);
  const auto start = std::chrono::steady_clock::now();
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(server.request_count(), 2u);
  // Retry-After: 1 is honoured (the backoff alone would have waited 100 ms).
  EXPECT_GE(elapsed, std::chrono::milliseconds(1000));
  EXPECT_LT(elapsed, std::chrono::milliseconds(5000));
}

TEST_F(KubeClientTest, wrong_token_is_an_error_naming_the_token) {
  kube::KubeConfig c = config();
  c.token = "stale-token";
  auto api = kube::make_kube_api(c);
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("HTTP 401 Unauthorized"));
  EXPECT_THAT(r.error().message, HasSubstr("token"));
  EXPECT_EQ(server.request_count(), 1u);
  EXPECT_EQ(server.requests()[0].authorization, "Bearer stale-token");
  EXPECT_FALSE(annotations("gpu-0").contains("vigil.io/state"));
}

TEST_F(KubeClientTest, forbidden_names_the_rbac_verbs_needed) {
  auto api = kube::make_kube_api(config());
  server.inject_fault(403, 1);
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("HTTP 403 Forbidden"));
  EXPECT_THAT(r.error().message, HasSubstr("needs RBAC verb \"patch\" on resource \"nodes\""));
  EXPECT_EQ(server.request_count(), 1u);

  server.inject_fault(403, 1, std::nullopt, "PATCH");
  auto c = api->set_node_condition("gpu-0", {"VigilHealthy", "True", "ChecksPassed", ""});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("\"patch\" on \"nodes/status\""));
  EXPECT_EQ(c.error().where, "PATCH /api/v1/nodes/gpu-0/status");
}

TEST_F(KubeClientTest, wrong_ca_fails_tls_verification_before_any_request) {
  TestPki other = testing::make_test_pki(dir.path(), "other");
  kube::KubeConfig c = config();
  c.ca_file = other.ca_cert_path;
  auto api = kube::make_kube_api(c);
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("TLS verification"));
  EXPECT_THAT(r.error().message, HasSubstr(other.ca_cert_path));
  EXPECT_EQ(server.request_count(), 0u);

  // The same wrong CA with verification switched off reaches the server.
  c.insecure_skip_verify = true;
  auto insecure = kube::make_kube_api(c);
  ASSERT_TRUE(insecure->annotate_node("gpu-0", {{"vigil.io/state", "drained"}}).ok());
}

TEST_F(KubeClientTest, unreachable_server_is_retried_then_reported) {
  kube::KubeConfig c = config();
  c.server = "https://127.0.0.1:1";  // nothing listens on port 1
  c.max_retries = 1;
  auto api = kube::make_kube_api(c);
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("could not reach the API server https://127.0.0.1:1"));
  EXPECT_THAT(r.error().message, HasSubstr("after 2 attempts"));
}

TEST_F(KubeClientTest, slow_answers_hit_the_configured_timeout) {
  kube::KubeConfig c = config();
  c.timeout_ms = 200;
  c.max_retries = 1;
  auto api = kube::make_kube_api(c);
  server.delay_next(std::chrono::milliseconds(1500), 2);
  const auto start = std::chrono::steady_clock::now();
  auto r = api->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("no answer within 200 ms"));
  EXPECT_THAT(r.error().message, HasSubstr("after 2 attempts"));
  // Two 200 ms timeouts and one 100 ms backoff, far below the server's 1.5 s delay.
  EXPECT_LT(elapsed, std::chrono::milliseconds(1200));
}

TEST_F(KubeClientTest, invalid_names_and_urls_are_rejected_before_sending) {
  auto api = kube::make_kube_api(config());
  auto r = api->annotate_node("gpu-0/status", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("not a valid Kubernetes node name"));
  auto s = api->set_node_condition("gpu-0", {"VigilHealthy", "Maybe", "X", ""});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("True, False or Unknown"));
  EXPECT_EQ(server.request_count(), 0u);

  kube::KubeConfig c = config();
  c.server = "ftp://example";
  auto bad = kube::make_kube_api(c)->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("invalid API server URL"));

  c.server = "http://api.example:8080";
  auto clear = kube::make_kube_api(c)->annotate_node("gpu-0", {{"vigil.io/state", "drained"}});
  ASSERT_FALSE(clear.ok());
  EXPECT_THAT(clear.error().message,
              HasSubstr("refusing to send the bearer token over plain http"));
}

// The fake itself must behave like the real API server where the client relies on it.
TEST(FakeKubeApiServer, rejects_other_patch_types_and_stale_resource_versions) {
  TempDir dir;
  TestPki pki = testing::make_test_pki(dir.path(), "fake");
  FakeKubeApiServer server(pki, "t");
  server.put_node("n1");
  httplib::SSLClient http("127.0.0.1", server.port());
  http.set_ca_cert_path(pki.ca_cert_path);
  http.enable_server_certificate_verification(true);

  auto unauth = http.Get("/api/v1/nodes/n1");
  ASSERT_TRUE(unauth);
  EXPECT_EQ(unauth->status, 401);
  EXPECT_EQ(json::parse(unauth->body)["kind"], "Status");

  http.set_bearer_token_auth("t");
  auto strategic = http.Patch("/api/v1/nodes/n1", R"({"metadata":{"labels":{"a":"b"}}})",
                              "application/strategic-merge-patch+json");
  ASSERT_TRUE(strategic);
  EXPECT_EQ(strategic->status, 415);

  const std::string rv = server.node("n1")["metadata"]["resourceVersion"];
  auto stale =
      http.Patch("/api/v1/nodes/n1", R"({"metadata":{"resourceVersion":"1","labels":{"a":"b"}}})",
                 "application/merge-patch+json");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(server.node("n1")["metadata"]["resourceVersion"], rv);

  auto fresh =
      http.Patch("/api/v1/nodes/n1",
                 json{{"metadata", {{"resourceVersion", rv}, {"labels", {{"a", "b"}}}}}}.dump(),
                 "application/merge-patch+json");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->status, 200);
  EXPECT_EQ(server.node("n1")["metadata"]["labels"]["a"], "b");
  EXPECT_NE(server.node("n1")["metadata"]["resourceVersion"], rv);
}

}  // namespace
}  // namespace vigil::drainer

namespace vigil::drainer {

TEST_F(KubeClientTest, a_rotated_token_file_is_followed_without_a_restart) {
  kube::KubeConfig c = config();
  c.token = "token-read-at-start-then-rotated";
  c.token_file = dir.write("token", "good-token\n");
  auto api = kube::make_kube_api(c);
  // The file changed since the config was read: the current token is used.
  ASSERT_TRUE(api->annotate_node("gpu-0", {{"vigil.dev/state", "healthy"}}).ok());
  auto bump = [&](const std::string& token, int seconds) {
    dir.write("token", token);
    std::filesystem::last_write_time(c.token_file, std::filesystem::file_time_type::clock::now() +
                                                       std::chrono::seconds(seconds));
  };
  bump("revoked-token", 1);
  auto r = api->annotate_node("gpu-0", {{"vigil.dev/state", "healthy"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().to_string(), HasSubstr("401"));
  bump("good-token", 2);
  EXPECT_TRUE(api->annotate_node("gpu-0", {{"vigil.dev/state", "drained"}}).ok());
  EXPECT_EQ(annotations("gpu-0")["vigil.dev/state"], "drained");
}

}  // namespace vigil::drainer
