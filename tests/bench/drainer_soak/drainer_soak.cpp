// Soak benchmark (issue 13 item 5): the real vigil-drainer binary takes reports for a simulated
// fleet (default 10,000 nodes of a real slurmctld without slurmd, fleet-cluster.sh) at an
// accelerated cadence, while it is killed with SIGKILL at random moments and slurmctld is
// restarted. At the end it checks, against records the drainer does not control:
//   - lost reports: every report answered 202 is known to the drainer (re-posting it is a
//     duplicate, and the node's last run id is the last one acknowledged);
//   - repeated Slurm actions: per node, the drains and undrains slurmctld logged alternate, and
//     the drainer's audit log shows no more successful drains than slurmctld applied;
//   - Slurm matches the reports: a node is drained exactly when its acknowledged reports say so;
//   - resident memory of the last drainer process after warm-up, and the journal's size.
// Figures are ratios against the same run (RSS end / RSS after warm-up, journal bytes late /
// early). Usage: tests/bench/drainer_soak/run-soak.sh (docs/drainer.md "Soak").
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "background_process.h"
#include "load_average.h"
#include "run_command.h"
#include "soak_fleet.h"
#include "vigil/base/time.h"

namespace vigil::soak {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;
using Json = nlohmann::json;

struct Options {
  std::string drainer, cluster_dir, fleet_script, work;
  int nodes = 10000, clients = 8, batch = 25, snapshot_every = 20000;
  double duration_s = 600, cycle_s = 30, chaos_fraction = 0.6;
  unsigned seed = 1;
};

const std::string kToken = "soak-token-0123456789abcdef";
std::atomic<bool> g_failed{false};  // a thread met something that must stop the run
std::atomic<long> g_acked{0};       // reports answered 202 so far (progress lines)

double since(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

long rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

std::string load_average() { return testing::load_average() + "\n"; }

uint64_t journal_bytes(const std::string& state) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state, ec))
    if (e.path().filename().string().rfind("journal-", 0) == 0) n += e.file_size(ec);
  return n;
}

uint64_t file_bytes(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

// The running drainer, restarted by the chaos thread; its PID for the memory sampler.
class DrainerProcess {
 public:
  explicit DrainerProcess(const Options& o) : o_(o) {}
  void start() {
    std::lock_guard lk(mu_);
    const std::string log = o_.work + "/drainer-" + std::to_string(starts_) + ".log";
    p_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{o_.drainer, "serve", "--config", o_.work + "/drainer.yaml"}, log,
        std::map<std::string, std::string>{}, /*die_with_test=*/false);  // restarted by chaos
    pid_ = p_->pid();
    // For run-soak.sh: should this driver die without stopping it, the script still can.
    std::ofstream(o_.work + "/drainer.pid") << pid_ << "\n";
    started_ = SteadyClock::now();
    ++starts_;
  }
  void kill9() {
    std::lock_guard lk(mu_);
    ::kill(p_->pid(), SIGKILL);
    while (p_->running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pid_ = -1;
  }
  void stop() {
    std::lock_guard lk(mu_);
    if (p_) p_->stop();
    pid_ = -1;
  }
  int pid() const { return pid_; }
  int starts() const { return starts_; }
  SteadyClock::time_point started() {
    std::lock_guard lk(mu_);
    return started_;
  }

 private:
  const Options& o_;
  std::mutex mu_;
  std::unique_ptr<testing::BackgroundProcess> p_;
  std::atomic<int> pid_{-1};
  std::atomic<int> starts_{0};
  SteadyClock::time_point started_;
};

struct Sample {
  double t;
  int incarnation;
  long rss_kib;
  uint64_t journal;
};

// What one client thread saw: per node, the cycles acknowledged (202), in order.
struct ClientLog {
  std::map<int, std::vector<int>> acked;
  int posts = 0, retries = 0;
  double worst_lag_s = 0;  // how far behind its schedule the client fell
};

// A loopback port nothing listens on now (bound, read, closed).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool wait_ready(int port, int seconds) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(1);
  for (int i = 0; i < seconds * 10; ++i) {
    if (auto r = cli.Get("/readyz"); r && r->status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

httplib::Headers auth() { return {{"Authorization", "Bearer " + kToken}}; }

std::string batch_body(const Fleet& fleet, const std::vector<int>& nodes, int cycle) {
  Json arr = Json::array();
  for (int n : nodes) arr.push_back(to_json(fleet.report(n, cycle)));
  return arr.dump();
}

void run_client(const Options& o, const Fleet& fleet, int port, int me, int cycles,
                SteadyClock::time_point t0, ClientLog& log) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(2);
  cli.set_read_timeout(15);
  std::vector<int> mine;
  for (int n = me; n < o.nodes; n += o.clients) mine.push_back(n);
  const int batches = static_cast<int>((mine.size() + o.batch - 1) / o.batch);
  const double give_up = o.duration_s + 120;  // retries continue this long after the end
  for (int c = 0; c < cycles; ++c) {
    for (int b = 0; b < batches; ++b) {
      // Spread a cycle's batches over 90% of the cycle, every client offset a little.
      const double at = c * o.cycle_s + (b + me / double(o.clients)) * 0.9 * o.cycle_s / batches;
      const double lag = since(t0) - at;
      if (lag < 0) std::this_thread::sleep_for(std::chrono::duration<double>(-lag));
      log.worst_lag_s = std::max(log.worst_lag_s, lag);
      std::vector<int> nodes(mine.begin() + b * o.batch,
                             mine.begin() + std::min<size_t>(mine.size(), (b + 1) * o.batch));
      const std::string body = batch_body(fleet, nodes, c);
      for (;;) {
        ++log.posts;
        auto r = cli.Post("/v1/reports", auth(), body, "application/json");
        if (r && r->status == 202) {
          for (int n : nodes) log.acked[n].push_back(c);
          g_acked += static_cast<long>(nodes.size());
          break;
        }
        if (r && r->status != 503) {
          std::fprintf(stderr, "soak: client %d: HTTP %d: %s\n", me, r->status, r->body.c_str());
          g_failed = true;  // a bug in this driver or the drainer: stop here
        }
        if (g_failed) return;
        ++log.retries;  // connection refused/reset (drainer killed) or 503 (replaying, busy)
        if (since(t0) > give_up) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
  }
}

// Kills the drainer (SIGKILL) and restarts slurmctld at random moments; returns the counts.
std::pair<int, int> run_chaos(const Options& o, DrainerProcess& drainer, int port,
                              SteadyClock::time_point t0, std::atomic<bool>& done) {
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<double> kill_gap(0.5 * o.cycle_s, 1.5 * o.cycle_s);
  std::uniform_real_distribution<double> ctld_gap(1.0 * o.cycle_s, 2.5 * o.cycle_s);
  std::uniform_real_distribution<double> pause(0.0, 1.0);
  double next_kill = kill_gap(rng), next_ctld = ctld_gap(rng);
  int kills = 0, restarts = 0;
  while (!done && !g_failed && since(t0) < o.duration_s) {
    const double now = since(t0);
    if (now >= next_kill && now < o.chaos_fraction * o.duration_s) {
      drainer.kill9();
      std::this_thread::sleep_for(std::chrono::duration<double>(pause(rng)));
      drainer.start();
      ++kills;
      if (!wait_ready(port, 120)) {
        std::fprintf(stderr, "soak: vigil-drainer did not come back after kill -9 #%d\n", kills);
        g_failed = true;
        break;
      }
      std::fprintf(stderr, "soak: %6.1fs kill -9 drainer (#%d), ready again after %.1f s\n", now,
                   kills, since(t0) - now);
      next_kill = now + kill_gap(rng);
    }
    if (now >= next_ctld) {
      auto r = testing::run_command({o.fleet_script, "restart-ctld", o.cluster_dir});
      if (r.exit_code != 0) {
        std::fprintf(stderr, "soak: slurmctld restart failed: %s\n", r.describe().c_str());
        g_failed = true;
        break;
      }
      ++restarts;
      std::fprintf(stderr, "soak: %6.1fs slurmctld restarted (#%d, %.1fs)\n", now, restarts,
                   since(t0) - now);
      next_ctld = since(t0) + ctld_gap(rng);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return {kills, restarts};
}

}  // namespace
}  // namespace vigil::soak

namespace vigil::soak {
namespace {

// Drain RPCs the drainer's audit log says succeeded, per node, and the number of drain/undrain
// RPCs it sent. (A kill -9 between an RPC and its audit line loses the line, never the action:
// the restarted drainer finds it applied in Slurm and does not send it again.)
// `audit` and the files it rotated to (audit.jsonl.1, .2, ...; the soak rotates at 8 MiB and keeps
// them all, so rotation is exercised and no line is missed).
std::vector<std::string> audit_files(const std::string& audit) {
  std::vector<std::string> out{audit};
  for (int i = 1; fs::exists(audit + "." + std::to_string(i)); ++i)
    out.push_back(audit + "." + std::to_string(i));
  return out;
}

std::map<std::string, int> audited_drains(const std::string& audit, int* rpcs) {
  std::map<std::string, int> out;
  std::string line;
  for (const std::string& file : audit_files(audit)) {
    std::ifstream in(file);
    while (std::getline(in, line)) {
      Json j = Json::parse(line, nullptr, false);
      if (j.is_discarded() || j.value("event", "") != "action" || j.value("sink", "") != "slurm")
        continue;
      const std::string action = j.value("action", "");
      if (action != "drain" && action != "resume") continue;
      ++*rpcs;
      if (action == "drain" && j.value("outcome", "") == "ok")
        for (const auto& n : j["nodes"]) out[n.get<std::string>()]++;
    }
  }
  return out;
}

// "sim-[00001-00003,00007]" or "sim-00001" -> the names (one bracket, as slurmctld logs them).
std::vector<std::string> expand_hostlist(const std::string& h) {
  const auto lb = h.find('[');
  if (lb == std::string::npos) return {h};
  const std::string prefix = h.substr(0, lb);
  std::vector<std::string> out;
  std::istringstream in(h.substr(lb + 1, h.find(']') - lb - 1));
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    const std::string lo = part.substr(0, dash);
    const int first = std::stoi(lo);
    const int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
    for (int i = first; i <= last; ++i) {
      std::string num = std::to_string(i);
      out.push_back(prefix + std::string(lo.size() > num.size() ? lo.size() - num.size() : 0, '0') +
                    num);
    }
  }
  return out;
}

// What slurmctld applied, per node and in order ('D' drain, 'R' undrain), from its own log:
//   "update_node: node X reason set to: vigil: ..."  a drain (logged only when it changes
//                                                    something: a repeated drain does not show)
//   "_slurm_rpc_update_node for HOSTLIST: Invalid node state specified"  an undrain: on these
//     slurmd-less nodes (base state UNKNOWN) UNDRAIN clears the flag and answers this error
//     (docs/slurm-sink.md), every time, so a repeated undrain shows twice.
std::map<std::string, std::string> slurmctld_actions(const std::string& log) {
  std::map<std::string, std::string> out;
  std::ifstream in(log);
  std::string line;
  const std::string drain = "update_node: node ", undrain = "_slurm_rpc_update_node for ";
  while (std::getline(in, line)) {
    if (auto p = line.find(drain);
        p != std::string::npos && line.find(" reason set to: vigil:") != std::string::npos) {
      p += drain.size();
      out[line.substr(p, line.find(' ', p) - p)] += 'D';
    } else if (auto q = line.find(undrain);
               q != std::string::npos && line.find("Invalid node state") != std::string::npos) {
      q += undrain.size();
      for (const auto& n : expand_hostlist(line.substr(q, line.find(':', q) - q))) out[n] += 'R';
    }
  }
  return out;
}

// Nodes Slurm holds drained with a vigil reason (scontrol -o show node).
std::set<std::string> slurm_drained(const Options& o) {
  testing::CommandOptions co;
  co.env["SLURM_CONF"] = o.cluster_dir + "/slurm.conf";
  auto r = testing::run_command({"scontrol", "-o", "show", "node"}, co);
  std::set<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    const auto name = line.substr(9, line.find(' ') - 9);  // "NodeName=sim-00001 ..."
    const auto st = line.find(" State=");
    const bool drain =
        st != std::string::npos &&
        line.substr(st, line.find(' ', st + 1) - st).find("DRAIN") != std::string::npos;
    if (drain && line.find(" Reason=vigil:") != std::string::npos) out.insert(name);
  }
  return out;
}

int run(const Options& o) {
  fs::create_directories(o.work + "/state");
  std::ofstream(o.work + "/token") << kToken << "\n";
  const int port = free_port();  // for the whole run: the drainer restarts on it
  std::ofstream(o.work + "/drainer.yaml")
      << "listen: {address: 127.0.0.1, port: " << port << "}\n"
      << "auth: {token_file: " << o.work << "/token}\n"
      << "state_dir: " << o.work << "/state\n"
      << "snapshot_every: " << o.snapshot_every << "\n"
      << "audit: {max_mb: 8, keep: 1000}\n"
      << "breaker: {max_drains: 1000000, max_percent: 100, window_s: 60}\n"
      << "slurm: {enabled: true, conf: " << o.cluster_dir << "/slurm.conf, retry_initial_ms: 200,"
      << " retry_max_ms: 2000}\n";
  const int cycles = static_cast<int>(o.duration_s / o.cycle_s);
  std::printf(
      "soak: %d nodes, a fleet cycle every %.0f s, %d cycles (%.0f s), %d clients x %d "
      "reports per POST, drainer kill -9 in the first %.0f%%, seed %u\n",
      o.nodes, o.cycle_s, cycles, o.duration_s, o.clients, o.batch, o.chaos_fraction * 100, o.seed);
  std::printf("load average at the start: %s", load_average().c_str());
  Fleet fleet;
  DrainerProcess drainer(o);
  drainer.start();
  if (!wait_ready(port, 120)) {
    std::fprintf(stderr, "soak: vigil-drainer did not become ready; see %s/drainer-0.log\n",
                 o.work.c_str());
    drainer.stop();
    return 3;
  }
  const auto t0 = SteadyClock::now();
  std::atomic<bool> done{false};
  std::vector<Sample> samples;
  std::thread sampler([&] {
    double next_progress = o.cycle_s;
    while (!done) {
      const int pid = drainer.pid();
      if (pid > 0)
        samples.push_back(
            {since(t0), drainer.starts(), rss_kib(pid), journal_bytes(o.work + "/state")});
      if (since(t0) >= next_progress && !samples.empty()) {
        std::printf(
            "soak: %6.1fs %ld reports acknowledged; drainer RSS %ld KiB, journal %.1f MiB\n",
            since(t0), g_acked.load(), samples.back().rss_kib, samples.back().journal / 1048576.0);
        next_progress += o.cycle_s;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  std::vector<ClientLog> logs(o.clients);
  std::vector<std::thread> clients;
  for (int c = 0; c < o.clients; ++c)
    clients.emplace_back([&, c] { run_client(o, fleet, port, c, cycles, t0, logs[c]); });
  std::pair<int, int> chaos;
  std::thread chaos_thread([&] { chaos = run_chaos(o, drainer, port, t0, done); });
  for (auto& t : clients) t.join();
  const double posting_s = since(t0);
  done = true;
  chaos_thread.join();
  sampler.join();
  if (g_failed) {
    drainer.stop();
    std::fprintf(stderr, "soak: stopped early (see above)\n");
    return 3;
  }

  std::map<int, std::vector<int>> acked;
  int posts = 0, retries = 0;
  double lag = 0;
  for (auto& l : logs) {
    acked.merge(l.acked);
    posts += l.posts;
    retries += l.retries;
    lag = std::max(lag, l.worst_lag_s);
  }
  size_t acked_reports = 0;
  for (const auto& [n, cs] : acked) acked_reports += cs.size();
  // Let the drainer decide every acknowledged report (each node's last run id is its last
  // acknowledged one) and finish every pending Slurm action; lost reports show up here too.
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60);
  Json view;
  int wrong_last = -1;
  for (int i = 0; i < 240 && wrong_last != 0; ++i) {
    if (i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto r = cli.Get("/v1/nodes", auth());
    if (!r || r->status != 200) continue;
    view = Json::parse(r->body);
    if (view["pending_actions"].value("slurm", 1) != 0) continue;
    std::map<std::string, std::string> last_run;
    for (const auto& n : view["nodes"]) last_run[n.value("node", "")] = n.value("last_run_id", "");
    wrong_last = 0;
    for (const auto& [n, cs] : acked)
      wrong_last += last_run[Fleet::name(n)] != Fleet::report(n, cs.back()).run_id;
  }

  // 1. Lost reports: every acknowledged report re-posted is a duplicate (the drainer keeps the
  // last 256 run ids per node, snapshot included).
  int reaccepted = 0, duplicates = 0;
  std::vector<std::pair<int, int>> all;
  for (const auto& [n, cs] : acked)
    for (size_t k = cs.size() > 256 ? cs.size() - 256 : 0; k < cs.size(); ++k)
      all.emplace_back(n, cs[k]);
  for (size_t i = 0; i < all.size(); i += 250) {
    Json arr = Json::array();
    for (size_t k = i; k < std::min(all.size(), i + 250); ++k)
      arr.push_back(to_json(Fleet::report(all[k].first, all[k].second)));
    auto r = cli.Post("/v1/reports", auth(), arr.dump(), "application/json");
    if (!r || r->status != 202) {
      std::fprintf(stderr, "soak: re-post failed: %s\n", r ? r->body.c_str() : "no answer");
      drainer.stop();
      return 3;
    }
    const Json a = Json::parse(r->body);
    reaccepted += a.value("accepted", 0);
    duplicates += a.value("duplicates", 0);
  }
  drainer.stop();  // TERM: a clean shutdown (snapshot)

  // 2. Repeated actions, 3. Slurm against the reports.
  int rpcs = 0;
  const auto sent = audited_drains(o.work + "/state/audit.jsonl", &rpcs);
  const auto applied = slurmctld_actions(o.cluster_dir + "/log/slurmctld.log");
  const auto drained = slurm_drained(o);
  int examples = 0;
  int repeated = 0, unlogged_drains = 0, wrong_state = 0, wrong_count = 0, drains = 0, resumes = 0;
  for (int n = 0; n < o.nodes; ++n) {
    const std::string name = Fleet::name(n);
    const auto it = applied.find(name);
    const std::string seq = it == applied.end() ? "" : it->second;
    for (size_t k = 1; k < seq.size(); ++k) repeated += seq[k] == seq[k - 1];
    const int d = static_cast<int>(std::count(seq.begin(), seq.end(), 'D'));
    drains += d;
    resumes += static_cast<int>(seq.size()) - d;
    const auto st = sent.find(name);
    unlogged_drains += std::max(0, (st == sent.end() ? 0 : st->second) - d);
    const auto e = Fleet::expected(n, acked[n]);
    const bool bad = e.drained != (drained.count(name) > 0) || e.drains != d;
    wrong_state += e.drained != (drained.count(name) > 0);
    wrong_count += e.drains != d;
    if (bad && examples++ < 5) {
      std::string cs;
      for (int c : acked[n]) cs += std::to_string(c) + (Fleet::fails(n, c) ? "F " : "P ");
      std::printf(
          "  %s: expected %s (%d drains), Slurm %s; slurmctld applied '%s'; acknowledged %s\n",
          name.c_str(), e.drained ? "drained" : "not drained", e.drains,
          drained.count(name) ? "drained" : "not drained", seq.c_str(), cs.c_str());
    }
  }

  // 4. Memory of the last drainer process after warm-up; 5. the journal over the run.
  const int last = drainer.starts();
  std::vector<Sample> mine;
  for (const auto& s : samples)
    if (s.incarnation == last) mine.push_back(s);
  // Warm-up: two cycles after the last start. RSS after warm-up is the median of the cycle that
  // follows, RSS at the end the median of the last cycle (a snapshot briefly holds the whole
  // state as JSON: single samples jump); the maximum is printed too.
  const double warm_t = mine.empty() ? 0 : mine.front().t + 2 * o.cycle_s;
  const double end_t = mine.empty() ? 0 : mine.back().t;
  auto median_rss = [&](double from, double to) {
    std::vector<long> v;
    for (const auto& s : mine)
      if (s.t >= from && s.t < to) v.push_back(s.rss_kib);
    if (v.empty()) return -1L;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  const long rss_warm = median_rss(warm_t, warm_t + o.cycle_s);
  const long rss_end = median_rss(end_t - o.cycle_s, end_t + 1);
  long rss_max = 0;
  for (const auto& s : mine)
    if (s.t >= warm_t) rss_max = std::max(rss_max, s.rss_kib);
  const double judged_s = end_t - warm_t;
  // The journal between compactions: its largest size in the first half of the run (after the
  // first compaction) against the second half. Bounded means the second is no larger.
  uint64_t j_early = 0, j_late = 0, j_max = 0;
  int early_compactions = 0, late_compactions = 0;  // the journal shrank: a snapshot covered it
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    const bool late = s.t >= posting_s / 2;
    if (i > 0 && s.journal < samples[i - 1].journal)
      (late ? late_compactions : early_compactions)++;
    j_max = std::max(j_max, s.journal);
    if (late)
      j_late = std::max(j_late, s.journal);
    else if (early_compactions > 0)
      j_early = std::max(j_early, s.journal);
  }
  const uint64_t snapshot = file_bytes(o.work + "/state/snapshot.json");
  const auto audits = audit_files(o.work + "/state/audit.jsonl");
  uint64_t audit = 0;
  for (const auto& f : audits) audit += file_bytes(f);

  std::printf(
      "\nposting took %.0f s for %d cycles (worst client lag %.1f s); %d POSTs, %d retried "
      "(drainer down, replaying or busy)\n",
      posting_s, cycles, lag, posts, retries);
  std::printf("chaos: %d drainer kill -9, %d slurmctld restarts\n", chaos.first, chaos.second);
  std::printf(
      "acknowledged reports: %zu; lost: last run id wrong on %d nodes, %d of %zu "
      "re-posted were new to the drainer (%d duplicates)\n",
      acked_reports, wrong_last, reaccepted, all.size(), duplicates);
  std::printf(
      "Slurm RPCs sent (audit log): %d; applied (slurmctld's log): %d drains, %d undrains; "
      "repeated actions: %d; successful drains in the audit log beyond slurmctld's: %d\n",
      rpcs, drains, resumes, repeated, unlogged_drains);
  std::printf(
      "Slurm vs the acknowledged reports: %d nodes in the wrong state, %d with a drain "
      "count other than expected\n",
      wrong_state, wrong_count);
  std::printf(
      "RSS of the last drainer (start %.0f s, warm-up 2 cycles; medians of a cycle): after "
      "warm-up %ld KiB, end %ld KiB, max %ld KiB over %.0f s: end/warm-up %.3f, max/warm-up %.3f\n",
      mine.empty() ? 0 : mine.front().t, rss_warm, rss_end, rss_max, judged_s,
      rss_warm > 0 ? double(rss_end) / rss_warm : 0, rss_warm > 0 ? double(rss_max) / rss_warm : 0);
  std::printf(
      "journal: max %.1f MiB; largest in the first half after the first compaction %.1f MiB, in "
      "the second half %.1f MiB (second/first %.2f); compactions %d + %d; snapshot %.1f MiB; "
      "audit log %.1f MiB in %zu files (rotated at 8 MiB)\n",
      j_max / 1048576.0, j_early / 1048576.0, j_late / 1048576.0,
      j_early ? double(j_late) / j_early : 0, early_compactions, late_compactions,
      snapshot / 1048576.0, audit / 1048576.0, audits.size());
  std::printf("load average at the end: %s", load_average().c_str());

  bool ok = true;
  auto goal = [&](bool met, const char* what) {
    std::printf("goal %-48s %s\n", what, met ? "met" : "MISSED");
    ok = ok && met;
  };
  goal(wrong_last == 0 && reaccepted == 0, "0 acknowledged reports lost");
  goal(repeated == 0 && unlogged_drains == 0, "0 repeated Slurm actions");
  goal(wrong_state == 0, "Slurm state matches the reports");
  if (judged_s >= 4 * o.cycle_s)
    goal(rss_warm > 0 && rss_end < 1.10 * rss_warm, "RSS growth after warm-up < 10%");
  else
    std::printf("goal %-48s not judged (last drainer ran %.0f s after warm-up, < 4 cycles)\n",
                "RSS growth after warm-up < 10%", judged_s);
  const char* journal_goal = "journal bounded (second half <= 1.2 x first)";
  if (early_compactions >= 3 && late_compactions >= 3)
    goal(j_late <= 1.2 * j_early, journal_goal);
  else
    std::printf("goal %-48s not judged (%d + %d compactions, < 3 in a half)\n", journal_goal,
                early_compactions, late_compactions);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace vigil::soak

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows as it happens under ctest
  vigil::soak::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--drainer")
      o.drainer = v;
    else if (k == "--cluster-dir")
      o.cluster_dir = v;
    else if (k == "--fleet-script")
      o.fleet_script = v;
    else if (k == "--work")
      o.work = v;
    else if (k == "--nodes")
      o.nodes = std::stoi(v);
    else if (k == "--clients")
      o.clients = std::stoi(v);
    else if (k == "--batch")
      o.batch = std::stoi(v);
    else if (k == "--snapshot-every")
      o.snapshot_every = std::stoi(v);
    else if (k == "--duration-s")
      o.duration_s = std::stod(v);
    else if (k == "--cycle-s")
      o.cycle_s = std::stod(v);
    else if (k == "--seed")
      o.seed = static_cast<unsigned>(std::stoul(v));
    else {
      std::fprintf(stderr, "drainer_soak: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.drainer.empty() || o.cluster_dir.empty() || o.fleet_script.empty() || o.work.empty()) {
    std::fprintf(stderr,
                 "usage: drainer_soak --drainer BIN --cluster-dir DIR --fleet-script SCRIPT "
                 "--work DIR [--nodes N] [--duration-s S] [--cycle-s S] [--clients N] "
                 "[--batch N] [--snapshot-every N] [--seed N]\n");
    return 2;
  }
  return vigil::soak::run(o);
}
