#include "vigil/checks/runner.h"

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
#include <nlohmann/json.hpp>

#include "vigil/report/check_catalog.h"

namespace vigil {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

CheckResult run_guarded(Check& check, const CheckContext& ctx) {
  CheckResult r;
  try {
    r = check.run(ctx);
  } catch (const std::exception& e) {
    r = error(check.name(), std::string("check threw an exception: ") + e.what(),
              "VIGIL-CHECK-CRASH");
  } catch (...) {
    r = error(check.name(), "check threw an unknown exception", "VIGIL-CHECK-CRASH");
  }
  r.check = std::string(check.name());
  r.short_name = std::string(check.short_name());
  return r;
}

bool write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Kills the check's whole process group (it may have started mpirun and its ranks).
void kill_group(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

}  // namespace

// "3 s", or "0.25 s" for a time box that is not whole seconds.
static std::string seconds_text(std::chrono::milliseconds t) {
  if (t.count() % 1000 == 0) return std::to_string(t.count() / 1000) + " s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", static_cast<double>(t.count()) / 1000.0);
  return buf;
}

Result<std::string> run_in_child(const std::function<std::string()>& fn,
                                 std::chrono::milliseconds timeout) {
  return run_in_child([&](const ChildSend&) { return fn(); }, timeout, nullptr);
}

Result<std::string> run_in_child(const std::function<std::string(const ChildSend& send)>& fn,
                                 std::chrono::milliseconds timeout, std::string* partial) {
  const auto t0 = Clock::now();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error{std::strerror(errno), "pipe2"};
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Error{std::strerror(errno), "fork"};
  }
  if (pid == 0) {
    // Child: own process group so a timeout kills everything it started (mpirun and ranks);
    // stdout goes to stderr so library chatter never mixes with a report written to stdout.
    ::setpgid(0, 0);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::close(fds[0]);
    bool sent = true;
    const ChildSend send = [&](const std::string& d) { sent = write_all(fds[1], d) && sent; };
    bool ok = write_all(fds[1], fn(send)) && sent;
    ::close(fds[1]);
    ::_exit(ok ? 0 : 70);
  }
  ::setpgid(pid, pid);  // also in the parent: no race with the child's own call
  ::close(fds[1]);

  std::string data;
  bool timed_out = false;
  const auto deadline = t0 + timeout;
  char buf[65536];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc <= 0) continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child closed its end (finished or died)
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (partial) *partial = data;
  if (timed_out) kill_group(pid);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  // Reap anything left in the group (e.g. a hung mpirun the child started and abandoned).
  ::kill(-pid, SIGKILL);
  if (timed_out) return Error{"timed out after " + seconds_text(timeout), "child"};
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    return Error{"crashed (signal " + std::to_string(sig) + ", " + strsignal(sig) + ")", "child"};
  }
  if (WEXITSTATUS(wstatus) != 0)
    return Error{"exited " + std::to_string(WEXITSTATUS(wstatus)), "child"};
  return data;
}

CheckResult run_isolated(Check& check, const CheckContext& ctx,
                         std::optional<std::chrono::milliseconds> timeout) {
  const auto t0 = Clock::now();
  std::chrono::milliseconds limit = check.timeout();
  if (check.spaces_repeats()) limit += ctx.repeat_spacing;
  if (timeout && *timeout < limit) limit = *timeout;
  CheckContext limited = ctx;  // the check learns its limit, so its repeats can stay inside it
  limited.time_limit = limit;
  auto out = run_in_child([&] { return to_json(run_guarded(check, limited)).dump(); }, limit);
  CheckResult r;
  if (!out) {
    const std::string& why = out.error().message;
    r = error(check.name(), why.rfind("timed out", 0) == 0 ? why : "check " + why,
              why.rfind("timed out", 0) == 0 ? "VIGIL-CHECK-TIMEOUT" : "VIGIL-CHECK-CRASH");
  } else {
    auto j = nlohmann::json::parse(*out, nullptr, false);
    auto parsed =
        j.is_discarded() ? Parsed<CheckResult>{std::nullopt, "not JSON"} : parse_check_result(j);
    if (parsed) {
      r = std::move(*parsed.value);
    } else {
      r = error(check.name(), "check produced no valid result (" + parsed.error + ")",
                "VIGIL-CHECK-CRASH");
    }
  }
  r.check = std::string(check.name());
  r.short_name = std::string(check.short_name());
  r.duration_s = seconds_since(t0);
  return r;
}

std::vector<CheckResult> run_checks(std::vector<std::unique_ptr<Check>>& checks,
                                    const CheckContext& ctx, const RunOptions& opts) {
  auto listed = [](const std::vector<std::string>& list, std::string_view name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  std::vector<CheckResult> results;
  for (auto& check : checks) {
    if (!opts.only.empty() && !listed(opts.only, check->name())) continue;
    // A check the catalog runs in the full suite only is left out of a quick run, one it runs
    // in the qualify suite only out of both (--only runs what it names).
    const CheckSpec* spec = find_check_spec(check->name());
    if (spec && opts.only.empty() &&
        ((ctx.suite == Suite::kQuick && spec->full_only()) ||
         (ctx.suite != Suite::kQualify && spec->qualify_only())))
      continue;
    CheckResult r;
    if (listed(opts.exclude, check->name())) {
      r = skipped(check->name(), "excluded by --exclude");
    } else if (Applies a = check->applies(ctx); !a.yes) {
      r = skipped(check->name(), a.why_not);
    } else if (opts.deadline && Clock::now() >= *opts.deadline) {
      r = error(check->name(), "not run: the time box of this run was spent by earlier checks",
                "VIGIL-CHECK-TIMEOUT");
    } else if (opts.isolate) {
      std::optional<std::chrono::milliseconds> left;
      if (opts.deadline)
        left = std::chrono::duration_cast<std::chrono::milliseconds>(*opts.deadline - Clock::now());
      r = run_isolated(*check, ctx, left);
    } else if (opts.deadline) {  // in-process under a time box: the check learns what is left
      const auto t0 = Clock::now();
      CheckContext limited = ctx;
      limited.time_limit =
          std::chrono::duration_cast<std::chrono::milliseconds>(*opts.deadline - Clock::now());
      r = run_guarded(*check, limited);
      r.duration_s = seconds_since(t0);
    } else {
      const auto t0 = Clock::now();
      r = run_guarded(*check, ctx);
      r.duration_s = seconds_since(t0);
    }
    r.short_name = std::string(check->short_name());
    if (opts.on_result) opts.on_result(r);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace vigil
