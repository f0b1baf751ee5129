// Config: parse -> defaults -> validate; errors name file, line and field.
#include "vigil/drainer/config_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "test_pki.h"

namespace vigil::drainer {
namespace {

TEST(Config, auth_disabled_gives_defaults) {
  auto c = parse_config("auth: disabled\n", "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_FALSE(c->auth_enabled);
  EXPECT_EQ(c->kubernetes.annotation_prefix, "vigil.dev/");
  EXPECT_EQ(c->policy.for_check("nvml_ecc").drain_after, 1);           // fatal
  EXPECT_EQ(c->policy.for_check("nccl_allreduce_ib").drain_after, 3);  // noisy
  EXPECT_EQ(c->policy.for_check("something_else").drain_after, 2);     // default
}

TEST(Config, slow_verdicts_drain_after_their_own_counts) {
  auto c = parse_config("auth: disabled\n", "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_TRUE(c->detection.enabled);
  // A performance check waits 3 reports for its absolute floor, but a confirmed slow verdict
  // drains after 1 and an unconfirmed one after 2 (docs/detection.md).
  EXPECT_EQ(c->policy.for_check("gpu_gemm").drain_after, 3);
  EXPECT_EQ(c->policy.for_check("gpu_gemm", kSlowConfirmedFaultCode).drain_after, 1);
  EXPECT_EQ(c->policy.for_check("gpu_gemm", kSlowFaultCode).drain_after, 2);
  auto custom = parse_config(
      "auth: disabled\ndetection:\n  unconfirmed_drain_after: 3\n  engine:\n    min_fleet: 50\n"
      "    margins: {gemm: {warn: 0.03, fail: 0.06}}\n",
      "d.yaml");
  ASSERT_TRUE(custom.ok()) << custom.error().to_string();
  EXPECT_EQ(custom->policy.for_check("gpu_hbm", kSlowFaultCode).drain_after, 3);
  EXPECT_EQ(custom->detection.engine.min_fleet, 50);
  EXPECT_DOUBLE_EQ(custom->detection.engine.margins.at("gemm").fail, 0.06);
}

TEST(Config, repair_is_off_by_default_and_its_errors_name_the_field) {
  auto c = parse_config("auth: disabled\n", "d.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->repair.reboot);
  auto on = parse_config("auth: disabled\nrepair: {reboot: true, max_in_repair: 4}\n", "d.yaml");
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_TRUE(on->repair.reboot);
  EXPECT_EQ(on->repair.max_in_repair, 4);
  EXPECT_EQ(on->repair.reboot_timeout_s, 3600);
  struct Case {
    std::string yaml, want;
  };
  const Case cases[] = {
      {"auth: disabled\nrepair: {reboot: true, max_in_repair: 0}\n",
       "d.yaml:2: repair.max_in_repair: must be >= 1"},
      {"auth: disabled\nrepair: {reboot_timeout_s: 5}\n", "repair.reboot_timeout_s: must be >= 60"},
      {"auth: disabled\nrepair: {reboots: true}\n", "repair.reboots: unknown key"},
      {"auth: disabled\nslurm: {backend: rest, rest: {url: 'http://127.0.0.1:1'}}\n"
       "repair: {reboot: true}\n",
       "repair.reboot: needs slurm.backend libslurm"},
  };
  for (const auto& k : cases) {
    auto r = parse_config(k.yaml, "d.yaml");
    ASSERT_FALSE(r.ok()) << k.yaml;
    EXPECT_NE(r.error().message.find(k.want), std::string::npos)
        << "want '" << k.want << "' in: " << r.error().message;
  }
}

TEST(Config, auth_is_required_unless_explicitly_disabled) {
  auto c = parse_config("listen: {port: 9000}\n", "d.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("auth"), std::string::npos) << c.error().message;
  auto c2 = parse_config("auth: maybe\n", "d.yaml");
  ASSERT_FALSE(c2.ok());
  EXPECT_NE(c2.error().message.find("d.yaml:1: auth"), std::string::npos) << c2.error().message;
}

TEST(Config, token_file_is_loaded_and_validated) {
  auto dir = std::filesystem::temp_directory_path() / ("vigil-cfg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token") << "0123456789abcdef0123\n";
  std::ofstream(dir / "short") << "abc\n";
  auto ok = parse_config("auth:\n  token_file: " + (dir / "token").string() + "\n", "x.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->token, "0123456789abcdef0123");
  auto bad = parse_config("auth:\n  token_file: " + (dir / "short").string() + "\n", "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("x.yaml:2: auth.token_file"), std::string::npos)
      << bad.error().message;
  auto missing = parse_config("auth:\n  token_file: /nonexistent/t\n", "x.yaml");
  ASSERT_FALSE(missing.ok());
  std::ofstream(dir / "admin") << "admin-0123456789abcdef\n";
  const std::string tok = "auth:\n  token_file: " + (dir / "token").string() + "\n";
  auto admin =
      parse_config(tok + "  admin_token_file: " + (dir / "admin").string() + "\n", "x.yaml");
  ASSERT_TRUE(admin.ok()) << admin.error().to_string();
  EXPECT_EQ(admin->admin_token, "admin-0123456789abcdef");
  auto same =
      parse_config(tok + "  admin_token_file: " + (dir / "token").string() + "\n", "x.yaml");
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.error().message.find("x.yaml:3: auth.admin_token_file: must differ"),
            std::string::npos)
      << same.error().message;
  std::filesystem::remove_all(dir);
}

struct BadCase {
  std::string yaml;
  std::string want;  // substring of the error: "<file>:<line>: <field>"
};

TEST(Config, errors_name_file_line_and_field) {
  const std::vector<BadCase> cases = {
      {"auth: disabled\nlisten:\n  port: 70000\n", "c.yaml:3: listen.port"},
      {"auth: disabled\nlisten:\n  port: abc\n",
       "c.yaml:3: listen.port: must be an integer, got 'abc'"},
      // The one strict reader's rules (vigil/config/strict_yaml.h), as for the SKU files: YAML
      // 1.1's yes/on are not booleans here, and a fraction is not an integer.
      {"auth: disabled\ndry_run: yes\n", "c.yaml:2: dry_run: must be true or false, got 'yes'"},
      {"auth: disabled\nbreaker:\n  max_drains: 2.5\n",
       "c.yaml:3: breaker.max_drains: must be an integer, got '2.5'"},
      {"auth: disabled\nbogus: 1\n", "c.yaml:2: bogus: unknown key"},
      {"auth: disabled\nbreaker:\n  max_percent: 0\n", "c.yaml:3: breaker.max_percent"},
      {"auth: disabled\nbreaker:\n  max_drains: 0\n", "c.yaml:3: breaker.max_drains"},
      {"auth: disabled\nbreaker:\n  windw_s: 5\n", "c.yaml:3: breaker.windw_s: unknown key"},
      {"auth: disabled\npolicy:\n  checks:\n    gpu_hbm:\n      drain_after: 0\n",
       "c.yaml:5: policy.checks.gpu_hbm.drain_after: must be >= 1"},
      {"auth: disabled\npolicy:\n  staleness_s: -1\n", "c.yaml:3: policy.staleness_s"},
      {"auth: disabled\npolicy:\n  requalify_after_s: 30000\n",
       "policy.requalify_window_s: must be >= policy.requalify_after_s >= 0"},
      {"auth: disabled\nslurm: {enabled: true}\ngate:\n  suite: quick\n",
       "c.yaml:4: gate.suite: must be qualify or full"},
      {"auth: disabled\nslurm: {enabled: true}\ngate:\n  retry_s: 5\n",
       "c.yaml:4: gate.retry_s: must be >= 60"},
      {"auth: disabled\nslurm: {enabled: true}\ngate:\n  newnodes: true\n",
       "c.yaml:4: gate.newnodes: unknown key"},
      {"auth: disabled\nslurm: {enabled: false}\ngate: {new_nodes: true}\n",
       "gate: needs slurm.enabled"},
      {"auth: disabled\nkubernetes:\n  node_mapping: magic\n", "c.yaml:3: kubernetes.node_mapping"},
      {"auth: disabled\nkubernetes:\n  node_mapping: pod-lookup\n", "kubernetes.pod_namespace"},
      {"auth: disabled\nkubernetes:\n  annotation_prefix: vigil\n",
       "c.yaml:3: kubernetes.annotation_prefix"},
      {"auth: disabled\nmax_body_bytes: 10\n", "c.yaml:2: max_body_bytes"},
      {"auth: disabled\nslurm:\n  retry_initial_ms: 100\n  retry_max_ms: 10\n",
       "c.yaml:4: slurm.retry_max_ms"},
      {"auth: disabled\nslurm:\n  view_max_age_s: -1\n", "c.yaml:3: slurm.view_max_age_s"},
      {"auth: disabled\ndry_run: perhaps\n", "c.yaml:2: dry_run"},
      {"auth: disabled\naudit:\n  max_mb: 0\n", "c.yaml:3: audit.max_mb: must be in [1, 1048576]"},
      {"auth: disabled\naudit:\n  keep: -1\n", "c.yaml:3: audit.keep: must be in [0, 1000]"},
      {"auth: disabled\naudit:\n  max_size: 5\n", "c.yaml:3: audit.max_size: unknown key"},
      {"auth: disabled\nlisten: [1, 2\n", "c.yaml:"},
      {"auth: disabled\nwebhook:\n  enabled: true\n  url: ftp://x/events\n",
       "c.yaml:4: webhook.url: URL must start with http:// or https://"},
      {"auth: disabled\nwebhook:\n  enabled: true\n  url: http://\n", "c.yaml:4: webhook.url"},
      {"auth: disabled\nwebhook:\n  enabled: true\n  url: http://h/e\n  ca_file: /etc/hosts\n",
       "c.yaml:5: webhook.ca_file: set, but webhook.url is not https://"},
      {"auth: disabled\nwebhook:\n  enabled: true\n  url: http://h/e\n  token_file: /nonexistent\n",
       "c.yaml:5: webhook.token_file: cannot read '/nonexistent'"},
      {"auth: disabled\nwebhook:\n  enabled: true\n  url: http://h/e\n  max_attempts: 0\n",
       "c.yaml:5: webhook.max_attempts: must be >= 1"},
      {"auth: disabled\nwebhook:\n  urls: [http://h/e]\n", "c.yaml:3: webhook.urls: unknown key"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.yaml, "c.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos)
        << "yaml:\n"
        << c.yaml << "error: " << r.error().message;
  }
}

TEST(Config, audit_rotation_defaults_and_settings) {
  auto d = parse_config("auth: disabled\n", "c.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->audit.max_mb, 100);
  EXPECT_EQ(d->audit.keep, 5);
  auto c = parse_config("auth: disabled\naudit: {max_mb: 20, keep: 0}\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->audit.max_mb, 20);
  EXPECT_EQ(c->audit.keep, 0);
}

TEST(Config, full_example_parses) {
  const char* y = R"(
listen: {address: 0.0.0.0, port: 8480}
auth: disabled
max_body_bytes: 1048576
state_dir: /tmp/x
spool_dir: /tmp/spool
dry_run: true
policy:
  defaults: {drain_after: 3, resume_after: 4}
  checks:
    gpu_hbm: {drain_after: 5}
  fatal_checks: [gpu_count]
  fatal_fault_codes: [VIGIL-NVML-DBE]
  staleness_s: 7200
  requalify_after_s: 180
  requalify_window_s: 1200
breaker: {max_drains: 5, max_percent: 10, window_s: 600}
slurm: {conf: /etc/slurm/slurm.conf, retry_initial_ms: 100, retry_max_ms: 1000, batch_window_ms: 50,
       view_max_age_s: 2}
kubernetes:
  enabled: true
  annotation_prefix: example.com/
  condition: false
  node_mapping: pod-lookup
  pod_namespace: slurm
)";
  auto c = parse_config(y, "full.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_TRUE(c->dry_run);
  EXPECT_EQ(c->policy.for_check("gpu_hbm").drain_after, 5);
  EXPECT_EQ(c->policy.for_check("gpu_hbm").resume_after, 2);  // built-in override kept
  EXPECT_EQ(c->policy.for_check("other").resume_after, 4);
  EXPECT_EQ(c->policy.for_check("nvml_ecc").drain_after, 3);  // fatal list replaced
  EXPECT_EQ(c->policy.for_check("nvml_ecc", "VIGIL-NVML-DBE").drain_after, 1);
  EXPECT_EQ(c->policy.requalify_after_s, 180);
  EXPECT_EQ(c->policy.requalify_window_s, 1200);
  EXPECT_EQ(c->breaker.max_drains, 5);
  EXPECT_EQ(c->slurm.view_max_age_s, 2);
  EXPECT_EQ(c->kubernetes.node_mapping, NodeMapping::kPodLookup);
  EXPECT_EQ(c->kubernetes.annotation_prefix, "example.com/");
}

TEST(Config, slurm_backend_rest_reads_url_token_and_version) {
  auto c = parse_config(R"(auth: disabled
slurm:
  backend: rest
  rest:
    url: http://slurmrestd.slurm:6820/
    api_version: v0.0.41
    token_command: [scontrol, token, lifespan=3600]
    timeout_ms: 5000
)",
                        "r.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->slurm.backend, SlurmBackend::kRest);
  EXPECT_EQ(c->slurm.rest.url, "http://slurmrestd.slurm:6820/");
  EXPECT_EQ(c->slurm.rest.api_version, "v0.0.41");
  EXPECT_EQ(c->slurm.rest.token_command,
            (std::vector<std::string>{"scontrol", "token", "lifespan=3600"}));
  EXPECT_EQ(c->slurm.rest.timeout_ms, 5000);
  auto d = parse_config("auth: disabled\n", "d.yaml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->slurm.backend, SlurmBackend::kLibslurm);
}

TEST(Config, slurm_backend_errors_name_file_line_and_field) {
  const std::vector<BadCase> cases = {
      {"auth: disabled\nslurm:\n  backend: pyslurm\n",
       "c.yaml:3: slurm.backend: must be libslurm or rest"},
      {"auth: disabled\nslurm:\n  backend: rest\n", "slurm.rest: required with backend: rest"},
      {"auth: disabled\nslurm:\n  rest: {url: http://x:1}\n", "c.yaml:3: slurm.rest: only read"},
      {"auth: disabled\nslurm:\n  backend: rest\n  rest:\n    url: slurmrestd:6820\n",
       "c.yaml:5: slurm.rest.url: slurmrestd URL 'slurmrestd:6820' must start with http://"},
      {"auth: disabled\nslurm:\n  backend: rest\n  rest:\n    url: http://x:1\n    "
       "api_version: 41\n",
       "c.yaml:6: slurm.rest.api_version: '41' is not a slurmrestd API version"},
      {"auth: disabled\nslurm:\n  backend: rest\n  rest:\n    token_file: /t\n",
       "slurm.rest.url: required"},
      {"auth: disabled\nslurm:\n  backend: rest\n  rest:\n    url: http://x:1\n    "
       "token_file: /t\n    token_command: [scontrol, token]\n",
       "slurm.rest: give token_file or token_command, not both"},
      {"auth: disabled\nslurm:\n  backend: rest\n  rest:\n    url: http://x:1\n    "
       "token_command: scontrol token\n",
       "c.yaml:6: slurm.rest.token_command: must be a list"},
      {"auth: disabled\nslurm:\n  backend: rest\n  rest:\n    url: http://x:1\n    jwt: x\n",
       "c.yaml:6: slurm.rest.jwt: unknown key"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.yaml, "c.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos)
        << "yaml:\n"
        << c.yaml << "error: " << r.error().message;
  }
}

TEST(Config, listen_tls_loads_the_certificate_and_key) {
  const auto& pki = testing::TestPki::shared();
  auto c =
      parse_config("auth: disabled\nlisten:\n  tls:\n    cert_file: " + pki.path("server.pem") +
                       "\n    key_file: " + pki.path("server.key") + "\n",
                   "t.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_TRUE(c->tls);
  EXPECT_NE(c->tls->cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(c->tls->key_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_FALSE(parse_config("auth: disabled\n", "t.yaml")->tls);  // plain HTTP by default
}

TEST(Config, listen_tls_errors_name_file_line_and_field) {
  const auto& pki = testing::TestPki::shared();
  testing::TempDir d;
  std::ofstream(d / "garbage.pem") << "not a certificate\n";
  const std::string cert = "    cert_file: " + pki.path("server.pem") + "\n";
  const std::string key = "    key_file: " + pki.path("server.key") + "\n";
  const std::string head = "auth: disabled\nlisten:\n  tls:\n";
  const std::vector<BadCase> cases = {
      {head + key, "t.yaml:4: listen.tls.cert_file: required"},
      {head + cert, "t.yaml:4: listen.tls.key_file: required"},
      {head + "    cert_file: " + (d / "missing.pem") + "\n" + key,
       "t.yaml:4: listen.tls.cert_file: cannot read '" + (d / "missing.pem") + "'"},
      {head + "    cert_file: " + (d / "garbage.pem") + "\n" + key,
       "t.yaml:4: listen.tls.cert_file: '" + (d / "garbage.pem") + "' holds no PEM certificate"},
      {head + cert + "    key_file: " + pki.path("ip-only.key") + "\n",
       "t.yaml:5: listen.tls.key_file: '" + pki.path("ip-only.key") +
           "' is not the key of the certificate"},
      {head + cert + "    key_file: " + (d / "garbage.pem") + "\n",
       "t.yaml:5: listen.tls.key_file: '" + (d / "garbage.pem") + "' holds no PEM private key"},
      {head + cert + key + "    ca_file: " + (d / "garbage.pem") + "\n",
       "t.yaml:6: listen.tls.ca_file: '" + (d / "garbage.pem") + "' holds no PEM certificate"},
      {head + cert + key + "    client_ca: x\n", "t.yaml:6: listen.tls.client_ca: unknown key"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.yaml, "t.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos)
        << "yaml:\n"
        << c.yaml << "error: " << r.error().message;
  }
}

}  // namespace
}  // namespace vigil::drainer

namespace vigil::drainer {
namespace {

TEST(Config, auth_mode_munge_reads_uids_socket_and_refresh) {
  auto c = parse_config(
      "auth:\n  mode: munge\n  munge:\n    socket: /run/vigil-munge/munge.socket.2\n"
      "    allowed_uids: [0, 64030]\n    admin_uids: [0]\n    miss_refresh_min_s: 5\n",
      "m.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_TRUE(c->auth_enabled);
  EXPECT_TRUE(c->munge.enabled);
  EXPECT_EQ(c->munge.socket, "/run/vigil-munge/munge.socket.2");
  EXPECT_EQ(c->munge.allowed_uids, (std::set<uint32_t>{0, 64030}));
  EXPECT_EQ(c->munge.admin_uids, (std::set<uint32_t>{0}));
  EXPECT_EQ(c->munge.address_refresh_s, 300);
  EXPECT_EQ(c->munge.miss_refresh_min_s, 5);
  EXPECT_FALSE(c->munge.allow_loopback_origin);
  EXPECT_TRUE(c->token.empty());
}

TEST(Config, auth_mode_munge_errors_name_file_line_and_field) {
  struct Case {
    std::string yaml, want;
  };
  const std::string ok_munge = "  munge:\n    allowed_uids: [0]\n    admin_uids: [0]\n";
  const Case cases[] = {
      {"auth:\n  mode: kerberos\n", "m.yaml:2: auth.mode: must be token or munge"},
      {"auth:\n  mode: munge\n", "m.yaml:2: auth.munge: required with mode: munge"},
      {"auth:\n  mode: munge\n  munge:\n    admin_uids: [0]\n",
       "m.yaml:4: auth.munge.allowed_uids: required"},
      {"auth:\n  mode: munge\n  munge:\n    allowed_uids: [root]\n    admin_uids: [0]\n",
       "m.yaml:4: auth.munge.allowed_uids: entries must be numeric uids"},
      {"auth:\n  mode: munge\n  munge:\n    allowed_uids: []\n    admin_uids: [0]\n",
       "m.yaml:4: auth.munge.allowed_uids: required: a non-empty list"},
      {"auth:\n  mode: munge\n  token_file: /x\n" + ok_munge,
       "m.yaml:3: auth.token_file: not used with mode: munge"},
      {"auth:\n  mode: munge\n" + ok_munge + "    allow_loopback: true\n",
       "m.yaml:6: auth.munge.allow_loopback: unknown key"},
      {"auth:\n  mode: munge\n" + ok_munge + "spool_dir: /var/spool/vigil\n",
       "m.yaml:6: spool_dir: not read with auth mode munge"},
      {"auth:\n  mode: munge\n" + ok_munge + "slurm:\n  enabled: false\n",
       "m.yaml:7: slurm.enabled: auth mode munge needs Slurm"},
      {"auth:\n  munge: {allowed_uids: [0], admin_uids: [0]}\n  token_file: /x\n",
       "m.yaml:2: auth.munge: only read with mode: munge"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.yaml, "m.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos)
        << "want '" << c.want << "' in: " << r.error().message;
  }
}

TEST(Config, a_webhook_section_is_read_with_its_defaults) {
  auto c = parse_config(
      "auth: disabled\nwebhook:\n  enabled: true\n  url: https://hooks.example/v\n", "c.yaml");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_TRUE(c->webhook.enabled);
  EXPECT_EQ(c->webhook.url, "https://hooks.example/v");
  EXPECT_EQ(c->webhook.source, "/vigil/drainer");
  EXPECT_EQ(c->webhook.max_attempts, 10);
  EXPECT_EQ(c->webhook.timeout_ms, 5000);
  // Off unless asked for; an unused section is not validated.
  auto off = parse_config("auth: disabled\nwebhook:\n  url: not-a-url\n", "c.yaml");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->webhook.enabled);
}
}  // namespace
}  // namespace vigil::drainer
