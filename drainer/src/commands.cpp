// vigil-drainer subcommands (see commands.h).
#include "vigil/drainer/commands.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "vigil/base/files.h"
#include "vigil/base/http_client.h"
#include "vigil/base/time.h"
#include "vigil/drainer/calibrate.h"
#include "vigil/drainer/config_file.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/http_server.h"
#include "vigil/drainer/webhook_http.h"
#include "vigil/kube/kube_api.h"
#include "vigil/munge/munge.h"
#include "vigil/slurm/slurm_api.h"

namespace fs = std::filesystem;

namespace vigil::drainer {
namespace {

Result<DrainerConfig> resolve_config(const CommandOptions& o) {
  DrainerConfig c;
  if (!o.config.empty()) {
    VIGIL_TRY(c, load_config(o.config));
  } else {
    if (o.state_dir.empty()) return Error{"give --config FILE or --state-dir DIR", "vigil-drainer"};
    c.policy = default_policy();
    c.auth_enabled = false;
    c.source = "<defaults>";
  }
  if (!o.state_dir.empty()) c.state_dir = o.state_dir;
  if (!o.slurm_conf.empty()) c.slurm.conf = o.slurm_conf;
  if (o.dry_run) c.dry_run = true;
  if (o.no_slurm) c.slurm.enabled = false;
  return c;
}

// Holds state_dir/lock for the process lifetime. Returns -1 when another process holds it.
int lock_state_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  int fd = ::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -2;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::shared_ptr<slurm::SlurmApi> make_slurm(const DrainerConfig& c) {
  if (!c.slurm.enabled) return nullptr;
  if (c.slurm.backend == SlurmBackend::kRest) {
    // load_config validated these settings with the same call, so it cannot fail here.
    auto rest = slurm::make_rest_api(c.slurm.rest);
    return rest.ok() ? std::shared_ptr<slurm::SlurmApi>(std::move(*rest)) : nullptr;
  }
  return std::shared_ptr<slurm::SlurmApi>(slurm::make_libslurm_api(c.slurm.conf));
}

// The repair ladder needs Slurm's ResumeTimeout (repair.h): read once at start, said aloud.
DrainerConfig with_resume_timeout(DrainerConfig c, slurm::SlurmApi* slurm) {
  if (!c.repair.reboot || !slurm) return c;
  auto t = slurm->resume_timeout_s();
  if (!t.ok()) {
    std::cerr << "vigil-drainer: repair.reboot: cannot read Slurm's ResumeTimeout ("
              << t.error().to_string() << "); reboots are not checked against it\n";
    return c;
  }
  c.repair.resume_timeout_s = *t;
  const int64_t need = c.repair.bug_report_s + c.repair.boot_time_s;
  if (*t < need)
    std::cerr << "vigil-drainer: repair.reboot: Slurm's ResumeTimeout is " << *t
              << " s, shorter than the bug report and a boot (" << need
              << " s): reboots are refused; raise ResumeTimeout (vigil-submit --check-config)\n";
  return c;
}

Result<std::shared_ptr<kube::KubeApi>> make_kube(const DrainerConfig& c) {
  if (!c.kubernetes.enabled) return std::shared_ptr<kube::KubeApi>();
  VIGIL_TRY(auto kc, c.kubernetes.kubeconfig.empty()
                         ? kube::kube_config_in_cluster()
                         : kube::kube_config_from_file(c.kubernetes.kubeconfig));
  return std::shared_ptr<kube::KubeApi>(kube::make_kube_api(kc));
}

std::string trunc(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

void print_table(const nlohmann::json& nodes, const nlohmann::json& breaker, bool dry_run) {
  std::printf("%-16s %-12s %-21s %6s %6s  %s\n", "NODE", "STATE", "LAST CHECK", "PASSES", "FAILS",
              "REASON");
  for (const auto& n : nodes) {
    std::string reason = n.value("reason", "");
    if (reason.empty()) reason = n.value("note", "");
    std::printf("%-16s %-12s %-21s %6d %6d  %s\n", trunc(n.value("node", ""), 16).c_str(),
                n.value("state", "").c_str(), n.value("last_check_time", "-").c_str(),
                n.value("consecutive_passes", 0), n.value("consecutive_fails", 0),
                trunc(reason, 80).c_str());
  }
  if (breaker.value("open", false))
    std::printf(
        "\ncircuit breaker OPEN: %s\n  (new drains stopped; reset with `vigil-drainer breaker "
        "reset`)\n",
        breaker.value("why", "").c_str());
  if (dry_run) std::printf("\ndry-run: nothing is changed in Slurm\n");
}

// host:port, with an IPv6 address in brackets (listen_address may be "::1").
std::string authority(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos && !host.starts_with("[");
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

struct ServiceClient {
  std::unique_ptr<httplib::Client> cli;
  httplib::Headers headers;
  std::string munge_socket;  // auth mode munge without an admin token: a credential per request
  bool munge = false;
  explicit ServiceClient(const DrainerConfig& c) {
    const bool any = c.listen_address == "0.0.0.0" || c.listen_address == "::";
    if (c.tls) {
      // The service's certificate must name the host we dial: on a wildcard listener that is
      // localhost. Trusted: listen.tls.ca_file, else the certificate itself (self-signed).
      const std::string host = any ? "localhost" : c.listen_address;
      cli = make_http_client({"https://" + authority(host, c.listen_port),
                              c.tls->ca_file.empty() ? c.tls->cert_file : c.tls->ca_file, 30000});
    } else {
      cli = make_http_client(
          {"http://" + authority(any ? "127.0.0.1" : c.listen_address, c.listen_port), "", 30000});
    }
    // Operator commands use the admin token when there is one (resume, breaker reset need it);
    // under auth mode munge otherwise a MUNGE credential of the operator's own uid.
    if (c.auth_enabled && c.munge.enabled && c.admin_token.empty()) {
      munge = true;
      munge_socket = c.munge.socket;
    } else if (c.auth_enabled) {
      headers.emplace("Authorization",
                      "Bearer " + (c.admin_token.empty() ? c.token : c.admin_token));
    }
  }
  // The headers for one request; an error when munged cannot be asked.
  Result<httplib::Headers> for_request(const std::string& method, const std::string& path,
                                       const std::string& body) const {
    if (!munge) return headers;
    VIGIL_TRY(auto cred,
              munge::encode(munge::request_payload(method, path, body), {munge_socket, 0}));
    httplib::Headers h = headers;
    h.emplace("Authorization", std::string(munge::kAuthScheme) + " " + cred);
    return h;
  }
};

const char* auth_word(const DrainerConfig& c) {
  return !c.auth_enabled ? "DISABLED" : c.munge.enabled ? "munge" : "token";
}

int munge_fail(const Error& e, const std::string& what) {
  std::cerr << "vigil-drainer: " << what << ": cannot get a MUNGE credential: " << e.to_string()
            << " (auth mode munge; is munged running with auth.munge.socket?)\n";
  return 1;
}

// The string `key` of the service's JSON reply, or the whole body when the reply is not the
// JSON object the service sends (a proxy's error page, another program on the port).
std::string body_field(const std::string& body, const char* key) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return body;
}

int http_fail(const httplib::Result& r, const std::string& what) {
  if (!r) {
    std::cerr << "vigil-drainer: " << what << ": service unreachable ("
              << httplib::to_string(r.error())
              << "); is `vigil-drainer serve` running at the configured listen address?\n";
    return 1;
  }
  const std::string msg = body_field(r->body, "error");
  std::cerr << "vigil-drainer: " << what << ": HTTP " << r->status << ": " << msg << "\n";
  return 1;
}

std::atomic<HttpServer*> g_server{nullptr};

}  // namespace

int run_config_validate(const std::string& path) {
  auto c = load_config(path);
  if (!c.ok()) {
    std::cerr << c.error().message << "\n";
    return 2;
  }
  const auto& v = c.value();
  std::printf("%s: ok\n  listen %s://%s:%d, auth %s, state_dir %s, dry_run %s\n", path.c_str(),
              v.tls ? "https" : "http", v.listen_address.c_str(), v.listen_port, auth_word(v),
              v.state_dir.c_str(), v.dry_run ? "true" : "false");
  std::printf("  defaults drain_after %d resume_after %d, %zu fatal checks, staleness %llds\n",
              v.policy.defaults.drain_after, v.policy.defaults.resume_after,
              v.policy.fatal_checks.size(), static_cast<long long>(v.policy.staleness_s));
  std::printf("  breaker max_drains %d max_percent %.0f%% window %llds; kubernetes %s\n",
              v.breaker.max_drains, v.breaker.max_percent,
              static_cast<long long>(v.breaker.window_s), v.kubernetes.enabled ? "on" : "off");
  return 0;
}

int run_serve(const CommandOptions& o) {
  auto cfg = resolve_config(o);
  if (!cfg.ok()) {
    std::cerr << "vigil-drainer: " << cfg.error().to_string() << "\n";
    return 2;
  }
  const DrainerConfig& c = cfg.value();
  int lock = lock_state_dir(c.state_dir);
  if (lock < 0) {
    std::cerr << "vigil-drainer: state dir " << c.state_dir
              << (lock == -1 ? " is in use by another vigil-drainer" : " cannot be opened") << "\n";
    return 1;
  }
  auto kube = make_kube(c);
  if (!kube.ok()) {
    std::cerr << "vigil-drainer: kubernetes: " << kube.error().to_string()
              << " (set kubernetes.kubeconfig or run in-cluster, or kubernetes.enabled: false)\n";
    return 2;
  }
  // Signals are taken by a sigwait thread so shutdown is orderly (snapshot, join).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  SystemClock clock;
  auto slurm = make_slurm(cfg.value());
  const DrainerConfig c2 = with_resume_timeout(cfg.value(), slurm.get());
  Drainer d(c2, slurm, kube.value(), clock, make_http_webhook(c2.webhook));
  HttpServer http(d, c2);
  auto port = http.bind();
  if (!port.ok()) {
    std::cerr << "vigil-drainer: " << port.error().to_string() << "\n";
    return 1;
  }
  g_server = &http;
  std::thread sig([set]() mutable {
    int s = 0;
    sigwait(&set, &s);
    if (auto* h = g_server.load()) h->shutdown();
  });
  sig.detach();
  // Answers /healthz, and 503 on /readyz + POST until the journal is replayed.
  if (auto st = http.start(); !st.ok()) {
    std::cerr << "vigil-drainer: " << st.error().to_string() << "\n";
    return 1;
  }
  std::fprintf(stderr, "vigil-drainer: listening on %s:%d (%s, auth %s%s)\n",
               c.listen_address.c_str(), port.value(), c.tls ? "https" : "http", auth_word(c),
               c.dry_run ? ", DRY-RUN" : "");
  auto op = d.open();
  if (!op.ok()) {
    std::cerr << "vigil-drainer: cannot open state: " << op.error().to_string() << "\n";
    http.stop();
    return 1;
  }
  d.start();
  std::fprintf(stderr, "vigil-drainer: ready (%zu nodes, %zu pending actions)\n", d.nodes().size(),
               d.pending(SinkKind::kSlurm) + d.pending(SinkKind::kKubernetes));
  // A failed journal stops the drainer (docs/drainer.md "When the journal fails"): exit non-zero
  // so systemd's Restart= or the Pod's restart replays the journal.
  std::atomic<bool> served{false};
  std::thread watch([&] {
    while (!served.load() && !d.journal_failed())
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!served.load()) http.shutdown();
  });
  http.wait();
  served = true;
  watch.join();
  g_server = nullptr;
  d.stop();
  const bool failed = d.journal_failed();
  std::fprintf(stderr, "vigil-drainer: stopped%s\n",
               failed ? " (the journal failed: restart to replay it)" : "");
  ::close(lock);
  return failed ? 1 : 0;
}

namespace {

// The reports of `files` (one report or an array each); the error names the file.
Result<std::vector<NodeReport>> read_report_files(const std::vector<std::string>& files) {
  std::vector<NodeReport> reports;
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) return Error{"cannot read " + f, "apply"};
    std::stringstream ss;
    ss << in.rdbuf();
    auto p = parse_node_reports(ss.str());
    if (!p) return Error{f + ": " + p.error, "apply"};
    for (auto& r : *p.value) reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace

int run_apply(const CommandOptions& o, const std::vector<std::string>& report_files,
              const std::string& reports_dir) {
  auto cfg = resolve_config(o);
  if (!cfg.ok()) {
    std::cerr << "vigil-drainer: " << cfg.error().to_string() << "\n";
    return 2;
  }
  const DrainerConfig& c = cfg.value();
  auto read = read_report_files(report_files);
  if (!read.ok()) {
    std::cerr << "vigil-drainer: " << read.error().message << "\n";
    return 2;
  }
  const std::vector<NodeReport>& reports = *read;
  int lock = lock_state_dir(c.state_dir);
  if (lock < 0) {
    std::cerr << "vigil-drainer: state dir " << c.state_dir
              << " is held by a running vigil-drainer serve; POST the reports to it instead\n";
    return 1;
  }
  auto kube = make_kube(c);
  if (!kube.ok()) {
    std::cerr << "vigil-drainer: kubernetes: " << kube.error().to_string() << "\n";
    return 2;
  }
  SystemClock clock;
  Drainer d(c, make_slurm(c), kube.value(), clock, make_http_webhook(c.webhook));
  if (auto r = d.open(); !r.ok()) {
    std::cerr << "vigil-drainer: " << r.error().to_string() << "\n";
    return 1;
  }
  auto in = d.ingest(reports);
  if (!in.ok()) {
    std::cerr << "vigil-drainer: " << in.error().to_string() << "\n";
    return 1;
  }
  int from_dir = 0;
  if (!reports_dir.empty()) {
    auto r = d.ingest_dir(reports_dir);
    if (!r.ok()) {
      std::cerr << "vigil-drainer: " << r.error().to_string() << "\n";
      return 1;
    }
    from_dir = r.value();
  }
  d.process_pending();
  int left = d.run_slurm_sink_once();
  for (int attempt = 1; left > 0 && attempt < 4; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500 << attempt));
    left = d.run_slurm_sink_once();
  }
  d.run_kube_sink_once();
  (void)d.snapshot_now();
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& s : d.nodes()) nodes.push_back(to_json(s));
  if (o.json) {
    std::cout << nlohmann::json{{"accepted", in->accepted},
                                {"duplicates", in->duplicates},
                                {"files_from_dir", from_dir},
                                {"nodes", nodes},
                                {"pending_slurm", d.pending(SinkKind::kSlurm)},
                                {"breaker", to_json(d.breaker())}}
                     .dump(2)
              << "\n";
  } else {
    std::printf("%d reports accepted, %d duplicates, %d files from %s\n\n", in->accepted,
                in->duplicates, from_dir, reports_dir.empty() ? "-" : reports_dir.c_str());
    print_table(nodes, to_json(d.breaker()), c.dry_run);
    if (d.pending(SinkKind::kSlurm))
      std::printf(
          "\n%zu Slurm actions pending (slurmctld unreachable?): they are journaled and "
          "retried by the next apply or serve\n",
          d.pending(SinkKind::kSlurm));
  }
  ::close(lock);
  return left > 0 ? 1 : 0;
}

namespace {

// status, resume and breaker reset work with and without a running service: the service holds
// an exclusive lock on the state dir; when it is held the command asks the service over HTTP,
// otherwise it opens the state dir itself (the same journal replay the service does).
int with_service_or_state(const CommandOptions& o, bool with_slurm,
                          const std::function<int(ServiceClient&)>& remote,
                          const std::function<int(Drainer&, const DrainerConfig&)>& local) {
  auto cfg = resolve_config(o);
  if (!cfg.ok()) {
    std::cerr << "vigil-drainer: " << cfg.error().to_string() << "\n";
    return 2;
  }
  const DrainerConfig& c = cfg.value();
  const int lock = lock_state_dir(c.state_dir);
  if (lock == -1) {
    ServiceClient sc(c);
    return remote(sc);
  }
  if (lock < 0) {
    std::cerr << "vigil-drainer: cannot open state dir " << c.state_dir << "\n";
    return 1;
  }
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  SystemClock clock;
  Drainer d(c, with_slurm ? make_slurm(c) : nullptr, nullptr, clock, make_http_webhook(c.webhook));
  if (auto r = d.open(); !r.ok()) {
    std::cerr << "vigil-drainer: " << r.error().to_string() << "\n";
    return 1;
  }
  return local(d, c);
}

}  // namespace

int run_status(const CommandOptions& o) {
  nlohmann::json body;
  const int rc = with_service_or_state(
      o, /*with_slurm=*/false,
      [&](ServiceClient& sc) {
        auto h = sc.for_request("GET", "/v1/nodes", "");
        if (!h.ok()) return munge_fail(h.error(), "GET /v1/nodes");
        auto r = sc.cli->Get("/v1/nodes", *h);
        if (!r || r->status != 200) return http_fail(r, "GET /v1/nodes");
        body = nlohmann::json::parse(r->body, nullptr, false);
        return 0;
      },
      [&](Drainer& d, const DrainerConfig&) {
        body = d.nodes_view();
        return 0;
      });
  if (rc != 0) return rc;
  if (o.json) {
    std::cout << body.dump(2) << "\n";
  } else {
    print_table(body.value("nodes", nlohmann::json::array()),
                body.value("breaker", nlohmann::json::object()), body.value("dry_run", false));
  }
  return 0;
}

int run_resume(const CommandOptions& o, const std::string& node) {
  return with_service_or_state(
      o, /*with_slurm=*/true,
      [&](ServiceClient& sc) {
        const std::string path = "/v1/nodes/" + node + "/resume";
        auto h = sc.for_request("POST", path, "");
        if (!h.ok()) return munge_fail(h.error(), "resume " + node);
        auto r = sc.cli->Post(path.c_str(), *h, "", "application/json");
        if (!r || r->status != 200) return http_fail(r, "resume " + node);
        std::cout << body_field(r->body, "result") << "\n";
        return 0;
      },
      [&](Drainer& d, const DrainerConfig&) {
        auto r = d.resume(node);
        if (!r.ok()) {
          std::cerr << "vigil-drainer: " << r.error().to_string() << "\n";
          return 1;
        }
        const int left = d.run_slurm_sink_once();
        (void)d.snapshot_now();
        std::cout << r.value()
                  << (left ? " (Slurm unreachable: pending, retried by the next run)" : "") << "\n";
        return left ? 1 : 0;
      });
}

int run_calibrate(const CommandOptions& o, const CalibrateOptions& c) {
  std::ifstream in(c.thresholds_file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::cerr << "vigil-drainer calibrate: cannot read " << c.thresholds_file
              << "; nothing changed\n";
    return 2;
  }
  auto cfg = resolve_config(o);
  if (!cfg.ok()) {
    std::cerr << "vigil-drainer: " << cfg.error().to_string() << "\n";
    return 2;
  }
  std::vector<detect::HealthyFigures> figures;
  const int rc = with_service_or_state(
      o, /*with_slurm=*/false,
      [&](ServiceClient& sc) {
        const std::string path = "/v1/calibration/" + c.sku;
        auto h = sc.for_request("GET", path, "");
        if (!h.ok()) return munge_fail(h.error(), "GET " + path);
        auto r = sc.cli->Get(path.c_str(), *h);
        if (!r || r->status != 200) return http_fail(r, "GET " + path);
        auto parsed = healthy_figures_from_json(nlohmann::json::parse(r->body, nullptr, false));
        if (!parsed.ok()) {
          std::cerr << "vigil-drainer calibrate: " << parsed.error().to_string() << "\n";
          return 1;
        }
        figures = std::move(parsed.value());
        return 0;
      },
      [&](Drainer& d, const DrainerConfig&) {
        figures = d.healthy_figures(c.sku);
        return 0;
      });
  if (rc != 0) return rc;
  CalibrationOptions opt;
  opt.min_nodes = c.min_nodes;
  opt.min_figures = c.min_figures;
  opt.date = rfc3339_utc(std::time(nullptr)).substr(0, 10);
  auto plan = plan_calibration(text.str(), c.thresholds_file, c.sku, figures,
                               cfg.value().detection.engine, opt);
  if (!plan.ok()) {
    std::cerr << "vigil-drainer calibrate: " << plan.error().to_string() << "; nothing changed\n";
    return 2;
  }
  if (!cfg.value().detection.enabled)
    std::cout << "detection is off in this configuration: the drainer keeps no healthy figures\n";
  std::cout << "calibration of " << c.sku << " from the drainer's healthy figures:\n";
  for (const auto& n : plan.value().notes) std::cout << "  " << n << "\n";
  if (plan.value().changes.empty()) {
    std::cout << "nothing to propose; " << c.thresholds_file << " unchanged\n";
    return 1;
  }
  std::cout << "\n" << plan.value().diff;
  if (!c.write) {
    std::cout << "\nreview, then apply with --write (or patch the file yourself)\n";
    return 0;
  }
  if (auto w = replace_file_atomically(c.thresholds_file, plan.value().text); !w.ok()) {
    std::cerr << "vigil-drainer calibrate: " << w.error().to_string() << "; nothing changed\n";
    return 2;
  }
  std::cout << "\nwritten: " << c.thresholds_file << " (" << plan.value().changes.size()
            << " bounds calibrated; copy it to every node's thresholds directory)\n";
  return 0;
}

int run_breaker_reset(const CommandOptions& o) {
  return with_service_or_state(
      o, /*with_slurm=*/false,
      [&](ServiceClient& sc) {
        auto h = sc.for_request("POST", "/v1/breaker/reset", "");
        if (!h.ok()) return munge_fail(h.error(), "breaker reset");
        auto r = sc.cli->Post("/v1/breaker/reset", *h, "", "application/json");
        if (!r || r->status != 200) return http_fail(r, "breaker reset");
        std::cout << "circuit breaker closed\n";
        return 0;
      },
      [&](Drainer& d, const DrainerConfig&) {
        const auto was = d.breaker();
        if (auto r = d.reset_breaker(); !r.ok()) {
          std::cerr << "vigil-drainer: " << r.error().to_string() << "\n";
          return 1;
        }
        (void)d.snapshot_now();
        std::cout << "circuit breaker closed"
                  << (was.open ? " (was open: " + was.why + ")" : " (was closed)") << "\n";
        return 0;
      });
}

}  // namespace vigil::drainer
