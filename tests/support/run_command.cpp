#include "run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

extern char** environ;

namespace vigil::testing {
namespace {

using Clock = std::chrono::steady_clock;

// After the child exits, descendants that kept its stdout/stderr open get this long to finish
// writing before we stop reading (a daemon started in the background must not hang the test).
constexpr auto kDrainGrace = std::chrono::milliseconds(500);
// Time between SIGTERM and SIGKILL to the child's process group on timeout.
constexpr auto kKillGrace = std::chrono::seconds(2);

std::map<std::string, std::string> merged_environment(const CommandOptions& options) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [key, value] : options.env) env[key] = value;
  for (const auto& key : options.unset_env) env.erase(key);
  return env;
}

// Resolves a bare program name against PATH of the child's environment.
std::string resolve_program(const std::string& name,
                            const std::map<std::string, std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  const auto it = env.find("PATH");
  std::istringstream path(it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(path, dir, ':')) {
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;
}

// True while a non-zombie process in process group `pgid` exists.
bool group_has_live_members(pid_t pgid) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
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

}  // namespace

std::string CommandResult::describe() const {
  std::ostringstream s;
  s << "exit " << exit_code << (timed_out ? " (timed out)" : "") << "\n--- stdout ---\n"
    << out << "\n--- stderr ---\n"
    << err;
  return s.str();
}

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  CommandResult result;
  if (argv.empty()) {
    result.err = "run_command: empty argv";
    return result;
  }

  // Everything the child needs is built before fork(): after it only async-signal-safe calls.
  const auto env_map = merged_environment(options);
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

  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("run_command: pipe: ") + std::strerror(errno);
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("run_command: pipe: ") + std::strerror(errno);
    close(out_pipe[0]), close(out_pipe[1]);
    return result;
  }
  if (pipe2(in_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("run_command: pipe: ") + std::strerror(errno);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
    return result;
  }
  // Writing to a child that closed its stdin must give EPIPE, not kill the test.
  if (!options.stdin_data.empty()) signal(SIGPIPE, SIG_IGN);

  const pid_t pid = fork();
  if (pid < 0) {
    result.err = std::string("run_command: fork: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], in_pipe[0], in_pipe[1]})
      close(fd);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    // Default signal handling, even when the test runner was started with some ignored
    // (a background job of a shell ignores SIGINT; scripts under test must see Ctrl-C).
    for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) {
      const char msg[] = "run_command: chdir failed\n";
      (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
      _exit(127);
    }
    execve(program.c_str(), argvp.data(), envp.data());
    const char msg[] = "run_command: exec failed: ";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)!write(STDERR_FILENO, program.c_str(), program.size());
    (void)!write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_pipe[0]);
  int out_fd = out_pipe[0], err_fd = err_pipe[0], in_fd = in_pipe[1];
  size_t stdin_written = 0;
  if (options.stdin_data.empty()) close_fd(in_fd);
  if (in_fd >= 0) fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);

  const auto deadline = Clock::now() + options.timeout;
  std::optional<Clock::time_point> exited_at, kill_at;
  bool reaped = false, killed = false;
  int status = 0;
  char buf[65536];

  while (!reaped || out_fd >= 0 || err_fd >= 0) {
    const auto now = Clock::now();
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      exited_at = now;
      close_fd(in_fd);
    }
    if (reaped && exited_at && now - *exited_at > kDrainGrace) {
      close_fd(out_fd);
      close_fd(err_fd);
      break;
    }
    if (!reaped && !result.timed_out && now >= deadline) {
      result.timed_out = true;
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
      // Output closed, child still running: wait for it (bounded by the timeout logic above).
      usleep(20 * 1000);
      continue;
    }
    if (poll(fds, n, 50) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = write(in_fd, options.stdin_data.data() + stdin_written,
                                options.stdin_data.size() - stdin_written);
        if (w > 0) stdin_written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN) close_fd(in_fd);
        if (stdin_written == options.stdin_data.size()) close_fd(in_fd);
        continue;
      }
      const ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (fds[i].fd == out_fd ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (fds[i].fd == out_fd)
          close_fd(out_fd);
        else
          close_fd(err_fd);
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
  if (result.timed_out) {
    // Stragglers of a timed-out group (some ignore TERM): kill and wait until they are gone.
    kill(-pid, SIGKILL);
    const auto give_up = Clock::now() + kKillGrace;
    while (group_has_live_members(pid) && Clock::now() < give_up) usleep(10 * 1000);
  }

  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

CommandResult run_shell(const std::string& script, const CommandOptions& options) {
  return run_command({"bash", "-c", script}, options);
}

}  // namespace vigil::testing
