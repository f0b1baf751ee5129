// The hold around a re-check of a node Vigil drained (docs/recheck.md "The hold"; plan.h Hold).
// Everything goes through Slurm's own commands (scontrol, salloc, srun, scancel) as processes:
// several holds run at once, and libslurm's configuration is process-global.
#include "hold.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "vigil/base/strings.h"
#include "vigil/slurm/reason.h"
#include "vigil/slurm/scontrol.h"

namespace vigil::submit {
namespace {

using std::chrono::seconds;

LaunchOptions slurm_options(const std::string& slurm_conf, int timeout_s) {
  LaunchOptions o;
  o.timeout = seconds(timeout_s);
  o.merge_stderr = true;
  o.max_output = 64 << 10;
  if (!slurm_conf.empty()) o.env.emplace_back("SLURM_CONF", slurm_conf);
  return o;
}

// One Slurm command; its output, or why it failed.
Result<std::string> slurm_cmd(const std::vector<std::string>& argv, const std::string& conf,
                              int timeout_s = 30) {
  auto r = run_command(argv, slurm_options(conf, timeout_s));
  if (!r.ok()) return Error{r.error().message, argv.front()};
  if (r->exit_code != 0 || r->timed_out) {
    return Error{"`" + shell_join(argv) + "` failed (exit " + std::to_string(shell_status(*r)) +
                     "): " + std::string(trim(r->out)),
                 argv.front()};
  }
  return r->out;
}

// The nodes as scontrol shows them now, in the order asked.
Result<std::vector<slurm::SlurmNodeInfo>> nodes_now(const std::vector<std::string>& names,
                                                    const std::string& conf) {
  auto api = slurm::make_scontrol_api(conf);
  VIGIL_TRY(auto nodes, api->load_nodes_named(names));
  std::vector<slurm::SlurmNodeInfo> out;
  for (const std::string& name : names) {
    auto it =
        std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.name == name; });
    if (it == nodes.end()) return Error{"node " + name + " unknown to slurmctld", "hold"};
    out.push_back(*it);
  }
  return out;
}

Result<slurm::SlurmNodeInfo> node_now(const std::string& node, const std::string& conf) {
  VIGIL_TRY(auto nodes, nodes_now({node}, conf));
  return nodes.front();
}

// The held node first, then its partners.
std::vector<std::string> held_nodes(const Hold& h) {
  std::vector<std::string> all = {h.node};
  all.insert(all.end(), h.partners.begin(), h.partners.end());
  return all;
}

// Why a partner cannot serve (busy, drained, down, or already reserved), or empty.
std::string partner_unfit(const slurm::SlurmNodeInfo& p, bool hold_taken) {
  if (p.drain || p.state != "IDLE" || p.completing)
    return "the partner " + p.name + " is no longer idle (" + p.state + (p.drain ? "+DRAIN" : "") +
           ")";
  if (!hold_taken && (p.reserved || p.maint))
    return "the partner " + p.name + " is already in a reservation";
  return "";
}

VoidResult drain(const std::string& node, const std::string& reason, const std::string& conf) {
  return slurm::make_scontrol_api(conf)->drain({node}, reason);
}

// Deletes the reservation; Slurm refuses while a job of it still completes, so a few tries.
VoidResult release(const Hold& h, const std::string& conf) {
  Result<std::string> r = Error{"not tried", "hold"};
  for (int attempt = 0; attempt < 30; ++attempt) {
    r = slurm_cmd({"scontrol", "delete", "ReservationName=" + h.reservation}, conf);
    if (r.ok()) return ok_result();
    std::this_thread::sleep_for(seconds(2));
  }
  return r.error();
}

// Cancels the hold's allocation and waits until slurmctld lets it go (its Epilog included).
void end_allocation(const std::string& job, const std::string& conf) {
  (void)slurm_cmd({"scancel", job}, conf);
  for (int waited = 0; waited < 120; ++waited) {
    auto q = slurm_cmd({"squeue", "-h", "-j", job, "-o", "%T"}, conf);
    if (q.ok() && trim(*q).empty()) return;
    std::this_thread::sleep_for(seconds(1));
  }
}

LaunchResult refused(const Hold& h, const std::string& why) {
  LaunchResult r;
  r.exit_code = kHoldFailed;
  r.out = "vigil-submit: hold of " + h.node + " (" + h.reservation + "): " + why;
  return r;
}

// A hold whose node has its drain back (step 5 of run_held) gets an end: its Duration becomes the
// re-check's limit and a margin. Before that it has none: Slurm shows "Duration=UNLIMITED" as
// "Duration=365-00:00:00" (measured on 22.05). A hold still open that nobody finishes may have
// left its node undrained; a closed one, nothing.
bool open_hold(const std::string& line) {
  static const std::regex kDays("Duration=([0-9]+)-");
  std::smatch m;
  if (line.find("Duration=UNLIMITED") != std::string::npos) return true;
  return std::regex_search(line, m, kDays) && std::stol(m[1]) >= 30;
}

// Why the held node and its partners (held_nodes order) cannot be re-checked, or nullopt. Before
// the hold (!hold_taken) the node must be in no reservation: the site's, or another run's hold,
// which ours could overlap, and whose users' jobs could start on the node once it is undrained.
// Once held it must still be Vigil's drain, with the reason planned, and idle: else someone acted
// meanwhile. A partner must be idle: the hold must not wait behind, nor overlap, anyone's job.
std::optional<std::string> unfit(const Hold& h, const std::vector<slurm::SlurmNodeInfo>& nodes,
                                 bool hold_taken) {
  const slurm::SlurmNodeInfo& n = nodes.front();
  if (!hold_taken && (n.reserved || n.maint))
    return "the node is already in a reservation; not re-checked";
  if (hold_taken && (!n.drain || n.reason != h.reason || n.state != "IDLE" || n.completing)) {
    return "the node changed since the plan (" + n.state + (n.drain ? "+DRAIN" : "") +
           ", reason '" + n.reason + "'); not re-checked";
  }
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (auto why = partner_unfit(nodes[i], hold_taken); !why.empty())
      return why + "; not re-checked";
  }
  return std::nullopt;
}

// Ends a hold that failed before its step ran, with `why`. `undrained`: the node may have been
// undrained (a failed or timed-out UNDRAIN may still have been applied): it is drained again
// first, and the reservation is kept when that fails or the node cannot be read, so no user job
// can land on a node that was not checked.
LaunchResult give_up(const Hold& h, const std::string& conf, const std::string& why,
                     bool undrained) {
  std::string text = why;
  if (undrained) {
    auto now = node_now(h.node, conf);
    VoidResult d = !now.ok()    ? VoidResult(now.error())
                   : now->drain ? ok_result()
                                : drain(h.node, h.reason, conf);
    if (!d.ok()) {
      return refused(h, text +
                            "; draining again failed too, so the reservation stays (the "
                            "next run drains and releases it): " +
                            d.error().to_string());
    }
  }
  if (auto rel = release(h, conf); !rel.ok())
    text += "; the reservation stays (next run lets it go): " + rel.error().to_string();
  return refused(h, text);
}

// The nodes once the new reservation shows on all of them. slurmctld applies a new reservation
// to its nodes on its next pass (seconds): undraining before the node shows RESERVED would let a
// pending user job start there. The error is why the hold is given up.
Result<std::vector<slurm::SlurmNodeInfo>> wait_until_reserved(const std::vector<std::string>& names,
                                                              const std::string& conf) {
  for (int waited = 0;; ++waited) {
    auto read = nodes_now(names, conf);
    if (!read.ok()) return read.error();
    std::vector<slurm::SlurmNodeInfo> now = std::move(*read);
    // The table marks the node held when vigil-hold-<node> exists (slurm_api.h).
    const bool taken =
        now.front().vigil_hold &&
        std::all_of(now.begin(), now.end(), [](const auto& x) { return x.reserved || x.maint; });
    if (taken) return now;
    if (waited >= 60) return Error{"the reservation did not take hold within 30 s", ""};
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// The allocation's job id: the whole node (and its partners) with every GPU, inside the
// reservation. The error is why the hold is given up (the node may be undrained by then).
Result<std::string> allocate(const Hold& h, const std::string& conf) {
  auto alloc = run_command(h.allocate, slurm_options(conf, 90));
  std::smatch m;
  static const std::regex kGranted("Granted job allocation ([0-9]+)");
  const std::string alloc_out = alloc.ok() ? alloc->out : alloc.error().message;
  const bool granted = std::regex_search(alloc_out, m, kGranted);
  if (!alloc.ok() || alloc->exit_code != 0 || !granted) {
    if (granted) end_allocation(m[1], conf);  // granted, then salloc failed or timed out
    return Error{"salloc failed: " + std::string(trim(alloc_out)), ""};
  }
  return m[1].str();
}

// The re-check itself, a step of the allocation `job`.
LaunchResult run_step(std::vector<std::string> step, const std::string& job, int timeout_s,
                      const std::string& conf) {
  for (auto& a : step) {
    if (const auto at = a.find(kHoldJobId); at != std::string::npos)
      a.replace(at, kHoldJobId.size(), job);
  }
  LaunchOptions lo = slurm_options(conf, timeout_s);
  lo.max_output = 4096;
  auto result = run_command(step, lo);
  if (result.ok()) return *result;
  LaunchResult out;
  out.exit_code = 127;
  out.out = result.error().message;
  return out;
}

}  // namespace

LaunchResult run_held(const PlannedCommand& c, int timeout_s, const std::string& conf) {
  const Hold& h = *c.hold;
  const std::vector<std::string> names = held_nodes(h);
  // 0. The node in no reservation, its partners idle (unfit).
  auto before = nodes_now(names, conf);
  if (!before.ok()) return refused(h, before.error().to_string());
  if (auto why = unfit(h, *before, false)) return refused(h, *why);
  // 1. The reservation: from now on no job but the checker's may start on the nodes.
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
  auto created = slurm_cmd(
      {"scontrol", "create", "reservation", "ReservationName=" + h.reservation, "Nodes=" + list,
       "Users=" + h.user, "StartTime=now", "Duration=UNLIMITED", "Flags=IGNORE_JOBS"},
      conf);
  if (!created.ok()) {
    return refused(
        h, "cannot create the reservation; node stays drained: " + created.error().to_string());
  }
  // 2. The reservation shows on the nodes.
  auto now = wait_until_reserved(names, conf);
  if (!now.ok()) return give_up(h, conf, now.error().to_string(), false);
  // 3. Still Vigil's drain, with the reason planned, and idle: else someone acted meanwhile.
  if (auto why = unfit(h, *now, true)) return give_up(h, conf, *why, false);
  // From the UNDRAIN to step 5 the node has no drain; an admin's drain landing in that gap of
  // seconds is overwritten by step 5 (docs/recheck.md).
  if (auto u = slurm_cmd({"scontrol", "update", "NodeName=" + h.node, "State=UNDRAIN"}, conf);
      !u.ok())
    return give_up(h, conf, "cannot undrain: " + u.error().to_string(), true);
  // 4. The allocation.
  auto job = allocate(h, conf);
  if (!job.ok()) return give_up(h, conf, job.error().to_string(), true);
  // 5. The drain and its reason back before anything runs: the drainer sees its own drain for the
  // whole re-check, and resumes the node (inside the allocation) when the reports say so.
  if (auto d = drain(h.node, h.reason, conf); !d.ok()) {
    end_allocation(*job, conf);
    return give_up(h, conf, "cannot drain it again: " + d.error().to_string(), true);
  }
  // The mark of a hold whose drain is back: an end (the allocation's limit and a margin). A
  // vigil-submit killed from here on leaves nothing to undo; the reservation ends by itself.
  (void)slurm_cmd({"scontrol", "update", "ReservationName=" + h.reservation,
                   "Duration=" + std::to_string(timeout_s / 60 + 15)},
                  conf);
  // 6. The re-check itself.
  LaunchResult out = run_step(c.argv, *job, timeout_s, conf);
  // 7. Let the node go: the allocation, then the reservation. The drain stays as the drainer
  // left it (a pass that reached resume_after has already lifted it).
  end_allocation(*job, conf);
  if (auto rel = release(h, conf); !rel.ok())
    out.out += "\nvigil-submit: the reservation " + h.reservation +
               " stays (next run lets it go): " + rel.error().to_string();
  return out;
}

std::vector<std::string> release_stale_holds(const std::vector<slurm::SlurmJobInfo>& jobs,
                                             const SubmitOptions& o, const std::string& conf) {
  std::vector<std::string> done;
  auto listing = slurm_cmd({"scontrol", "-o", "show", "reservation"}, conf);
  if (!listing.ok()) return done;  // "No reservations in the system" exits 0; a failure: next run
  static const std::regex kName("ReservationName=(\\S+)");
  static const std::regex kStart("StartTime=([0-9T:-]+)");
  std::istringstream lines(*listing);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, kName)) continue;
    const std::string name = m[1];
    if (name.rfind(kHoldPrefix, 0) != 0) continue;
    const std::string node = name.substr(kHoldPrefix.size());
    const bool in_progress = std::any_of(jobs.begin(), jobs.end(), [&](const auto& j) {
      return j.active && j.name == o.job_name + "-recheck" &&
             std::find(j.nodes.begin(), j.nodes.end(), node) != j.nodes.end();
    });
    if (in_progress) continue;  // another vigil-submit's hold, its allocation running
    // A hold younger than a whole re-check may be another run's, between its reservation and
    // its allocation (a manual run beside the schedule): left alone.
    std::smatch start;
    if (std::regex_search(line, start, kStart)) {
      std::tm tm{};
      if (strptime(start[1].str().c_str(), "%Y-%m-%dT%H:%M:%S", &tm) != nullptr &&
          std::difftime(std::time(nullptr), std::mktime(&tm)) <
              o.recheck_timeout_s + o.hold_setup_s)
        continue;
    }
    Hold h{node, name, "", "", {}, {}};
    std::string what = "released " + name;
    auto n = node_now(node, conf);
    if (!n.ok()) {
      done.push_back("kept " + name + ": cannot read " + node + ": " + n.error().to_string());
      continue;
    }
    // With its drain back (the mark: an end) the node is as the drainer left it.
    if (!n->drain && open_hold(line)) {
      // Undrained inside a hold that nobody finishes: never proven healthy by this hold, so it
      // is drained for its next re-check rather than let go into service.
      const std::string reason = std::string(slurm::kReasonPrefix) + " recheck interrupted";
      if (auto d = drain(node, reason, conf); !d.ok()) {
        done.push_back("kept " + name + ": " + node +
                       " is not drained and draining failed: " + d.error().to_string());
        continue;
      }
      what += " and drained " + node + " ('" + reason + "')";
    } else if (!n->drain) {
      what += " (" + node + "'s drain was back; the drainer has resumed it)";
    }
    if (auto rel = release(h, conf); !rel.ok()) {
      done.push_back("could not release " + name + ": " + rel.error().to_string());
      continue;
    }
    done.push_back(what);
  }
  return done;
}

}  // namespace vigil::submit
