#pragma once
// Slow-client attack for tests and benchmarks: many TCP connections to a loopback server that
// send a partial request and then nothing (idle) or one byte now and then (trickling). Each
// connection binds a source address 127.0.2.x, 127.0.3.x, ... (per_source connections per
// address), so a per-source connection cap on the server does not simply refuse them all.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace vigil::testing {

// Raises this process's soft RLIMIT_NOFILE to at least `n` (up to the hard limit); the real
// soft limit afterwards.
inline long raise_fd_limit(long n) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  if (static_cast<long>(rl.rlim_cur) < n) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, static_cast<rlim_t>(n));
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  return static_cast<long>(rl.rlim_cur);
}

// A TCP connection to 127.0.0.1:port from `source` (dotted quad); -1 on failure.
inline int connect_from(const std::string& source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

class SlowClients {
 public:
  // Opens `count` connections and sends each the start of a POST; with trickle_every > 0 a
  // thread then sends one more header byte on every connection that often. Source addresses
  // are numbered from first_source (0: 127.0.2.1).
  SlowClients(int port, int count, int per_source,
              std::chrono::milliseconds trickle_every = std::chrono::milliseconds(0),
              int first_source = 0) {
    for (int i = 0; i < count; ++i) {
      const int a = first_source + i / per_source;  // 127.0.2.1 ... 127.0.2.250, 127.0.3.1 ...
      const std::string src =
          "127.0." + std::to_string(2 + a / 250) + "." + std::to_string(1 + a % 250);
      int fd = connect_from(src, port);
      if (fd < 0) continue;
      const std::string start = "POST /v1/reports HTTP/1.1\r\nHost: x\r\nX-Slow: ";
      if (::send(fd, start.data(), start.size(), MSG_NOSIGNAL) < 0) {
        ::close(fd);
        continue;
      }
      fds_.push_back(fd);
    }
    if (trickle_every.count() > 0)
      trickler_ = std::thread([this, trickle_every] {
        while (!stop_) {
          for (int fd : fds_) ::send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
          for (auto t = std::chrono::milliseconds(0); t < trickle_every && !stop_;
               t += std::chrono::milliseconds(10))
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      });
  }
  ~SlowClients() {
    stop_ = true;
    if (trickler_.joinable()) trickler_.join();
    for (int fd : fds_) ::close(fd);
  }
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;

  // Connections that were opened (and accepted by the kernel).
  int opened() const { return static_cast<int>(fds_.size()); }
  // Connections the server has closed since (a read sees end of stream or an error).
  int closed_by_server() const {
    int n = 0;
    for (int fd : fds_) {
      char c;
      const ssize_t r = ::recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) n++;
    }
    return n;
  }

 private:
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread trickler_;
};

}  // namespace vigil::testing
