// vigil-submit: read Slurm, plan, print, launch (sbatch paced; held re-checks in parallel).
#include "vigil/submit/submit.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "hold.h"
#include "vigil/base/files.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/base/time.h"
#include "vigil/report/report.h"
#include "vigil/slurm/scontrol.h"
#include "vigil/slurm/slurm_api.h"
#include "vigil/slurm/slurm_jobs.h"
#include "vigil/slurm/slurm_rest.h"
#include "vigil/slurm/slurm_topology.h"
#include "vigil/submit/config_check.h"

namespace vigil::submit {
namespace {

constexpr size_t kKeepOutput = 4096;  // last bytes of a command's output kept for the table

// Runs argvs (at most `concurrency` at a time) with stdout+stderr on one stream.
std::vector<LaunchResult> run_all(const std::vector<std::vector<std::string>>& argvs,
                                  int concurrency, int timeout_s) {
  LaunchOptions lo;
  lo.timeout = std::chrono::seconds(timeout_s);
  lo.max_output = kKeepOutput;
  lo.merge_stderr = true;
  auto results = run_commands(argvs, concurrency, lo);
  // A command that could not be started says why in err; keep one stream for the table.
  for (auto& r : results) r.out += r.err;
  return results;
}

// The command as a runnable shell line. An inline script (bash -c TEXT) is shown as
// "$(cat JOB_SCRIPT)", which is what it was read from.
std::string display_command(const PlannedCommand& c, const std::string& job_script) {
  static const std::string kMarker = "@@VIGIL_JOB_SCRIPT@@";
  std::vector<std::string> shown = c.argv;
  bool inline_script = false;
  for (size_t i = 0; i + 1 < shown.size(); ++i) {
    if (shown[i] == "-c" && shown[i + 1].find('\n') != std::string::npos) {
      shown[i + 1] = kMarker;
      inline_script = true;
    }
  }
  std::string line = shell_join(shown);
  if (inline_script) {
    line.replace(line.find(kMarker), kMarker.size(), "\"$(cat " + shell_join({job_script}) + ")\"");
  }
  if (c.hold) {
    // Not a line to paste: the hold's steps have checks between them (hold.cpp run_held).
    const Hold& h = *c.hold;
    line = "[hold " + h.reservation + ": reservation for " + h.user +
           ", wait for RESERVED, check the drain, UNDRAIN, " + shell_join(h.allocate) + ", DRAIN " +
           shell_join({"Reason=" + h.reason}) + "] " + line +
           " [then scancel, delete the reservation]";
  }
  return line;
}

// Runs the held re-checks, at most `concurrency` at a time; results in input order.
std::vector<LaunchResult> run_rechecks(const std::vector<PlannedCommand>& rechecks, int concurrency,
                                       int timeout_s, const std::string& slurm_conf) {
  std::vector<LaunchResult> results(rechecks.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < rechecks.size(); i = next++) {
      results[i] = run_held(rechecks[i], timeout_s, slurm_conf);
    }
  };
  std::vector<std::thread> pool;
  const size_t n = std::min(rechecks.size(), static_cast<size_t>(std::max(1, concurrency)));
  for (size_t t = 0; t < n; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return results;
}

// The node table, or nullopt after saying why it could not be read.
std::optional<std::vector<slurm::SlurmNodeInfo>> load_nodes_or_say(slurm::SlurmApi& api) {
  auto nodes = api.load_nodes();
  if (nodes.ok()) return std::move(*nodes);
  std::fprintf(stderr, "vigil-submit: cannot read node states: %s\n",
               nodes.error().to_string().c_str());
  return std::nullopt;
}

// The name of the user this process runs as: the only user of a re-check's hold.
std::string own_user() {
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) return pw->pw_name;
  return "root";
}

std::string last_line(const std::string& s) {
  std::string t(trim(s));
  const auto pos = t.rfind('\n');
  return pos == std::string::npos ? t : t.substr(pos + 1);
}

std::string default_run_id() { return compact_utc(std::time(nullptr)); }

void print_table(const SubmitPlan& plan, const std::vector<CommandOutcome>& outcomes,
                 bool dry_run) {
  // Per node: the action, job ids / results, and why.
  std::map<std::string, std::string> results;
  for (const CommandOutcome& o : outcomes) {
    std::string r;
    if (dry_run) {
      r = "dry-run";
    } else if (!o.ran) {
      r = "not run";
    } else if (o.kind.ends_with("recheck")) {  // every re-check is held
      r = o.timed_out                  ? "timed out"
          : o.exit_code == kHoldFailed ? "hold failed"
                                       : "check exit " + std::to_string(o.exit_code);
    } else {
      r = o.exit_code == 0 ? "job " + o.job_id : "sbatch failed";
    }
    if (o.kind == "fabric" || o.kind == "domain") r = o.kind + " " + r;
    if (o.kind == "fabric-recheck") r = "fabric re-check " + r;
    if (o.kind == "domain-recheck") r = "domain re-check " + r;
    for (const auto& n : o.nodes) {
      auto& slot = results[n];
      slot += (slot.empty() ? "" : ", ") + r;
    }
  }
  size_t w_node = 4, w_action = 7, w_result = 6;
  for (const NodeVerdict& v : plan.verdicts) {
    w_node = std::max(w_node, v.node.size());
    w_result = std::max(w_result, results[v.node].size());
  }
  std::printf("%-*s  %-*s  %-*s  %s\n", int(w_node), "NODE", int(w_action), "ACTION", int(w_result),
              "RESULT", "WHY");
  for (const NodeVerdict& v : plan.verdicts) {
    std::printf("%-*s  %-*s  %-*s  %s\n", int(w_node), v.node.c_str(), int(w_action),
                std::string(to_string(v.action)).c_str(), int(w_result),
                (results[v.node].empty() ? "-" : results[v.node]).c_str(), v.why.c_str());
  }
}

// The node table and job queue readers of the chosen backend.
Result<std::pair<std::unique_ptr<slurm::SlurmApi>, std::unique_ptr<slurm::SlurmJobReader>>>
slurm_readers(const SubmitRunOptions& o) {
  if (!o.slurm_rest) {
    return std::make_pair(slurm::make_libslurm_api(o.slurm_conf),
                          slurm::make_libslurm_job_reader(o.slurm_conf));
  }
  VIGIL_TRY(auto api, slurm::make_rest_api(o.rest));
  VIGIL_TRY(auto jobs, slurm::make_rest_job_reader(o.rest));
  return std::make_pair(std::move(api), std::move(jobs));
}

}  // namespace

Result<std::map<std::string, std::string>> load_nvlink_domains(const std::string& option,
                                                               const std::string& slurm_conf) {
  if (option != "slurm") {
    auto map = load_node_map(option, "domain");
    if (!map.ok()) return Error{map.error().to_string(), "--nvlink-domains"};
    return map;
  }
  auto blocks = slurm::load_blocks(slurm_conf);
  if (!blocks.ok()) return Error{blocks.error().to_string(), "--nvlink-domains slurm"};
  if (blocks->empty())
    return Error{
        "Slurm has no blocks (TopologyPlugin=topology/block, Slurm 23.11+); give a "
        "'<node> <domain>' map file instead",
        "--nvlink-domains slurm"};
  return blocks;
}

int run_config_check(const SubmitRunOptions& o) {
  LaunchOptions lo;
  lo.timeout = std::chrono::seconds(30);
  if (!o.slurm_conf.empty()) lo.env.emplace_back("SLURM_CONF", o.slurm_conf);
  auto shown = run_command({"scontrol", "show", "config"}, lo);
  if (!shown.ok() || shown->exit_code != 0) {
    std::fprintf(
        stderr, "vigil-submit --check-config: `scontrol show config` failed: %s\n",
        shown.ok() ? std::string(trim(shown->err)).c_str() : shown.error().to_string().c_str());
    return 2;
  }
  auto readers = slurm_readers(o);
  if (!readers.ok()) {
    std::fprintf(stderr, "vigil-submit: %s\n", readers.error().to_string().c_str());
    return 2;
  }
  auto nodes = load_nodes_or_say(*readers.value().first);
  if (!nodes) return 2;
  ConfigCheckInput in;
  in.config = slurm::config_from_scontrol(shown->out);
  in.partition = o.plan.partition;
  in.reservation = o.plan.reservation;
  in.boot_s = o.boot_time_s;
  const std::set<std::string> wanted(o.plan.nodes.begin(), o.plan.nodes.end());
  in.partition_found = in.partition.empty();
  for (const auto& n : *nodes) {
    const bool in_partition =
        in.partition.empty() ||
        std::find(n.partitions.begin(), n.partitions.end(), in.partition) != n.partitions.end();
    if (in_partition && !in.partition.empty()) in.partition_found = true;
    if (in_partition && (wanted.empty() || wanted.count(n.name))) in.nodes.push_back(n);
  }
  if (!in.reservation.empty()) {
    auto res = run_command({"scontrol", "-o", "show", "reservation", in.reservation}, lo);
    in.reservation_found = res.ok() && res->exit_code == 0 &&
                           res->out.find("ReservationName=" + in.reservation) != std::string::npos;
  }
  in.file_state = [](const std::string& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return 2;
    return ::access(path.c_str(), X_OK) == 0 && S_ISREG(st.st_mode) ? 0 : 1;
  };
  const auto findings = check_config(in);
  std::printf("%s", config_table(findings).c_str());
  const bool problem = std::any_of(findings.begin(), findings.end(),
                                   [](const auto& f) { return f.level == ConfigLevel::kProblem; });
  std::fprintf(stderr, "vigil-submit --check-config: %s\n",
               problem ? "problems above; fix them before the first run"
                       : "nothing stops Vigil here (warnings above are choices to make)");
  return problem ? 1 : 0;
}

Result<std::vector<DueRecheck>> load_rechecks_due(const ReportClientOptions& drainer) {
  VIGIL_TRY(auto body, get_from_drainer("/v1/rechecks", drainer));
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("rechecks") || !j["rechecks"].is_array())
    return Error{"the answer is not {\"rechecks\": [...]}: " + body.substr(0, 200),
                 "GET " + drainer.url + " /v1/rechecks"};
  std::vector<DueRecheck> nodes;
  for (const auto& r : j["rechecks"]) {
    if (!r.is_object() || !r.contains("node") || !r["node"].is_string())
      return Error{"an entry without a node name: " + r.dump(), "GET /v1/rechecks"};
    DueRecheck due{r["node"].get<std::string>(), ""};
    if (r.contains("suite")) {
      if (!r["suite"].is_string() || !is_known_suite(r["suite"].get<std::string>()))
        return Error{"an entry with an unknown suite (quick, full, qualify): " + r.dump(),
                     "GET /v1/rechecks"};
      due.suite = r["suite"].get<std::string>();
    }
    nodes.push_back(std::move(due));
  }
  return nodes;
}

namespace {

// --rechecks-from: narrows o.plan to the nodes the drainer wants re-checked now (held re-checks
// only). The exit code when the run ends here: 2 on an error, 0 when none is due.
std::optional<int> narrow_to_rechecks_due(SubmitRunOptions& o) {
  auto due = load_rechecks_due(o.rechecks_from);
  if (!due.ok()) {
    std::fprintf(stderr, "vigil-submit: --rechecks-from: %s\n", due.error().to_string().c_str());
    return 2;
  }
  if (!o.plan.nodes.empty()) {  // --nodes narrows the list, never widens it
    const std::set<std::string> wanted(o.plan.nodes.begin(), o.plan.nodes.end());
    std::erase_if(*due, [&](const DueRecheck& d) { return !wanted.count(d.node); });
  }
  if (due->empty()) {
    std::fprintf(stderr, "vigil-submit: no re-checks due (%s%s)\n", o.rechecks_from.url.c_str(),
                 o.plan.nodes.empty() ? "" : ", among --nodes");
    if (o.json) std::printf("{\"commands\": [], \"nodes\": []}\n");
    return 0;
  }
  o.plan.nodes.clear();  // only these; re-checked, never given a node job
  for (const DueRecheck& d : *due) {
    o.plan.nodes.push_back(d.node);
    if (!d.suite.empty()) o.plan.recheck_suite[d.node] = d.suite;
  }
  o.plan.max_jobs = 0;
  o.plan.fabric = false;
  return std::nullopt;
}

// The plan's defaults (run id, seed) and what it reads from files: the re-check script, the
// NVLink domains. False after saying what could not be read.
bool complete_plan_options(SubmitRunOptions& o) {
  if (o.plan.run_id.empty()) o.plan.run_id = default_run_id();
  if (o.plan.seed == 0) o.plan.seed = static_cast<uint64_t>(std::time(nullptr));
  if (o.plan.recheck && o.plan.recheck_script_text.empty()) {
    std::ifstream in(o.plan.job_script);
    if (!in) {
      std::fprintf(stderr,
                   "vigil-submit: cannot read the job script %s (--job-script); it is also the "
                   "re-check script\n",
                   o.plan.job_script.c_str());
      return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    o.plan.recheck_script_text = ss.str();
  }
  if (!o.nvlink_domains.empty()) {
    auto domains = load_nvlink_domains(o.nvlink_domains, o.slurm_conf);
    if (!domains.ok()) {
      std::fprintf(stderr, "vigil-submit: %s\n", domains.error().to_string().c_str());
      return false;
    }
    o.plan.nvlink_domain_of = std::move(*domains);
  }
  return true;
}

struct SlurmNow {
  std::vector<slurm::SlurmNodeInfo> nodes;
  std::vector<slurm::SlurmJobInfo> jobs;
};

// The node table and the job queue, after releasing the holds an earlier run left when it was
// killed (docs/recheck.md "The hold"); nullopt after saying what could not be read.
std::optional<SlurmNow> read_slurm(const SubmitRunOptions& o) {
  auto readers = slurm_readers(o);
  if (!readers.ok()) {
    std::fprintf(stderr, "vigil-submit: --slurm-backend rest: %s\n",
                 readers.error().to_string().c_str());
    return std::nullopt;
  }
  auto nodes = load_nodes_or_say(*readers.value().first);
  if (!nodes) return std::nullopt;
  auto jobs = readers.value().second->load_jobs();
  if (!jobs.ok()) {
    std::fprintf(stderr, "vigil-submit: cannot read the job queue: %s\n",
                 jobs.error().to_string().c_str());
    return std::nullopt;
  }
  if (o.plan.recheck && !o.dry_run) {
    const auto released = release_stale_holds(*jobs, o.plan, o.slurm_conf);
    for (const auto& line : released) std::fprintf(stderr, "vigil-submit: %s\n", line.c_str());
    if (!released.empty()) {
      nodes = load_nodes_or_say(*readers.value().first);
      if (!nodes) return std::nullopt;
    }
  }
  return SlurmNow{std::move(*nodes), std::move(*jobs)};
}

// One outcome per planned command, sbatch jobs first, nothing run yet.
std::vector<CommandOutcome> planned_outcomes(const SubmitPlan& plan,
                                             const std::string& job_script) {
  std::vector<CommandOutcome> outcomes;
  for (const auto* list : {&plan.jobs, &plan.rechecks}) {
    for (const PlannedCommand& c : *list) {
      CommandOutcome out;
      out.kind = c.kind;
      out.nodes = c.nodes;
      out.command = display_command(c, job_script);
      outcomes.push_back(std::move(out));
    }
  }
  return outcomes;
}

void record(CommandOutcome& out, const LaunchResult& r) {
  out.ran = true;
  out.exit_code = shell_status(r);
  out.timed_out = r.timed_out;
  out.output = trim(r.out);
}

// sbatch one at a time, paced, so a large fleet does not flood slurmctld. False when a job
// could not be submitted.
bool submit_jobs(const SubmitPlan& plan, const SubmitRunOptions& o,
                 std::vector<CommandOutcome>& outcomes) {
  bool ok = true;
  int consecutive_failures = 0;
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    if (consecutive_failures >= o.max_consecutive_failures) {
      std::fprintf(stderr,
                   "vigil-submit: %d sbatch failures in a row; not submitting the remaining "
                   "%zu jobs (is slurmctld healthy? see the errors above)\n",
                   consecutive_failures, plan.jobs.size() - i);
      return false;
    }
    if (i > 0 && o.interval_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
    }
    const LaunchResult r = run_all({plan.jobs[i].argv}, 1, o.sbatch_timeout_s)[0];
    CommandOutcome& out = outcomes[i];
    record(out, r);
    if (out.exit_code == 0) {
      out.job_id = last_line(r.out);
      consecutive_failures = 0;
    } else {
      ++consecutive_failures;
      ok = false;
      std::fprintf(stderr, "vigil-submit: sbatch for %s failed (exit %d): %s\n",
                   plan.jobs[i].nodes.front().c_str(), out.exit_code, out.output.c_str());
    }
  }
  return ok;
}

// The held re-checks; their outcomes follow the sbatch jobs'. False when one did not run to
// the end.
bool run_planned_rechecks(const SubmitPlan& plan, const SubmitRunOptions& o,
                          std::vector<CommandOutcome>& outcomes) {
  if (plan.rechecks.empty()) return true;
  std::fprintf(stderr, "vigil-submit: running %zu re-check(s), %d at a time, %d s timeout each\n",
               plan.rechecks.size(), o.recheck_concurrency, o.plan.recheck_timeout_s);
  const auto results =
      run_rechecks(plan.rechecks, o.recheck_concurrency, o.plan.recheck_timeout_s, o.slurm_conf);
  bool ok = true;
  for (size_t i = 0; i < results.size(); ++i) {
    CommandOutcome& out = outcomes[plan.jobs.size() + i];
    record(out, results[i]);
    // 0..3 are vigil-check's verdicts (pass/fail/warn/error); anything else means the
    // re-check itself did not run to the end (kHoldFailed: its hold could not be set up).
    if (out.timed_out || out.exit_code < 0 || out.exit_code > 3) {
      ok = false;
      std::fprintf(stderr, "vigil-submit: re-check of %s %s (exit %d): %s\n",
                   out.nodes.front().c_str(), out.timed_out ? "timed out" : "failed", out.exit_code,
                   last_line(out.output).c_str());
    }
  }
  return ok;
}

void print_json(const SubmitRunOptions& o, const SubmitPlan& plan,
                const std::vector<CommandOutcome>& outcomes) {
  nlohmann::json j;
  j["run_id"] = o.plan.run_id;
  j["dry_run"] = o.dry_run;
  for (const NodeVerdict& v : plan.verdicts) {
    j["nodes"].push_back({{"node", v.node}, {"action", to_string(v.action)}, {"why", v.why}});
  }
  j["commands"] = nlohmann::json::array();
  for (const CommandOutcome& c : outcomes) {
    j["commands"].push_back({{"kind", c.kind},
                             {"nodes", c.nodes},
                             {"command", c.command},
                             {"ran", c.ran},
                             {"exit_code", c.exit_code},
                             {"timed_out", c.timed_out},
                             {"job_id", c.job_id},
                             {"output", c.output}});
  }
  std::printf("%s\n", j.dump(2).c_str());
}

}  // namespace

int run_submit(const SubmitRunOptions& ro) {
  if (ro.check_config) return run_config_check(ro);
  SubmitRunOptions o = ro;
  if (!o.rechecks_from.url.empty()) {
    if (auto ended = narrow_to_rechecks_due(o)) return *ended;
  }
  if (!complete_plan_options(o)) return 2;
  const std::optional<SlurmNow> slurm = read_slurm(o);
  if (!slurm) return 2;
  if (o.plan.hold_user.empty()) o.plan.hold_user = own_user();
  const SubmitPlan plan = plan_submissions(slurm->nodes, slurm->jobs, o.plan);
  std::fprintf(stderr, "vigil-submit: run %s: %zu nodes, %zu sbatch jobs, %zu held re-checks%s\n",
               o.plan.run_id.c_str(), plan.verdicts.size(), plan.jobs.size(), plan.rechecks.size(),
               o.dry_run ? " (dry run)" : "");

  std::vector<CommandOutcome> outcomes = planned_outcomes(plan, o.plan.job_script);
  int rc = 0;
  if (o.dry_run) {
    for (const CommandOutcome& c : outcomes) std::printf("%s\n", c.command.c_str());
  } else {
    const bool jobs_ok = submit_jobs(plan, o, outcomes);
    const bool rechecks_ok = run_planned_rechecks(plan, o, outcomes);
    rc = jobs_ok && rechecks_ok ? 0 : 1;
  }
  if (o.json) {
    print_json(o, plan, outcomes);
  } else {
    print_table(plan, outcomes, o.dry_run);
  }
  return rc;
}

}  // namespace vigil::submit
