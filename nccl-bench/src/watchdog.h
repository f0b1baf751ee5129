#pragma once
// A thread that calls `on_fire` once when `seconds` pass before stop(). Used for --timeout:
// a hung collective (dead link, lost peer) must end the run, never hang the job.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace vigil::ncclbench {

class Watchdog {
 public:
  Watchdog(double seconds, std::function<void()> on_fire);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void stop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace vigil::ncclbench
