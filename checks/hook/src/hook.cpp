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
    if (n && (slurm::drained_by_vigil(*n) || slurm::drained_by_other(*n) || slurm::untouchable(*n)))
      return n;
    if (SteadyClock::now() >= until) return n;
    sleep(opts.poll_interval);
  }
}

}  // namespace

std::optional<Mode> mode_from_string(std::string_view s) {
  if (s == "prolog") return Mode::kProlog;
  if (s == "epilog") return Mode::kEpilog;
  if (s == "healthcheck") return Mode::kHealthcheck;
  return std::nullopt;
}

std::string_view to_string(Mode m) {
  switch (m) {
    case Mode::kProlog:
      return "prolog";
    case Mode::kEpilog:
      return "epilog";
    case Mode::kHealthcheck:
      return "healthcheck";
  }
  return "healthcheck";
}

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

}  // namespace

Outcome act(const NodeReport& report, const ActOptions& opts) {
  Outcome o;
  const int64_t now = opts.now_unix ? opts.now_unix() : SystemClock().now_unix();
  std::string cache_note;
  SharedDrainPolicy policy = load_policy_cache(opts.policy_cache, &cache_note);
  o.reason = fatal_reason(report, policy);
  o.fatal = !o.reason.empty();
  if (!opts.post) {
    o.delivery = "not posted (--no-post)";
    o.action = o.fatal ? "would drain: " + o.reason + " (--no-post: nothing done)" : "none";
    return o;
  }
  bool reached = false;
  const std::optional<ReportReply> reply = deliver(report, opts, o, reached);
  if (reply && reply->policy) {
    // The drainer's own policy binds this run and is kept for when it cannot be reached.
    policy = *reply->policy;
    cache_note.clear();
    o.reason = fatal_reason(report, policy);
    o.fatal = !o.reason.empty();
    if (!opts.policy_cache.empty()) {
      if (auto saved = save_policy_cache(opts.policy_cache, *reply->policy, now); !saved)
        cache_note = "policy not kept: " + saved.error().to_string();
    }
  }
  const ReportDecision decision =
      reply ? verdict_for(*reply, report)
            : ReportDecision{report.node, report.run_id, DrainVerdict::kUnknown, "", ""};
  o.verdict = decision.verdict;
  auto with_note = [&](std::string s) {
    return cache_note.empty() ? s : s + " [" + cache_note + "]";
  };
  auto hold = [&](std::string why) {
    o.held = true;
    o.action = with_note(std::move(why));
    return o;
  };
  std::unique_ptr<slurm::SlurmApi> api;
  auto slurm_api = [&]() -> slurm::SlurmApi* {
    if (!api && opts.slurm) api = opts.slurm();
    return api.get();
  };

  // 1. The drainer decided: obey it.
  switch (decision.verdict) {
    case DrainVerdict::kBreakerHeld:
      return hold("drain held by vigil-drainer's circuit breaker (" + decision.why + ")");
    case DrainVerdict::kDryRun:
      return hold("vigil-drainer is in dry-run: would drain (" + decision.reason + ")");
    case DrainVerdict::kNoDrain:
      o.action = o.fatal ? "not drained: vigil-drainer's policy does not drain on this report" +
                               (decision.why.empty() ? "" : " (" + decision.why + ")")
                         : "none";
      return o;
    case DrainVerdict::kOtherOwner:
      o.action = o.fatal ? "not drained: " + decision.why : "none (" + decision.why + ")";
      return o;
    case DrainVerdict::kAlreadyDrained: {
      // Exit 1 only for a fatal finding on a node Slurm shows drained by vigil now: the
      // drainer's view of Slurm may be seconds old (an operator may just have resumed it).
      std::string why;
      slurm::SlurmApi* a = o.fatal ? slurm_api() : nullptr;
      auto nodes = a ? a->load_nodes()
                     : Result<std::vector<slurm::SlurmNodeInfo>>(Error{"not fatal", "hook"});
      auto n = nodes ? find_node(*nodes, report.node, why) : std::nullopt;
      if (n && slurm::drained_by_vigil(*n)) {
        o.action = "already drained by vigil (" + n->reason + ")";
        o.exit_code = 1;
      } else {
        o.action = o.fatal ? "not drained: vigil-drainer counts the node as drained by vigil, "
                             "Slurm does not show it now; the drainer decides on its next report"
                           : "none (node drained by vigil)";
      }
      return o;
    }
    case DrainVerdict::kDrain:
      break;
    case DrainVerdict::kUnknown:
      // Reached but no verdict (an older drainer, the node decided a newer report meanwhile, a
      // timeout after the report went out, a busy or not-ready drainer): the report is the
      // drainer's, and so is the drain. The hook drains alone only when nothing answered.
      if (reached && o.fatal)
        return hold("not drained by the hook: vigil-drainer was reached but gave no verdict (" +
                    (decision.why.empty() ? o.delivery : decision.why) +
                    "); the drain is the drainer's decision");
      break;
  }
  const bool drainer_drains = decision.verdict == DrainVerdict::kDrain;
  // The drainer's words when they are a vigil reason (else ours: Vigil only lifts vigil: drains).
  if (drainer_drains && slurm::reason_is_vigil(decision.reason)) o.reason = decision.reason;
  if (!o.fatal && !drainer_drains) {
    o.action = "none";
    return o;
  }
  if (!drainer_drains) {
    // 2. Not reached: the last policy the drainer sent binds (dry-run, its open breaker); with
    //    no readable policy the hook does not drain on its own.
    if (policy.unreadable) return hold("not drained by the hook: " + cache_note);
    if (policy.dry_run)
      return hold("dry-run (policy from " + policy.source + "): would drain: " + o.reason);
    if (policy.breaker_open)
      return hold(
          "drain held: vigil-drainer's circuit breaker was open when it last answered "
          "(policy from " +
          policy.source + ")");
  }
  if (!slurm_api()) {
    o.action = "not drained: no Slurm client";
    return o;
  }
  std::string why;
  // 3. The drainer's drain: give it drain_wait to show in Slurm.
  std::optional<slurm::SlurmNodeInfo> n;
  if (drainer_drains) {
    n = wait_for_vigil_drain(*api, report.node, opts, why);
    if (n && slurm::drained_by_vigil(*n)) {
      o.action = "drained by vigil-drainer (" + n->reason + ")";
      o.exit_code = 1;
      return o;
    }
  }
  auto nodes = api->load_nodes();
  if (!nodes) {
    o.action = "not drained: " + nodes.error().to_string();
    return o;
  }
  n = find_node(*nodes, report.node, why);
  if (!n) {
    o.action = "not drained: " + why;
    return o;
  }
  if (drainer_drains) {  // decided and counted by the drainer's breaker; its sink is late
    drain_self(*api, *n, o.reason, "vigil-drainer decided it; its drain did not show in Slurm", o);
    return o;
  }
  // 4. Not reached: the hook's own breaker over what Slurm shows.
  if (!slurm::drained_by_vigil(*n) && !slurm::drained_by_other(*n) && !slurm::untouchable(*n)) {
    if (auto held = local_breaker_holds(*nodes, *n, policy, now))
      return hold("drain held by the hook's circuit breaker: " + *held);
  }
  drain_self(*api, *n, o.reason,
             with_note("vigil-drainer not reached; policy from " + policy.source), o);
  return o;
}

}  // namespace vigil::hook
