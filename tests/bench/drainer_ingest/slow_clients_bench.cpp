// Slow-client benchmark: latency of legitimate NodeReport POSTs (auth + journal fsync, one
// report per POST, a new connection each, as vigil-check sends them) while 1,000 connections
// sit idle after a partial request line and 200 more trickle one header byte every second, all
// from loopback (20 + 4 source addresses 127.0.2.x, 50 connections each, under the default
// per-source cap of 64). Baseline: the same POSTs to the same server in the same run with no
// attack. Prints p50/p99/max of both and the p99 ratio. Goal: p99 under attack <= 1 s and no
// failed POST; exit code 1 when missed.
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "slow_clients.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/http_server.h"

using namespace vigil;
using namespace vigil::drainer;
using SteadyClock = std::chrono::steady_clock;

namespace {

std::string report(int node, const std::string& run) {
  NodeReport r;
  r.node = "sim-" + std::to_string(node);
  r.sku = "h100-sxm-80gb";
  r.run_id = run + "-" + std::to_string(node);
  r.start_time = "2026-11-23T10:00:00Z";
  r.end_time = "2026-11-23T10:01:00Z";
  CheckResult c;
  c.check = "nvml_ecc";
  c.status = Status::kPass;
  Measurement m;
  m.name = "dbe";
  m.value = 0;
  m.unit = "count";
  c.measurements.push_back(m);
  r.checks.push_back(c);
  return to_json(r).dump();
}

struct Latencies {
  std::vector<double> ms;
  int failures = 0;
  double pct(double p) const {
    if (ms.empty()) return 0;
    auto v = ms;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  }
};

// `n` POSTs from `clients` threads, each POST on a new connection (keep-alive off).
Latencies post_reports(int port, const std::string& token, const std::string& run, int n,
                       int clients) {
  std::atomic<int> next{0};
  std::mutex mu;
  Latencies out;
  std::vector<std::thread> ts;
  for (int t = 0; t < clients; ++t)
    ts.emplace_back([&] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_connection_timeout(10);
      cli.set_read_timeout(10);
      const httplib::Headers h{{"Authorization", "Bearer " + token}};
      for (int i; (i = next++) < n;) {
        const auto body = report(i, run);
        const auto t0 = SteadyClock::now();
        auto r = cli.Post("/v1/reports", h, body, "application/json");
        const double ms =
            std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
        std::lock_guard lk(mu);
        out.ms.push_back(ms);
        if (!r || r->status != 202) out.failures++;
      }
    });
  for (auto& t : ts) t.join();
  return out;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const int kIdle = 1000, kTrickle = 200, kPerSource = 50, kPosts = 600, kClients = 4;
  // Client and server ends of every attack connection live in this one process.
  const long fds = testing::raise_fd_limit(4 * (kIdle + kTrickle) + 512);
  if (fds < 2 * (kIdle + kTrickle) + 256) {
    std::printf("RLIMIT_NOFILE is %ld; need %d (raise the hard limit)\n", fds,
                2 * (kIdle + kTrickle) + 256);
    return 1;
  }
  const std::string token = "bench-token-0123456789abcdef";
  auto dir = std::filesystem::temp_directory_path() /
             ("vigil-slow-clients-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct RemoveOnExit {
    std::filesystem::path p;
    ~RemoveOnExit() {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  } remove_on_exit{dir};

  DrainerConfig cfg;
  cfg.listen_address = "127.0.0.1";
  cfg.listen_port = 0;
  cfg.auth_enabled = true;
  cfg.token = token;
  cfg.state_dir = (dir / "state").string();
  cfg.policy = default_policy();
  SystemClock clock;
  Drainer d(cfg, nullptr, nullptr, clock);
  if (!d.open().ok()) return 2;
  d.start();
  HttpServer http(d, cfg);
  auto port = http.bind();
  if (!port.ok() || !http.start().ok()) return 2;

  std::printf("slow-client bench: %d POSTs (1 report each, new connection each, %d clients)\n",
              kPosts, kClients);
  post_reports(port.value(), token, "warm", 50, kClients);  // warm-up, not counted
  const Latencies base = post_reports(port.value(), token, "base", kPosts, kClients);

  int opened = 0, closed = 0;
  Latencies attacked;
  {
    testing::SlowClients idle(port.value(), kIdle, kPerSource);
    // Trickling ones from other addresses than the idle ones (their own per-source budget).
    testing::SlowClients trickle(port.value(), kTrickle, kPerSource,
                                 std::chrono::milliseconds(1000), kIdle / kPerSource);
    opened = idle.opened() + trickle.opened();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    attacked = post_reports(port.value(), token, "attack", kPosts, kClients);
    closed = idle.closed_by_server() + trickle.closed_by_server();
  }
  http.stop();
  d.stop();

  std::printf(
      "attack: %d connections open (%d idle, the rest trickling 1 byte/s); %d closed by "
      "the server during the run (per-source cap or request deadline)\n",
      opened, kIdle, closed);
  std::printf("%-22s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  failed %d\n", "no attack (baseline)",
              base.pct(0.5), base.pct(0.99), base.pct(1.0), base.failures);
  std::printf("%-22s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  failed %d\n", "under attack",
              attacked.pct(0.5), attacked.pct(0.99), attacked.pct(1.0), attacked.failures);
  std::printf("p99 ratio (attack / baseline): %.2f\n", attacked.pct(0.99) / base.pct(0.99));
  const bool ok = attacked.pct(0.99) <= 1000 && attacked.failures == 0 && base.failures == 0 &&
                  opened >= kIdle + kTrickle;
  std::printf("goal p99 <= 1 s under >= %d slow connections, no failure: %s\n", kIdle + kTrickle,
              ok ? "met" : "MISSED");
  return ok ? 0 : 1;
}
