#include "watchdog.h"

#include <chrono>

namespace vigil::ncclbench {

Watchdog::Watchdog(double seconds, std::function<void()> on_fire) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  thread_ = std::thread([this, deadline, fire = std::move(on_fire)] {
    std::unique_lock lock(mu_);
    if (cv_.wait_until(lock, deadline, [this] { return stopped_; })) return;
    lock.unlock();
    fire();
  });
}

Watchdog::~Watchdog() { stop(); }

void Watchdog::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vigil::ncclbench
