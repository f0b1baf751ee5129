#include "vigil/hook/hook.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <thread>

#include "vigil/report/report_client.h"
#include "vigil/slurm/reason.h"

namespace vigil::hook {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Where is `node` in Slurm's table; nullopt with `why` set when it cannot be read.
std::optional<slurm::SlurmNodeInfo> find_node(slurm::SlurmApi& api, const std::string& node,
                                              std::string& why) {
  auto nodes = api.load_nodes();
  if (!nodes) {
    why = nodes.error().to_string();
    return std::nullopt;
  }
  for (auto& n : *nodes)
    if (n.name == node) return n;
  why = "node '" + node + "' unknown to Slurm";
  return std::nullopt;
}

// Drains `node` with `reason` unless Slurm already shows a vigil drain, another owner's drain,
// or a node Vigil never touches. Returns what happened.
std::string drain_self(slurm::SlurmApi& api, const std::string& node, const std::string& reason,
                       bool& drained) {
  std::string why;
  auto n = find_node(api, node, why);
  if (!n) return "not drained: " + why;
  if (slurm::drained_by_vigil(*n)) return "already drained by vigil (" + n->reason + ")";
  if (slurm::drained_by_other(*n))
    return "not drained: drained by another owner (" + n->reason + ")";
  if (slurm::untouchable(*n)) return "not drained: node is DOWN/FAIL/MAINT";
  if (auto d = api.drain({node}, reason); !d) return "drain failed: " + d.error().to_string();
  drained = true;
  return "drained by the hook: " + reason;
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

bool is_fatal_check(std::string_view check) {
  static const std::set<std::string, std::less<>> kFatal = {
      "gpu_count", "nvml_ecc", "nvml_row_remap", "nvml_retired_pages",
      "kmsg_xid",  "ib_port",  "gpu_leftovers",  "gpu_sanity"};
  return kFatal.count(check) > 0;
}

std::vector<const CheckResult*> fatal_failures(const NodeReport& r) {
  std::vector<const CheckResult*> out;
  for (const auto& c : r.checks)
    if (c.status == Status::kFail && is_fatal_check(c.check)) out.push_back(&c);
  return out;
}

std::string fatal_reason(const NodeReport& r) {
  auto f = fatal_failures(r);
  if (f.empty()) return "";
  return slurm::make_reason(reason_name(*f.front()), reason_detail(*f.front()));
}

int exit_code(const NodeReport& r) { return fatal_failures(r).empty() ? 0 : 1; }

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

Outcome act(const NodeReport& report, const ActOptions& opts) {
  Outcome o;
  o.reason = fatal_reason(report);
  o.fatal = !o.reason.empty();
  if (!opts.post) {
    o.delivery = "not posted (--no-post)";
    o.action = o.fatal ? "would drain: " + o.reason + " (--no-post: nothing done)" : "none";
    return o;
  }
  bool delivered = false;
  if (opts.report_url.empty()) {
    if (opts.spool_dir.empty()) {
      o.delivery = "not posted: neither --report-url nor --spool-dir given";
    } else if (auto s = spool_report(report, opts.spool_dir); s) {
      o.delivery = "spooled to " + *s;
    } else {
      o.delivery = "not spooled: " + s.error().to_string();
      o.delivery_failed = true;
    }
  } else {
    ReportClientOptions client;
    client.url = opts.report_url;
    client.token_file = opts.token_file;
    client.ca_file = opts.ca_file;
    client.spool_dir = opts.spool_dir;
    client.auth = opts.auth;
    client.resend_max_files = 2;  // slurmd waits for the hook: a little of the spool per run
    client.max_attempts = 1;
    client.timeout_ms = opts.post_timeout_ms;
    if (opts.sleep) client.sleep = [&](int ms) { opts.sleep(std::chrono::milliseconds(ms)); };
    auto posted = post_report(report, client);
    if (!posted) {
      o.delivery = "neither delivered nor spooled: " + posted.error().to_string();
      o.delivery_failed = true;
    } else if (posted->delivered) {
      delivered = true;
      o.delivery = "delivered to " + opts.report_url;
    } else {
      o.delivery = "spooled to " + posted->spooled_path + " (" + posted->last_error + ")";
    }
  }
  if (!o.fatal) {
    o.action = "none";
    return o;
  }
  if (!opts.slurm) {
    o.action = "not drained: no Slurm client";
    return o;
  }
  auto api = opts.slurm();
  std::function<void(std::chrono::milliseconds)> sleep = opts.sleep;
  if (!sleep) sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  if (delivered) {
    // The drainer drains fatal findings at once; give it drain_wait to show in Slurm.
    const auto until = SteadyClock::now() + opts.drain_wait;
    for (;;) {
      std::string why;
      auto n = find_node(*api, report.node, why);
      if (n && slurm::drained_by_vigil(*n)) {
        o.action = "drained by vigil-drainer (" + n->reason + ")";
        return o;
      }
      if (n && (slurm::drained_by_other(*n) || slurm::untouchable(*n))) break;
      if (SteadyClock::now() >= until) break;
      sleep(opts.poll_interval);
    }
  }
  o.action = drain_self(*api, report.node, o.reason, o.drained_by_hook);
  return o;
}

}  // namespace vigil::hook
