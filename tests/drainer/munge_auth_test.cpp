// auth.mode munge without a munged: the decoder is a fake that returns what a test says munged
// would (status, uid, origin, payload), so every refusal and the address book's refresh rule
// are exercised here; tests/munge/ and tests/integration/ run the same code with real munged.
#include "vigil/drainer/munge_auth.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "fake_clock.h"
#include "fakes.h"
#include "http_api.h"
#include "temp_dir.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;
using testing::FakeSlurm;
using testing::make_check;
using testing::make_report;

// Credentials are the keys of a table: "cred-N" -> what decoding it gives.
class FakeDecoder final : public munge::Decoder {
 public:
  munge::Decoded decode(const std::string& credential) override {
    auto it = table.find(credential);
    if (it == table.end()) {
      munge::Decoded d;
      d.status = munge::DecodeStatus::kInvalid;
      d.error = "Invalid credential format";
      return d;
    }
    decoded++;
    return it->second;
  }
  std::map<std::string, munge::Decoded> table;
  int decoded = 0;
};

MungeAuthSettings settings() {
  MungeAuthSettings s;
  s.enabled = true;
  s.allowed_uids = {0, 64030};
  s.admin_uids = {0};
  s.address_refresh_s = 300;
  s.miss_refresh_min_s = 10;
  return s;
}

std::string body_of(const NodeReport& r) { return to_json(r).dump(); }

struct Fixture {
  FakeClock clock;
  std::shared_ptr<FakeSlurm> slurm = std::make_shared<FakeSlurm>();
  FakeDecoder* decoder = nullptr;
  std::shared_ptr<NodeAddresses> book;
  std::unique_ptr<MungeAuth> auth;
  std::map<std::string, std::vector<std::string>> dns;  // the injected resolver's answers
  int lookups = 0;

  explicit Fixture(MungeAuthSettings s = settings()) {
    for (int i = 0; i < 4; ++i) {
      slurm->add_node("gpu-" + std::to_string(i));
      slurm->set("gpu-" + std::to_string(i), [&](slurm::SlurmNodeInfo& n) {
        n.address = "10.0.0." + std::to_string(i + 1);
        n.hostname = "host-" + std::to_string(i);
      });
    }
    dns["host-3"] = {"10.9.9.3"};  // gpu-3's hostname resolves to a second address
    auto dec = std::make_unique<FakeDecoder>();
    decoder = dec.get();
    book = std::make_shared<NodeAddresses>(
        [this] { return slurm->load_nodes(); }, clock, s.address_refresh_s, s.miss_refresh_min_s,
        [this](const std::string& h) {
          lookups++;
          auto it = dns.find(h);
          return it == dns.end() ? std::vector<std::string>{} : it->second;
        });
    auth = std::make_unique<MungeAuth>(s, std::move(dec), book);
  }

  // A credential munged would decode as made for `body` at `origin` by `uid`.
  std::string cred(const std::string& body, const std::string& origin, uint32_t uid = 0,
                   munge::DecodeStatus st = munge::DecodeStatus::kOk,
                   const std::string& path = "/v1/reports", const std::string& method = "POST") {
    const std::string c = "cred-" + std::to_string(decoder->table.size());
    munge::Decoded d;
    d.status = st;
    d.uid = uid;
    d.origin = origin;
    d.payload = munge::request_payload(method, path, body);
    decoder->table[c] = d;
    return "Munge " + c;
  }

  std::optional<AuthRefusal> post(const std::string& authz, const std::vector<NodeReport>& rs,
                                  const std::string& body) {
    return auth->verify_reports(authz, "/v1/reports", body, rs);
  }
};

TEST(MungeAuth, report_signed_at_its_own_node_is_accepted) {
  Fixture f;
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  EXPECT_FALSE(f.post(f.cred(body, "10.0.0.2"), {r}, body));
}

TEST(MungeAuth, report_for_another_node_is_a_forged_origin) {
  Fixture f;
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  auto refused = f.post(f.cred(body, "10.0.0.1"), {r}, body);  // signed on gpu-0
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_EQ(refused->reason, "forged_origin");
  EXPECT_NE(refused->message.find("10.0.0.1"), std::string::npos) << refused->message;
  EXPECT_NE(refused->message.find("NodeAddr 10.0.0.2"), std::string::npos) << refused->message;
}

TEST(MungeAuth, a_batch_with_one_foreign_node_is_refused_whole) {
  Fixture f;
  auto a = make_report("gpu-0", "run-a", {make_check("nvml_ecc", Status::kPass)});
  auto b = make_report("gpu-2", "run-b", {make_check("nvml_ecc", Status::kFail)});
  const std::string body = nlohmann::json::array({to_json(a), to_json(b)}).dump();
  auto refused = f.post(f.cred(body, "10.0.0.1"), {a, b}, body);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, "forged_origin");
}

TEST(MungeAuth, node_hostname_is_resolved_once_per_table_load) {
  Fixture f;
  auto r = make_report("gpu-3", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  EXPECT_FALSE(f.post(f.cred(body, "10.9.9.3"), {r}, body));
  EXPECT_FALSE(f.post(f.cred(body, "10.9.9.3"), {r}, body));
  EXPECT_EQ(f.lookups, 2);  // NodeAddr and NodeHostname of gpu-3, once
}

TEST(MungeAuth, munged_refusals_have_their_own_reasons) {
  Fixture f;
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  const std::pair<munge::DecodeStatus, std::string> cases[] = {
      {munge::DecodeStatus::kReplayed, "replayed"},
      {munge::DecodeStatus::kExpired, "expired"},
      {munge::DecodeStatus::kRewound, "rewound"},
      {munge::DecodeStatus::kInvalid, "invalid_credential"}};
  for (const auto& [st, reason] : cases) {
    auto refused = f.post(f.cred(body, "10.0.0.2", 0, st), {r}, body);
    ASSERT_TRUE(refused) << reason;
    EXPECT_EQ(refused->status, 403);
    EXPECT_EQ(refused->reason, reason);
  }
  auto garbage = f.post("Munge not-a-credential", {r}, body);
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->reason, "invalid_credential");
  auto none = f.post("Bearer some-token", {r}, body);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->reason, "missing_credential");
}

TEST(MungeAuth, munged_unreachable_is_503_not_a_forgery) {
  Fixture f;
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  auto refused = f.post(f.cred(body, "", 0, munge::DecodeStatus::kUnavailable), {r}, body);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->reason, "munge_unavailable");
}

TEST(MungeAuth, credential_of_another_body_or_path_is_refused) {
  Fixture f;
  auto pass = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  auto fail = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kFail)});
  // A genuine credential of gpu-1 for a passing report, sent with a failing body.
  auto refused = f.post(f.cred(body_of(pass), "10.0.0.2"), {fail}, body_of(fail));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, "payload_mismatch");
  auto other_path =
      f.post(f.cred(body_of(pass), "10.0.0.2", 0, munge::DecodeStatus::kOk, "/v1/breaker/reset"),
             {pass}, body_of(pass));
  ASSERT_TRUE(other_path);
  EXPECT_EQ(other_path->reason, "payload_mismatch");
}

TEST(MungeAuth, uid_must_be_allowed) {
  Fixture f;
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  EXPECT_FALSE(f.post(f.cred(body, "10.0.0.2", 64030), {r}, body));
  auto refused = f.post(f.cred(body, "10.0.0.2", 1000), {r}, body);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, "uid_not_allowed");
  EXPECT_NE(refused->message.find("uid 1000"), std::string::npos);
}

TEST(MungeAuth, loopback_and_null_origins_are_refused_unless_allowed) {
  Fixture f;
  f.slurm->set("gpu-1", [](slurm::SlurmNodeInfo& n) { n.address = "127.0.1.2"; });
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  auto loop = f.post(f.cred(body, "127.0.1.2"), {r}, body);
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->reason, "loopback_origin");
  auto null = f.post(f.cred(body, "0.0.0.0"), {r}, body);
  ASSERT_TRUE(null);
  EXPECT_EQ(null->reason, "forged_origin");

  MungeAuthSettings s = settings();
  s.allow_loopback_origin = true;
  Fixture g(s);
  g.slurm->set("gpu-1", [](slurm::SlurmNodeInfo& n) { n.address = "127.0.1.2"; });
  EXPECT_FALSE(g.post(g.cred(body, "127.0.1.2"), {r}, body));
  auto other = g.post(g.cred(body, "127.0.1.1"), {r}, body);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->reason, "forged_origin");
}

TEST(MungeAuth, a_miss_reloads_slurms_table_at_most_every_miss_refresh_min_s) {
  Fixture f;
  auto r = make_report("gpu-9", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  auto unknown = f.post(f.cred(body, "10.0.0.10"), {r}, body);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->reason, "unknown_node");
  const int loads = f.book->refreshes();
  for (int i = 0; i < 50; ++i) (void)f.post(f.cred(body, "10.0.0.10"), {r}, body);
  EXPECT_EQ(f.book->refreshes(), loads) << "forged reports must not turn into RPCs";
  // The node is added to Slurm; once miss_refresh_min_s has passed the next miss reloads.
  f.slurm->add_node("gpu-9");
  f.slurm->set("gpu-9", [](slurm::SlurmNodeInfo& n) { n.address = "10.0.0.10"; });
  EXPECT_TRUE(f.post(f.cred(body, "10.0.0.10"), {r}, body));
  f.clock.advance(10);
  EXPECT_FALSE(f.post(f.cred(body, "10.0.0.10"), {r}, body));
  EXPECT_EQ(f.book->refreshes(), loads + 1);
}

TEST(MungeAuth, readdressed_node_is_picked_up_by_the_periodic_reload) {
  Fixture f;
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  EXPECT_FALSE(f.post(f.cred(body, "10.0.0.2"), {r}, body));
  f.slurm->set("gpu-1", [](slurm::SlurmNodeInfo& n) { n.address = "10.0.1.2"; });
  f.clock.advance(300);
  auto old = f.post(f.cred(body, "10.0.0.2"), {r}, body);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->reason, "forged_origin");
  EXPECT_FALSE(f.post(f.cred(body, "10.0.1.2"), {r}, body));
}

TEST(MungeAuth, slurm_unreachable_before_the_first_load_is_503) {
  Fixture f;
  f.slurm->reachable = false;
  auto r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", Status::kPass)});
  const std::string body = body_of(r);
  auto refused = f.post(f.cred(body, "10.0.0.2"), {r}, body);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->reason, "slurm_unavailable");
}

TEST(MungeAuth, operator_requests_need_an_admin_uid) {
  Fixture f;
  const std::string path = "/v1/nodes/gpu-1/resume";
  auto as = [&](uint32_t uid) {
    return f.auth->verify_request(f.cred("", "10.0.0.1", uid, munge::DecodeStatus::kOk, path),
                                  "POST", path, "", true);
  };
  EXPECT_FALSE(as(0));
  auto node_uid = as(64030);  // allowed to post reports, not to resume
  ASSERT_TRUE(node_uid);
  EXPECT_EQ(node_uid->reason, "uid_not_allowed");
  // Reading the state takes either list.
  EXPECT_FALSE(f.auth->verify_request(
      f.cred("", "10.0.0.1", 64030, munge::DecodeStatus::kOk, "/v1/nodes", "GET"), "GET",
      "/v1/nodes", "", false));
  // A resume credential cannot reset the breaker.
  auto moved = f.auth->verify_request(f.cred("", "10.0.0.1", 0, munge::DecodeStatus::kOk, path),
                                      "POST", "/v1/breaker/reset", "", true);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->reason, "payload_mismatch");
}

// Through the HTTP API: a forged passing report is 403, counted by reason, and changes nothing.
TEST(MungeAuthHttp, forged_report_is_403_counted_and_changes_nothing) {
  testing::TempDir dir;
  Fixture f;
  DrainerConfig cfg;
  cfg.auth_enabled = true;
  cfg.munge = settings();
  cfg.state_dir = dir.str();
  cfg.policy = default_policy();
  Drainer d(cfg, f.slurm, nullptr, f.clock);
  ASSERT_TRUE(d.open().ok());
  auto owned = std::shared_ptr<MungeAuth>(std::move(f.auth));
  HttpApi api(d, cfg, owned);

  auto ecc = make_report("gpu-1", "run-ecc", {make_check("nvml_ecc", Status::kFail)});
  HttpRequest req{"POST", "/v1/reports", f.cred(body_of(ecc), "10.0.0.2"), std::nullopt,
                  body_of(ecc)};
  EXPECT_EQ(api.handle(req).status, 202);
  d.process_pending();
  d.run_slurm_sink_once();
  ASSERT_TRUE(f.slurm->get("gpu-1").drain);

  for (int i = 0; i < 3; ++i) {  // three forged passing reports, signed on gpu-0
    auto pass = make_report("gpu-1", "run-pass-" + std::to_string(i),
                            {make_check("nvml_ecc", Status::kPass)});
    HttpRequest forged{"POST", "/v1/reports", f.cred(body_of(pass), "10.0.0.1"), std::nullopt,
                       body_of(pass)};
    auto reply = api.handle(forged);
    EXPECT_EQ(reply.status, 403) << reply.body;
    EXPECT_NE(reply.body.find("not an address of gpu-1"), std::string::npos) << reply.body;
  }
  d.process_pending();
  d.run_slurm_sink_once();
  EXPECT_TRUE(f.slurm->get("gpu-1").drain) << "forged passing reports resumed the node";
  ASSERT_TRUE(d.node("gpu-1"));
  EXPECT_EQ(d.node("gpu-1")->consecutive_passes, 0);
  EXPECT_EQ(d.node("gpu-1")->last_run_id, "run-ecc");
  const std::string m = d.metrics_text();
  EXPECT_NE(m.find(R"(vigil_reports_rejected_total{reason="forged_origin"} 3)"), std::string::npos)
      << m;
  EXPECT_NE(m.find(R"(vigil_reports_rejected_total{reason="replayed"} 0)"), std::string::npos);

  // Without any credential: 401 before the body is read.
  HttpRequest bare{"POST", "/v1/reports", "", std::nullopt, ""};
  auto early = api.before_body(bare);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 401);
  // The operator endpoint takes a credential of an admin uid only.
  const std::string path = "/v1/nodes/gpu-1/resume";
  HttpRequest by_node{"POST", path, f.cred("", "10.0.0.2", 64030, munge::DecodeStatus::kOk, path),
                      std::nullopt, ""};
  EXPECT_EQ(api.handle(by_node).status, 403);
  EXPECT_TRUE(f.slurm->get("gpu-1").drain);
  HttpRequest by_admin{"POST", path, f.cred("", "10.0.0.5", 0, munge::DecodeStatus::kOk, path),
                       std::nullopt, ""};
  auto ok = api.handle(by_admin);
  EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace vigil::drainer
