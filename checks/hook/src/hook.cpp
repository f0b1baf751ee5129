#include "vigil/hook/hook.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "vigil/base/clock.h"
#include "vigil/base/files.h"
#include "vigil/base/time.h"
#include "vigil/report/report_client.h"
#include "vigil/slurm/reason.h"

namespace vigil::hook {

namespace {

using SteadyClock = std::chrono::steady_clock;

// `node` in Slurm's table; nullopt with `why` set when it is not there.
std::optional<slurm::SlurmNodeInfo> find_node(const std::vector<slurm::SlurmNodeInfo>& nodes,
                                              const std::string& node, std::string& why) {
  for (const auto& n : nodes)
    if (n.name == node) return n;
  why = "node '" + node + "' unknown to Slurm";
  return std::nullopt;
}

// Slurm shows a drain (vigil's or another owner's) or a node Vigil never touches: the hook has
// nothing to drain.
bool nothing_to_drain(const slurm::SlurmNodeInfo& n) {
  return slurm::drained_by_vigil(n) || slurm::drained_by_other(n) || slurm::untouchable(n);
}

// Drains `node` with `reason` unless Slurm already shows a vigil drain, another owner's drain,
// or a node Vigil never touches. `o.action` says what happened; `o.exit_code` is 1 when the
// node ends drained by vigil.
void drain_self(slurm::SlurmApi& api, const slurm::SlurmNodeInfo& n, const std::string& reason,
                const std::string& because, Outcome& o) {
  if (slurm::drained_by_vigil(n)) {
    o.action = "already drained by vigil (" + n.reason + ")";
    o.exit_code = 1;
    return;
  }
  if (slurm::drained_by_other(n)) {
    o.action = "not drained: drained by another owner (" + n.reason + ")";
    return;
  }
  if (slurm::untouchable(n)) {
    o.action = "not drained: node is DOWN/FAIL/MAINT";
    return;
  }
  if (auto d = api.drain({n.name}, reason); !d) {
    o.action = "drain failed: " + d.error().to_string();
    return;
  }
  o.drained_by_hook = true;
  o.exit_code = 1;
  o.action = "drained by the hook (" + because + "): " + reason;
}

// Waits up to drain_wait for Slurm to show the drainer's drain of `node`; the node as last seen.
std::optional<slurm::SlurmNodeInfo> wait_for_vigil_drain(slurm::SlurmApi& api,
                                                         const std::string& node,
                                                         const ActOptions& opts, std::string& why) {
  std::function<void(std::chrono::milliseconds)> sleep = opts.sleep;
  if (!sleep) sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  const auto until = SteadyClock::now() + opts.drain_wait;
  for (;;) {
    auto nodes = api.load_nodes_named({node});  // this node only: every poll reaches slurmctld
    std::optional<slurm::SlurmNodeInfo> n;
    if (nodes) {
      n = find_node(*nodes, node, why);
    } else {
      why = nodes.error().to_string();
    }
    if (n && nothing_to_drain(*n)) return n;
    if (SteadyClock::now() >= until) return n;
    sleep(opts.poll_interval);
  }
}

}  // namespace

std::vector<const CheckResult*> fatal_failures(const NodeReport& r,
                                               const SharedDrainPolicy& policy) {
  std::vector<const CheckResult*> out;
  for (const auto& c : r.checks)
    if (c.status == Status::kFail && policy.is_fatal(c.check, c.fault_code)) out.push_back(&c);
  return out;
}

std::string fatal_reason(const NodeReport& r, const SharedDrainPolicy& policy) {
  auto f = fatal_failures(r, policy);
  if (f.empty()) return "";
  return slurm::make_reason(reason_name(*f.front()), reason_detail(*f.front()));
}

SharedDrainPolicy load_policy_cache(const std::string& path, std::string* note) {
  if (path.empty()) return {};
  std::ifstream in(path);
  if (!in) return {};  // never heard from the drainer: the built-in defaults
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  auto p = j.is_discarded() ? Result<SharedDrainPolicy>(Error{"not JSON", path})
                            : shared_policy_from_json(j);
  if (!p) {
    if (note) *note = "policy cache " + path + " unreadable (" + p.error().to_string() + ")";
    SharedDrainPolicy unknown;
    unknown.source = "an unreadable cache";
    unknown.unreadable = true;
    return unknown;
  }
  return *p;
}

VoidResult save_policy_cache(const std::string& path, SharedDrainPolicy p, int64_t now_unix) {
  p.source = "vigil-drainer at " + rfc3339_utc(now_unix);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Hooks of one node can overlap (an Epilog and a HealthCheckProgram): each writes a file of
  // its own process and renames it over the cache.
  return replace_file_atomically(path, to_json(p).dump() + "\n");
}

std::optional<std::string> local_breaker_holds(const std::vector<slurm::SlurmNodeInfo>& nodes,
                                               const slurm::SlurmNodeInfo& self,
                                               const SharedDrainPolicy& policy, int64_t now_unix) {
  const std::string group = self.partitions.empty() ? "" : self.partitions.front();
  int size = 0, drained = 0;
  for (const auto& n : nodes) {
    if (!group.empty() &&
        std::find(n.partitions.begin(), n.partitions.end(), group) == n.partitions.end())
      continue;
    size++;
    // A vigil drain of unknown age counts: holding one drain too many is the safe mistake.
    if (n.name != self.name && slurm::drained_by_vigil(n) &&
        (n.reason_time == 0 || n.reason_time > now_unix - policy.breaker_window_s))
      drained++;
  }
  const int cap = breaker_cap(policy.breaker_max_drains, policy.breaker_max_percent, size);
  if (drained + 1 <= cap) return std::nullopt;
  return std::to_string(drained) + " node(s) of " +
         (group.empty() ? std::string("the cluster") : "partition " + group) +
         " drained by vigil in the last " + std::to_string(policy.breaker_window_s) + " s, cap " +
         std::to_string(cap) + " (max_drains " + std::to_string(policy.breaker_max_drains) +
         ", max_percent " + std::to_string(static_cast<int>(policy.breaker_max_percent)) + "% of " +
         std::to_string(size) + " nodes; policy from " + policy.source + ")";
}

std::optional<std::vector<int>> parse_job_gpus(std::string_view s) {
  std::vector<int> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    int v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || p != item.data() + item.size() || v < 0) return std::nullopt;
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

namespace {

// Delivery with the request for a verdict; fills o.delivery / o.delivery_failed. Returns the
// drainer's reply when it was delivered.
// `reached`: the drainer answered, or the connection was made (it may hold the report).
std::optional<ReportReply> deliver(const NodeReport& report, const ActOptions& opts, Outcome& o,
                                   bool& reached) {
  ReportClientOptions client;
  client.url = opts.report_url;
  client.token_file = opts.token_file;
  client.ca_file = opts.ca_file;
  client.spool_dir = opts.spool_dir;
  client.auth = opts.auth;
  client.resend_max_files = 2;  // slurmd waits for the hook: a little of the spool per run
  client.max_attempts = 1;
  client.timeout_ms = opts.post_timeout_ms;
  client.want_decision = true;
  if (opts.sleep) client.sleep = [&](int ms) { opts.sleep(std::chrono::milliseconds(ms)); };
  const Delivery d = deliver_report(report, client);
  o.delivery = d.text;
  o.delivery_failed = d.kind == Delivery::Kind::kFailed;
  reached = d.reached;
  if (d.kind != Delivery::Kind::kDelivered) return std::nullopt;
  auto reply = report_reply_from_json(d.reply_body);
  if (!reply) {  // an answer we cannot read carries no verdict
    o.delivery += " (its answer is unreadable: " + reply.error().to_string() + ")";
    return ReportReply{};
  }
  if (!reply->policy_error.empty())
    o.delivery += " (its policy is unreadable: " + reply->policy_error + ")";
  return *reply;
}

// The drainer's verdict on this report, kUnknown when it gave none.
ReportDecision verdict_for(const ReportReply& reply, const NodeReport& report) {
  for (const auto& d : reply.decisions)
    if (d.node == report.node && d.run_id == report.run_id) return d;
  return {report.node, report.run_id, DrainVerdict::kUnknown, "", "no verdict in its answer"};
}

// What act() carries from step to step: the outcome so far, the policy that binds this run and
// the Slurm client, created on first use.
struct ActState {
  ActState(const NodeReport& r, const ActOptions& o) : report(r), opts(o) { judge(); }

  // In this order: the clock, then the policy the drainer last sent.
  const NodeReport& report;
  const ActOptions& opts;
  const int64_t now = opts.now_unix ? opts.now_unix() : SystemClock().now_unix();
  Outcome o;
  std::string cache_note;  // why the cached policy could not be read or kept
  SharedDrainPolicy policy = load_policy_cache(opts.policy_cache, &cache_note);
  std::unique_ptr<slurm::SlurmApi> api;

  // o.reason and o.fatal under `policy`.
  void judge() {
    o.reason = fatal_reason(report, policy);
    o.fatal = !o.reason.empty();
  }
  // The drainer's own policy binds this run and is kept for when it cannot be reached.
  void adopt(const SharedDrainPolicy& p) {
    policy = p;
    cache_note.clear();
    judge();
    if (opts.policy_cache.empty()) return;
    if (auto saved = save_policy_cache(opts.policy_cache, p, now); !saved)
      cache_note = "policy not kept: " + saved.error().to_string();
  }
  std::string with_note(std::string s) const {  // once: an unreadable cache's hold says it
    if (cache_note.empty() || s.find(cache_note) != std::string::npos) return s;
    return s + " [" + cache_note + "]";
  }
  Outcome done(std::string action) {
    o.action = std::move(action);
    return o;
  }
  Outcome hold(std::string why) {
    o.held = true;
    return done(with_note(std::move(why)));
  }
  slurm::SlurmApi* slurm_api() {
    if (!api && opts.slurm) api = opts.slurm();
    return api.get();
  }
};

// The drainer counts the node as drained by vigil.
Outcome already_drained(ActState& s) {
  // Exit 1 only for a fatal finding on a node Slurm shows drained by vigil now: the
  // drainer's view of Slurm may be seconds old (an operator may just have resumed it).
  std::string why;
  slurm::SlurmApi* a = s.o.fatal ? s.slurm_api() : nullptr;
  auto nodes =
      a ? a->load_nodes() : Result<std::vector<slurm::SlurmNodeInfo>>(Error{"not fatal", "hook"});
  auto n = nodes ? find_node(*nodes, s.report.node, why) : std::nullopt;
  if (n && slurm::drained_by_vigil(*n)) {
    s.o.exit_code = 1;
    return s.done("already drained by vigil (" + n->reason + ")");
  }
  return s.done(s.o.fatal ? "not drained: vigil-drainer counts the node as drained by vigil, "
                            "Slurm does not show it now; the drainer decides on its next report"
                          : "none (node drained by vigil)");
}

// 1. The drainer decided: obey it. The outcome when its verdict ends the run; nullopt when the
// drain is still to be seen in Slurm (kDrain) or the hook decides alone (kUnknown).
std::optional<Outcome> obey_verdict(ActState& s, const ReportDecision& decision, bool reached) {
  const bool fatal = s.o.fatal;
  switch (decision.verdict) {
    case DrainVerdict::kBreakerHeld:
      return s.hold("drain held by vigil-drainer's circuit breaker (" + decision.why + ")");
    case DrainVerdict::kDryRun:
      return s.hold("vigil-drainer is in dry-run: would drain (" + decision.reason + ")");
    case DrainVerdict::kNoDrain:
      return s.done(fatal ? "not drained: vigil-drainer's policy does not drain on this report" +
                                (decision.why.empty() ? "" : " (" + decision.why + ")")
                          : "none");
    case DrainVerdict::kOtherOwner:
      return s.done(fatal ? "not drained: " + decision.why : "none (" + decision.why + ")");
    case DrainVerdict::kAlreadyDrained:
      return already_drained(s);
    case DrainVerdict::kDrain:
      break;
    case DrainVerdict::kUnknown:
      // Reached but no verdict (an older drainer, the node decided a newer report meanwhile, a
      // timeout after the report went out, a busy or not-ready drainer): the report is the
      // drainer's, and so is the drain. The hook drains alone only when nothing answered.
      if (reached && fatal)
        return s.hold("not drained by the hook: vigil-drainer was reached but gave no verdict (" +
                      (decision.why.empty() ? s.o.delivery : decision.why) +
                      "); the drain is the drainer's decision");
      break;
  }
  return std::nullopt;
}

// 2. Not reached: the last policy the drainer sent binds (dry-run, its open breaker); with no
// readable policy the hook does not drain on its own. Why the hook's drain of a fatal finding
// (`reason`) is held, or nullopt.
std::optional<std::string> cached_policy_holds(const SharedDrainPolicy& policy,
                                               const std::string& cache_note,
                                               const std::string& reason) {
  if (policy.unreadable) return "not drained by the hook: " + cache_note;
  if (policy.dry_run) return "dry-run (policy from " + policy.source + "): would drain: " + reason;
  if (policy.breaker_open)
    return "drain held: vigil-drainer's circuit breaker was open when it last answered "
           "(policy from " +
           policy.source + ")";
  return std::nullopt;
}

// 3. and 4.: the drain in Slurm, the drainer's (`drainer_drains`) or the hook's own.
Outcome drain_in_slurm(ActState& s, bool drainer_drains) {
  slurm::SlurmApi* api = s.slurm_api();
  if (!api) return s.done("not drained: no Slurm client");
  std::string why;
  // 3. The drainer's drain: give it drain_wait to show in Slurm.
  if (drainer_drains) {
    auto n = wait_for_vigil_drain(*api, s.report.node, s.opts, why);
    if (n && slurm::drained_by_vigil(*n)) {
      s.o.exit_code = 1;
      return s.done("drained by vigil-drainer (" + n->reason + ")");
    }
  }
  auto nodes = api->load_nodes();
  if (!nodes) return s.done("not drained: " + nodes.error().to_string());
  auto n = find_node(*nodes, s.report.node, why);
  if (!n) return s.done("not drained: " + why);
  if (drainer_drains) {  // decided and counted by the drainer's breaker; its sink is late
    drain_self(*api, *n, s.o.reason, "vigil-drainer decided it; its drain did not show in Slurm",
               s.o);
    return s.o;
  }
  // 4. Not reached: the hook's own breaker over what Slurm shows.
  if (!nothing_to_drain(*n)) {
    if (auto held = local_breaker_holds(*nodes, *n, s.policy, s.now))
      return s.hold("drain held by the hook's circuit breaker: " + *held);
  }
  drain_self(*api, *n, s.o.reason,
             s.with_note("vigil-drainer not reached; policy from " + s.policy.source), s.o);
  return s.o;
}

}  // namespace

Outcome act(const NodeReport& report, const ActOptions& opts) {
  ActState s(report, opts);
  if (!opts.post) {
    s.o.delivery = "not posted (--no-post)";
    return s.done(s.o.fatal ? "would drain: " + s.o.reason + " (--no-post: nothing done)" : "none");
  }
  bool reached = false;
  const std::optional<ReportReply> reply = deliver(report, opts, s.o, reached);
  if (reply && reply->policy) s.adopt(*reply->policy);
  const ReportDecision decision =
      reply ? verdict_for(*reply, report)
            : ReportDecision{report.node, report.run_id, DrainVerdict::kUnknown, "", ""};
  s.o.verdict = decision.verdict;
  if (auto ended = obey_verdict(s, decision, reached)) return *ended;
  const bool drainer_drains = decision.verdict == DrainVerdict::kDrain;
  // The drainer's words when they are a vigil reason (else ours: Vigil only lifts vigil: drains).
  if (drainer_drains && slurm::reason_is_vigil(decision.reason)) s.o.reason = decision.reason;
  if (!s.o.fatal && !drainer_drains) return s.done("none");
  if (!drainer_drains) {
    if (auto why = cached_policy_holds(s.policy, s.cache_note, s.o.reason)) return s.hold(*why);
  }
  return drain_in_slurm(s, drainer_drains);
}

}  // namespace vigil::hook
