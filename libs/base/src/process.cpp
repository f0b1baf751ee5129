#include "vigil/base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;

namespace vigil {
namespace {

using SteadyClock = std::chrono::steady_clock;

// After the command exits, descendants that kept its stdout/stderr open get this long to
// finish writing before we stop reading.
constexpr auto kDrainGrace = std::chrono::milliseconds(500);
// Time between SIGTERM and SIGKILL to the command's process group on timeout.
constexpr auto kKillGrace = std::chrono::seconds(2);

std::map<std::string, std::string> merged_environment(const LaunchOptions& o) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, value] : o.env) env[key] = value;
  for (const auto& key : o.unset_env) env.erase(key);
  return env;
}

// A bare program name against PATH of the command's environment.
std::string resolve_program(const std::string& name,
                            const std::map<std::string, std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  const auto it = env.find("PATH");
  std::istringstream path(it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(path, dir, ':')) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return name;
}

// True while a non-zombie process in process group `pgid` exists.
bool group_has_live_members(pid_t pgid) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    char state = 0;
    long ppid = 0, group = 0;
    if (fields >> state >> ppid >> group && group == pgid && state != 'Z') return true;
  }
  return false;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void append_capped(std::string& s, const char* data, std::size_t n, std::size_t cap) {
  s.append(data, n);
  if (s.size() > cap) s.erase(0, s.size() - cap);
}

struct Pipes {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1};
  ~Pipes() {
    for (int* p : {out, err, in})
      for (int i = 0; i < 2; ++i) close_fd(p[i]);
  }
};

// The forked child: only async-signal-safe calls from here on.
[[noreturn]] void exec_child(const Pipes& p, const LaunchOptions& o, pid_t parent,
                             const std::string& program, char* const* argv, char* const* envp) {
  setpgid(0, 0);
  if (o.die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
  }
  // Default signal handling, even when the caller ignores some (a shell's background job
  // ignores SIGINT; a command must still see Ctrl-C).
  for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(p.in[0], STDIN_FILENO);
  dup2(p.out[1], STDOUT_FILENO);
  dup2(o.merge_stderr ? p.out[1] : p.err[1], STDERR_FILENO);
  if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) {
    const char msg[] = "chdir failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  execve(program.c_str(), argv, envp);
  const char msg[] = "exec failed: ";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)!write(STDERR_FILENO, program.c_str(), program.size());
  (void)!write(STDERR_FILENO, "\n", 1);
  _exit(127);
}

// Reads output, feeds stdin, enforces the deadline; returns the wait status.
int supervise(pid_t pid, int out_fd, int err_fd, int in_fd, const LaunchOptions& o,
              LaunchResult& res) {
  const auto deadline = SteadyClock::now() + o.timeout;
  std::optional<SteadyClock::time_point> exited_at, kill_at;
  bool reaped = false, killed = false;
  int status = 0;
  std::size_t written = 0;
  char buf[65536];
  while (!reaped || out_fd >= 0 || err_fd >= 0) {
    const auto now = SteadyClock::now();
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      exited_at = now;
      close_fd(in_fd);
    }
    if (reaped && now - *exited_at > kDrainGrace) break;
    if (!reaped && !res.timed_out && now >= deadline) {
      res.timed_out = true;
      kill(-pid, SIGTERM);
      kill_at = now + kKillGrace;
    }
    if (!reaped && kill_at && !killed && now >= *kill_at) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (n == 0) {
      usleep(20 * 1000);  // output closed, command still running
      continue;
    }
    if (poll(fds, n, 50) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w =
            write(in_fd, o.stdin_data.data() + written, o.stdin_data.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if ((w < 0 && errno != EAGAIN) || written == o.stdin_data.size()) close_fd(in_fd);
        continue;
      }
      const bool is_out = fds[i].fd == out_fd;
      const ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        append_capped(is_out ? res.out : res.err, buf, static_cast<std::size_t>(r), o.max_output);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        close_fd(is_out ? out_fd : err_fd);
      }
    }
  }
  close_fd(out_fd);
  close_fd(err_fd);
  close_fd(in_fd);
  if (!reaped) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (res.timed_out) {
    // Stragglers of a timed-out group (some ignore TERM): kill and wait until they are gone.
    kill(-pid, SIGKILL);
    const auto give_up = SteadyClock::now() + kKillGrace;
    while (group_has_live_members(pid) && SteadyClock::now() < give_up) usleep(10 * 1000);
  }
  return status;
}

}  // namespace

Result<LaunchResult> run_command(const std::vector<std::string>& argv, const LaunchOptions& opts) {
  if (argv.empty()) return Error{"empty command", "run_command"};
  // Everything the child needs is built before fork(): after it only async-signal-safe calls.
  const auto env_map = merged_environment(opts);
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : env_map) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args(argv);
  const std::string program = resolve_program(args[0], env_map);
  std::vector<char*> argvp;
  for (auto& a : args) argvp.push_back(a.data());
  argvp.push_back(nullptr);

  Pipes p;
  if (pipe2(p.out, O_CLOEXEC) != 0 || pipe2(p.err, O_CLOEXEC) != 0 || pipe2(p.in, O_CLOEXEC) != 0)
    return Error{std::strerror(errno), "pipe2"};
  // Writing to a command that closed its stdin must give EPIPE, not kill the caller.
  if (!opts.stdin_data.empty()) signal(SIGPIPE, SIG_IGN);
  const pid_t parent = getpid();
  const auto start = SteadyClock::now();
  const pid_t pid = fork();
  if (pid < 0) return Error{std::strerror(errno), "fork"};
  if (pid == 0) exec_child(p, opts, parent, program, argvp.data(), envp.data());
  setpgid(pid, pid);  // also from the parent: no race with an early kill
  close_fd(p.out[1]);
  close_fd(p.err[1]);
  close_fd(p.in[0]);
  if (opts.stdin_data.empty()) close_fd(p.in[1]);
  if (p.in[1] >= 0) fcntl(p.in[1], F_SETFL, fcntl(p.in[1], F_GETFL) | O_NONBLOCK);
  LaunchResult res;
  // supervise() closes the three parent ends; the Pipes destructor must not close them again.
  const int out_fd = std::exchange(p.out[0], -1), err_fd = std::exchange(p.err[0], -1),
            in_fd = std::exchange(p.in[1], -1);
  const int status = supervise(pid, out_fd, err_fd, in_fd, opts, res);
  res.wall_s = std::chrono::duration<double>(SteadyClock::now() - start).count();
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
