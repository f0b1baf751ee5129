#include "vigil/base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace vigil {
namespace {

void append_capped(std::string& s, const char* data, std::size_t n, std::size_t cap) {
  s.append(data, n);
  if (s.size() > cap) s.erase(0, s.size() - cap);
}

}  // namespace

Result<LaunchResult> run_command(const std::vector<std::string>& argv, const LaunchOptions& opts) {
  if (argv.empty()) return Error{"empty command", "run_command"};
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Error{std::strerror(errno), "pipe2"};
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Error{std::strerror(errno), "pipe2"};
  }
  // Everything the child needs is prepared before fork (no allocation after it).
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t parent = getpid();
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) return Error{std::strerror(errno), "fork"};
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(opts.merge_stderr ? out_pipe[1] : err_pipe[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    for (const auto& [k, v] : opts.env) setenv(k.c_str(), v.c_str(), 1);
    execvp(cargv[0], cargv.data());
    const char* msg = "exec failed: ";
    (void)!write(STDERR_FILENO, msg, std::strlen(msg));
    (void)!write(STDERR_FILENO, cargv[0], std::strlen(cargv[0]));
    (void)!write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so killpg works even before the child ran
  close(out_pipe[1]);
  close(err_pipe[1]);

  LaunchResult res;
  const auto deadline = start + opts.timeout;
  bool out_open = true, err_open = true, exited = false;
  int status = 0;
  char buf[65536];
  auto kill_group = [&] {
    killpg(pid, SIGTERM);
    const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < grace) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        break;
      }
      usleep(20000);
    }
    killpg(pid, SIGKILL);  // anything left in the group (ranks of a killed mpirun)
    if (!exited && waitpid(pid, &status, 0) == pid) exited = true;
  };
  while (out_open || err_open || !exited) {
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline && !res.timed_out) {
      res.timed_out = true;
      kill_group();
    }
    // After exit (or the kill), drain what is buffered but do not wait on grandchildren that
    // might still hold the pipes.
    if (exited && (res.timed_out || now >= deadline + std::chrono::seconds(2))) {
      killpg(pid, SIGKILL);
    }
    pollfd fds[2];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    if (n == 0) {
      if (!exited) usleep(10000);
      continue;
    }
    int pr = poll(fds, n, exited ? 200 : 50);
    if (pr == 0 && exited) break;  // exited and nothing more to read for a while
    for (int i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      bool is_out = fds[i].fd == out_pipe[0];
      if (r <= 0) {
        (is_out ? out_open : err_open) = false;
      } else {
        append_capped(is_out ? res.out : res.err, buf, static_cast<std::size_t>(r),
                      opts.max_output);
      }
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.term_signal = WTERMSIG(status);
  return res;
}

std::vector<LaunchResult> run_commands(const std::vector<std::vector<std::string>>& argvs,
                                       int concurrency, const LaunchOptions& opts) {
  std::vector<LaunchResult> results(argvs.size());
  std::mutex mu;
  std::size_t next = 0;
  auto worker = [&] {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next >= argvs.size()) return;
        i = next++;
      }
      auto r = run_command(argvs[i], opts);
      if (r.ok()) {
        results[i] = std::move(r).value();
      } else {
        results[i].exit_code = 127;
        results[i].err = r.error().to_string();
      }
    }
  };
  const std::size_t n = std::min<std::size_t>(std::max(concurrency, 1), argvs.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return results;
}

int shell_status(const LaunchResult& r) {
  if (r.timed_out) return 124;
  if (r.term_signal) return 128 + r.term_signal;
  return r.exit_code;
}

}  // namespace vigil
