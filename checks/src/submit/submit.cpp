// vigil-submit: read Slurm, plan, print, launch (sbatch paced; srun -Z re-checks in parallel).
#include "vigil/submit/submit.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "vigil/drainer/slurm_api.h"
#include "vigil/drainer/slurm_jobs.h"

namespace vigil::submit {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kKeepOutput = 4096;  // last bytes of a command's output kept for the table

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  Clock::time_point deadline;
  Clock::time_point killed_at;
  bool term_sent = false;
  std::string output;
};

void append_tail(std::string& out, const char* data, size_t n) {
  out.append(data, n);
  if (out.size() > 2 * kKeepOutput) out.erase(0, out.size() - kKeepOutput);
}

// fork + exec in a new process group with stdout+stderr on one pipe.
Child spawn(const std::vector<std::string>& argv, size_t index, int timeout_s,
            ProcessResult& failed) {
  Child c;
  c.index = index;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    failed = {127, false, "pipe2 failed"};
    return c;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    failed = {127, false, "fork failed"};
    return c;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot execute %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also in the parent: no race with an early kill
  close(fds[1]);
  c.pid = pid;
  c.fd = fds[0];
  c.deadline = Clock::now() + std::chrono::seconds(timeout_s);
  return c;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
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
  return line;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string last_line(const std::string& s) {
  std::string t = trim(s);
  const auto pos = t.rfind('\n');
  return pos == std::string::npos ? t : t.substr(pos + 1);
}

std::string default_run_id() {
  char buf[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

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
    } else if (o.kind == "recheck") {
      r = o.timed_out ? "timed out" : "check exit " + std::to_string(o.exit_code);
    } else {
      r = o.exit_code == 0 ? "job " + o.job_id : "sbatch failed";
    }
    if (o.kind == "fabric") r = "fabric " + r;
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

}  // namespace

std::vector<ProcessResult> run_processes(const std::vector<std::vector<std::string>>& argvs,
                                         int concurrency, int timeout_s) {
  std::vector<ProcessResult> results(argvs.size());
  std::vector<Child> running;
  size_t next = 0;
  if (concurrency < 1) concurrency = 1;
  while (next < argvs.size() || !running.empty()) {
    while (next < argvs.size() && running.size() < static_cast<size_t>(concurrency)) {
      ProcessResult failed;
      Child c = spawn(argvs[next], next, timeout_s, failed);
      if (c.pid < 0) {
        results[next] = failed;
      } else {
        running.push_back(std::move(c));
      }
      ++next;
    }
    std::vector<pollfd> pfds;
    for (const Child& c : running) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 100);
    char buf[4096];
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].fd >= 0 && (pfds[i].revents & (POLLIN | POLLHUP))) {
        const ssize_t n = read(running[i].fd, buf, sizeof buf);
        if (n > 0) {
          append_tail(running[i].output, buf, static_cast<size_t>(n));
        } else if (n == 0) {
          close(running[i].fd);
          running[i].fd = -1;
        }
      }
    }
    const auto now = Clock::now();
    for (size_t i = 0; i < running.size();) {
      Child& c = running[i];
      if (!c.term_sent && now >= c.deadline) {
        kill(-c.pid, SIGTERM);
        c.term_sent = true;
        c.killed_at = now;
      } else if (c.term_sent && now - c.killed_at > std::chrono::seconds(5)) {
        kill(-c.pid, SIGKILL);
      }
      int status = 0;
      if (c.fd < 0 && waitpid(c.pid, &status, WNOHANG) == c.pid) {
        ProcessResult& r = results[c.index];
        r.timed_out = c.term_sent;
        r.exit_code = c.term_sent ? 124 : decode_status(status);
        if (r.timed_out) kill(-c.pid, SIGKILL);  // whatever of the group is left
        if (c.output.size() > kKeepOutput) c.output.erase(0, c.output.size() - kKeepOutput);
        r.output = std::move(c.output);
        running.erase(running.begin() + static_cast<long>(i));
        continue;
      }
      ++i;
    }
  }
  return results;
}

int run_submit(const RunOptions& ro) {
  RunOptions o = ro;
  if (o.plan.run_id.empty()) o.plan.run_id = default_run_id();
  if (o.plan.seed == 0) o.plan.seed = static_cast<uint64_t>(std::time(nullptr));
  if (o.plan.recheck && o.plan.recheck_script_text.empty()) {
    std::ifstream in(o.plan.job_script);
    if (!in) {
      std::fprintf(stderr,
                   "vigil-submit: cannot read the job script %s (--job-script); it is also the "
                   "re-check script\n",
                   o.plan.job_script.c_str());
      return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    o.plan.recheck_script_text = ss.str();
  }

  auto slurm = drainer::make_libslurm_api(o.slurm_conf);
  auto nodes = slurm->load_nodes();
  if (!nodes.ok()) {
    std::fprintf(stderr, "vigil-submit: cannot read node states: %s\n",
                 nodes.error().to_string().c_str());
    return 2;
  }
  auto jobs = drainer::make_libslurm_job_reader(o.slurm_conf)->load_jobs();
  if (!jobs.ok()) {
    std::fprintf(stderr, "vigil-submit: cannot read the job queue: %s\n",
                 jobs.error().to_string().c_str());
    return 2;
  }
  const SubmitPlan plan = plan_submissions(*nodes, *jobs, o.plan);
  std::fprintf(stderr,
               "vigil-submit: run %s: %zu nodes, %zu sbatch jobs, %zu srun -Z re-checks%s\n",
               o.plan.run_id.c_str(), plan.verdicts.size(), plan.jobs.size(), plan.rechecks.size(),
               o.dry_run ? " (dry run)" : "");

  std::vector<CommandOutcome> outcomes;
  for (const auto* list : {&plan.jobs, &plan.rechecks}) {
    for (const PlannedCommand& c : *list) {
      CommandOutcome out;
      out.kind = c.kind;
      out.nodes = c.nodes;
      out.command = display_command(c, o.plan.job_script);
      outcomes.push_back(std::move(out));
    }
  }
  int rc = 0;
  if (o.dry_run) {
    for (const CommandOutcome& c : outcomes) std::printf("%s\n", c.command.c_str());
  } else {
    // sbatch one at a time, paced, so a large fleet does not flood slurmctld.
    int consecutive_failures = 0;
    for (size_t i = 0; i < plan.jobs.size(); ++i) {
      if (consecutive_failures >= o.max_consecutive_failures) {
        std::fprintf(stderr,
                     "vigil-submit: %d sbatch failures in a row; not submitting the remaining "
                     "%zu jobs (is slurmctld healthy? see the errors above)\n",
                     consecutive_failures, plan.jobs.size() - i);
        rc = 1;
        break;
      }
      if (i > 0 && o.interval_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
      }
      const ProcessResult r = run_processes({plan.jobs[i].argv}, 1, o.sbatch_timeout_s)[0];
      CommandOutcome& out = outcomes[i];
      out.ran = true;
      out.exit_code = r.exit_code;
      out.timed_out = r.timed_out;
      out.output = trim(r.output);
      if (r.exit_code == 0) {
        out.job_id = last_line(r.output);
        consecutive_failures = 0;
      } else {
        ++consecutive_failures;
        rc = 1;
        std::fprintf(stderr, "vigil-submit: sbatch for %s failed (exit %d): %s\n",
                     plan.jobs[i].nodes.front().c_str(), r.exit_code, out.output.c_str());
      }
    }
    if (!plan.rechecks.empty()) {
      std::fprintf(stderr,
                   "vigil-submit: running %zu re-check(s), %d at a time, %d s timeout each\n",
                   plan.rechecks.size(), o.recheck_concurrency, o.plan.recheck_timeout_s);
      std::vector<std::vector<std::string>> argvs;
      for (const auto& c : plan.rechecks) argvs.push_back(c.argv);
      const auto results = run_processes(argvs, o.recheck_concurrency, o.plan.recheck_timeout_s);
      for (size_t i = 0; i < results.size(); ++i) {
        CommandOutcome& out = outcomes[plan.jobs.size() + i];
        out.ran = true;
        out.exit_code = results[i].exit_code;
        out.timed_out = results[i].timed_out;
        out.output = trim(results[i].output);
        // 0..3 are vigil-check's verdicts (pass/fail/warn/error); anything else means the
        // re-check itself did not run to the end.
        if (out.timed_out || out.exit_code < 0 || out.exit_code > 3) {
          rc = 1;
          std::fprintf(stderr, "vigil-submit: re-check of %s %s (exit %d): %s\n",
                       out.nodes.front().c_str(), out.timed_out ? "timed out" : "failed",
                       out.exit_code, last_line(out.output).c_str());
        }
      }
    }
  }
  if (o.json) {
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
  } else {
    print_table(plan, outcomes, o.dry_run);
  }
  return rc;
}

}  // namespace vigil::submit
