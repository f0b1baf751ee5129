// TLS for ingest, end to end: a throwaway CA and server certificate made with the openssl CLI
// in a temp dir (test_pki.h), a real vigil-drainer listener (libmicrohttpd + GnuTLS) configured
// through `listen.tls`, and the report client verifying it with --ca-file (OpenSSL). Accepted with
// the right CA; refused without retry, spooled and not ingested with a wrong CA or a certificate
// that does not name the host; plain HTTP to the TLS port fails cleanly; connections that never
// finish a handshake do not delay a report and are cut at the request deadline.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "fake_clock.h"
#include "fakes.h"
#include "run_command.h"
#include "slow_clients.h"
#include "temp_dir.h"
#include "test_pki.h"
#include "vigil/drainer/config_file.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/http_server.h"
#include "vigil/report/report_client.h"

namespace vigil {
namespace {

using testing::make_check;
using testing::make_report;
using testing::TempDir;
using SteadyClock = std::chrono::steady_clock;

const std::string kToken = "tls-test-token-0123456789";

const testing::TestPki& pki() { return testing::TestPki::shared(); }

// A vigil-drainer listener with TLS, configured through the YAML parser like the service.
struct TlsDrainer {
  TempDir dir;
  testing::FakeClock clock;
  drainer::DrainerConfig cfg;
  std::unique_ptr<drainer::Drainer> d;
  std::unique_ptr<drainer::HttpServer> http;
  int port = 0;

  explicit TlsDrainer(const std::string& cert = "server", int request_timeout_s = 10) {
    std::ofstream(dir / "token") << kToken << "\n";
    const std::string yaml = "listen:\n  address: 127.0.0.1\n  port: 0\n  request_timeout_s: " +
                             std::to_string(request_timeout_s) +
                             "\n  tls:\n    cert_file: " + pki().path(cert + ".pem") +
                             "\n    key_file: " + pki().path(cert + ".key") +
                             "\nauth:\n  token_file: " + (dir / "token") +
                             "\nstate_dir: " + (dir / "state") + "\nslurm: {enabled: false}\n";
    auto parsed = drainer::parse_config(yaml, "tls-test.yaml");
    EXPECT_TRUE(parsed.ok()) << parsed.error().to_string();
    cfg = parsed.value();
    d = std::make_unique<drainer::Drainer>(cfg, nullptr, nullptr, clock);
    EXPECT_TRUE(d->open().ok());
    http = std::make_unique<drainer::HttpServer>(*d, cfg);
    auto bound = http->bind();
    EXPECT_TRUE(bound.ok());
    port = bound.value();
    auto started = http->start();
    EXPECT_TRUE(started.ok()) << started.error().to_string();
  }
  ~TlsDrainer() { http->stop(); }

  std::string url(const std::string& scheme = "https", const std::string& host = "127.0.0.1") {
    return scheme + "://" + host + ":" + std::to_string(port) + "/v1/reports";
  }
  // Reports the drainer took (decided now: nothing else decides in these tests).
  int ingested() { return d->process_pending(); }
};

ReportClientOptions client(const std::string& url, const std::string& ca_file,
                           const TempDir& spool) {
  ReportClientOptions o;
  o.url = url;
  o.ca_file = ca_file;
  o.token_file = spool / "token";
  std::ofstream(o.token_file) << kToken;
  o.spool_dir = spool / "spool";
  o.max_attempts = 3;
  o.initial_backoff_ms = 1;
  o.timeout_ms = 3000;
  o.sleep = [](int) {};
  return o;
}

NodeReport report(const std::string& run) {
  return make_report("gpu-1", run, {make_check("nvml_ecc", Status::kPass)});
}

TEST(IngestTls, a_report_over_https_verified_with_the_ca_is_accepted) {
  TlsDrainer s;
  TempDir c;
  auto r = post_report(report("r1"), client(s.url(), pki().path("ca.pem"), c));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->delivered) << r->last_error;
  EXPECT_EQ(r->last_http_status, 202);
  EXPECT_EQ(s.ingested(), 1);
  ASSERT_TRUE(s.d->node("gpu-1"));
  EXPECT_EQ(s.d->node("gpu-1")->last_run_id, "r1");
}

TEST(IngestTls, a_wrong_ca_is_refused_at_once_spooled_and_nothing_is_ingested) {
  TlsDrainer s;
  TempDir c;
  auto r = post_report(report("r2"), client(s.url(), pki().path("other-ca.pem"), c));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->delivered);
  EXPECT_EQ(r->attempts, 1);  // an untrusted certificate stays untrusted: no retries
  EXPECT_NE(r->last_error.find("not trusted by the CA in"), std::string::npos) << r->last_error;
  EXPECT_FALSE(r->spooled_path.empty());
  EXPECT_EQ(s.ingested(), 0);
  EXPECT_FALSE(s.d->node("gpu-1"));
}

TEST(IngestTls, without_a_ca_file_the_system_cas_do_not_trust_a_private_ca) {
  TlsDrainer s;
  TempDir c;
  auto r = post_report(report("r3"), client(s.url(), "", c));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->delivered);
  EXPECT_NE(r->last_error.find("the system's CAs"), std::string::npos) << r->last_error;
  EXPECT_EQ(s.ingested(), 0);
}

TEST(IngestTls, a_certificate_that_does_not_name_the_host_is_refused) {
  TlsDrainer s("ip-only");
  TempDir c;
  auto r = post_report(report("r4"), client(s.url("https", "localhost"), pki().path("ca.pem"), c));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->delivered);
  EXPECT_NE(r->last_error.find("does not name the host"), std::string::npos) << r->last_error;
  EXPECT_EQ(s.ingested(), 0);
}

TEST(IngestTls, plain_http_to_the_tls_port_fails_cleanly_and_https_still_works) {
  TlsDrainer s;
  TempDir c;
  auto plain = client(s.url("http"), "", c);
  auto r = post_report(report("r5"), plain);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->delivered);
  EXPECT_EQ(r->last_http_status, 0);
  EXPECT_FALSE(r->spooled_path.empty());
  EXPECT_EQ(s.ingested(), 0);
  auto ok = post_report(report("r6"), client(s.url(), pki().path("ca.pem"), c));
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->delivered) << ok->last_error;
}

TEST(IngestTls, a_ca_file_with_an_http_url_is_an_error_not_clear_text) {
  TempDir c;
  auto r =
      post_report(report("r7"), client("http://127.0.0.1:1/v1/reports", pki().path("ca.pem"), c));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->delivered);
  EXPECT_EQ(r->attempts, 0);
  EXPECT_NE(r->last_error.find("not https://"), std::string::npos) << r->last_error;
}

// Connections that open TCP and never send a ClientHello sit in the handshake: the report of a
// real client is still answered at once, and the deadline closes them like any slow request.
TEST(IngestTls, connections_that_never_finish_a_handshake_do_not_starve_a_report) {
  TlsDrainer s("server", /*request_timeout_s=*/2);
  testing::raise_fd_limit(1024);
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int a = i / 50;  // 50 per source address, under the default cap of 64
    int fd = testing::connect_from("127.0.2." + std::to_string(1 + a), s.port);
    if (fd >= 0) idle.push_back(fd);
  }
  ASSERT_EQ(idle.size(), 200u);
  TempDir c;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = SteadyClock::now();
    auto r =
        post_report(report("idle-" + std::to_string(i)), client(s.url(), pki().path("ca.pem"), c));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->delivered) << r->last_error;
    EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - t0).count(), 1.0);
  }
  auto closed = [&] {
    int n = 0;
    for (int fd : idle) {
      char ch;
      const ssize_t got = ::recv(fd, &ch, 1, MSG_DONTWAIT | MSG_PEEK);
      n += got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    }
    return n;
  };
  const auto t0 = SteadyClock::now();
  while (closed() < 200 && SteadyClock::now() - t0 < std::chrono::seconds(6))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(closed(), 200) << "request_timeout_s 2 applies to handshakes too";
  for (int fd : idle) ::close(fd);
}

}  // namespace
}  // namespace vigil
