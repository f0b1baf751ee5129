#pragma once
// Where the bytes live and how a collective moves them: `host` (host memory, MPI_Allreduce)
// or `nccl` (device memory, a CUDA stream, NCCL). Private to the library.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "vigil/base/result.h"
#include "vigil/ncclbench/options.h"

namespace vigil::ncclbench {

struct RankInfo {
  int rank = 0;
  int ranks = 1;
  int local_rank = 0;  // within MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
  int local_ranks = 1;
  std::string hostname;  // SLURMD_NODENAME when set, else MPI_Get_processor_name
};

class CommBackend {
 public:
  virtual ~CommBackend() = default;
  virtual std::string_view name() const = 0;
  // Rank-local setup: pick the device, check it can hold two buffers of max_bytes, allocate
  // them. No MPI calls (the harness agrees on success across ranks afterwards).
  virtual VoidResult init_local(const RankInfo& info, std::uint64_t max_bytes) = 0;
  // Collective setup (NCCL: unique id via MPI_Bcast, ncclCommInitRank). Every rank calls it.
  virtual VoidResult init_comm(const RankInfo& info) = 0;
  // "Rank  0 Group  0 Pid 123 on host device  0 [0000:1b:00] NVIDIA H100 80GB HBM3"
  virtual std::string device_line(const RankInfo& info) const = 0;
  virtual std::string nccl_version() const { return {}; }
  virtual void* send_buffer() = 0;
  virtual void* recv_buffer() = 0;
  // Host <-> buffer copies of elements [offset, offset + n), converting to/from `type`.
  virtual VoidResult upload(void* dst, std::uint64_t offset, const float* src, std::uint64_t n,
                            DataType type) = 0;
  virtual VoidResult download(float* dst, const void* src, std::uint64_t offset, std::uint64_t n,
                              DataType type) = 0;
  virtual VoidResult all_reduce_sum(const void* send, void* recv, std::uint64_t count,
                                    DataType type) = 0;
  // Blocks until every enqueued operation finished. Error on failure or after request_abort().
  virtual VoidResult wait() = 0;
  // From the watchdog thread: make wait() give up (NCCL: it aborts the communicator).
  void request_abort() { abort_requested_ = true; }
  virtual void finalize() = 0;

 protected:
  std::atomic<bool> abort_requested_{false};
};

std::unique_ptr<CommBackend> make_host_backend();
// nullptr when this build has no CUDA/NCCL (VIGIL_CUDA_ENABLED off).
std::unique_ptr<CommBackend> make_nccl_backend();

}  // namespace vigil::ncclbench
