// Host backend: buffers in host memory, MPI_Allreduce. For CPU-only nodes and CI.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend.h"

namespace vigil::ncclbench {
namespace {

class HostBackend final : public CommBackend {
 public:
  ~HostBackend() override { finalize(); }
  std::string_view name() const override { return "host"; }

  VoidResult init_local(const RankInfo&, std::uint64_t max_bytes) override {
    bytes_ = std::max<std::uint64_t>(max_bytes, 64);
    bytes_ = (bytes_ + 63) / 64 * 64;  // aligned_alloc needs a multiple of the alignment
    send_ = std::aligned_alloc(64, bytes_);
    recv_ = std::aligned_alloc(64, bytes_);
    if (!send_ || !recv_)
      return Error{"cannot allocate 2 host buffers of " + std::to_string(bytes_) +
                       " bytes; lower -e (maxbytes)",
                   "aligned_alloc"};
    std::memset(send_, 0, bytes_);  // touch the pages before timing
    std::memset(recv_, 0, bytes_);
    return ok_result();
  }

  VoidResult init_comm(const RankInfo&) override { return ok_result(); }

  std::string device_line(const RankInfo& info) const override {
    char buf[256];
    std::snprintf(buf, sizeof buf, "Rank %2d Group  0 Pid %6d on %10s device -1 [host] CPU memory",
                  info.rank, static_cast<int>(getpid()), info.hostname.c_str());
    return buf;
  }

  void* send_buffer() override { return send_; }
  void* recv_buffer() override { return recv_; }

  VoidResult upload(void* dst, std::uint64_t offset, const float* src, std::uint64_t n,
                    DataType type) override {
    if (type != DataType::kFloat) return Error{"host backend supports float only", "upload"};
    std::memcpy(static_cast<float*>(dst) + offset, src, n * sizeof(float));
    return ok_result();
  }
  VoidResult download(float* dst, const void* src, std::uint64_t offset, std::uint64_t n,
                      DataType type) override {
    if (type != DataType::kFloat) return Error{"host backend supports float only", "download"};
    std::memcpy(dst, static_cast<const float*>(src) + offset, n * sizeof(float));
    return ok_result();
  }

  VoidResult all_reduce_sum(const void* send, void* recv, std::uint64_t count,
                            DataType type) override {
    if (type != DataType::kFloat) return Error{"host backend supports float only", "MPI_Allreduce"};
    // MPI counts are int: large messages go in pieces.
    constexpr std::uint64_t kMaxPiece = INT_MAX / 2;
    for (std::uint64_t done = 0; done < count || count == 0;) {
      const std::uint64_t n = std::min(count - done, kMaxPiece);
      float* r = static_cast<float*>(recv) + done;
      const void* s = send == recv ? MPI_IN_PLACE : static_cast<const float*>(send) + done;
      int rc = MPI_Allreduce(s, r, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        return Error{std::string(msg, len), "MPI_Allreduce(" + std::to_string(n) + " floats)"};
      }
      done += n;
      if (count == 0) break;
    }
    return ok_result();
  }

  VoidResult wait() override {
    if (abort_requested_) return Error{"aborted by the watchdog", "wait"};
    return ok_result();
  }

  void finalize() override {
    std::free(send_);
    std::free(recv_);
    send_ = recv_ = nullptr;
  }

 private:
  std::uint64_t bytes_ = 0;
  void* send_ = nullptr;
  void* recv_ = nullptr;
};

}  // namespace

std::unique_ptr<CommBackend> make_host_backend() { return std::make_unique<HostBackend>(); }

}  // namespace vigil::ncclbench
