#pragma once
// A daemon for one test (vigil-drainer, prometheus): started in its own process group with
// stdout+stderr to a log file, stopped by PID (TERM, then KILL after 5 s) on destruction, and
// killed by the kernel if the test dies first (a test killed by ctest's timeout or a signal runs
// no destructor; found: a drainer left serving for hours after its test was killed).
// PR_SET_PDEATHSIG follows the creating thread: one started from a thread that ends before it
// (the soak's chaos thread) passes die_with_test = false and is stopped by its owner.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace vigil::testing {

class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::map<std::string, std::string>& env = {}, bool die_with_test = true)
      : log_path_(log_path) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      setpgid(0, 0);
      if (die_with_test) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);  // the test died before prctl took hold
      }
      const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      const int null = open("/dev/null", O_RDONLY);
      if (null >= 0) dup2(null, STDIN_FILENO);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      execvp(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  ~BackgroundProcess() { stop(); }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  int pid() const { return pid_; }
  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  // Polls the log until `needle` shows up; returns the rest of that line.
  std::optional<std::string> wait_for_log(const std::string& needle, std::chrono::seconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      const std::string text = log();
      if (auto pos = text.find(needle); pos != std::string::npos) {
        const auto eol = text.find('\n', pos);
        if (eol != std::string::npos) {
          return text.substr(pos + needle.size(), eol - pos - needle.size());
        }
      }
      if (!running()) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        kill(-pid_, SIGKILL);  // anything left in its group
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
};

}  // namespace vigil::testing
