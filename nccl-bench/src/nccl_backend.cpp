// NCCL backend: one GPU per rank (chosen by the node-local rank), device buffers, one CUDA
// stream, ncclAllReduce. Built only when VIGIL_CUDA_ENABLED (CUDA + NCCL found).
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "backend.h"
#include "vigil/base/strings.h"

namespace vigil::ncclbench {
namespace {

// Two decimals: near the limit a whole-GiB figure would say "needs 80 GiB, 80 GiB free".
std::string gib(std::uint64_t b) {
  return fixed(static_cast<double>(b) / (1ull << 30), 2) + " GiB";
}

std::string cuda_error(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

#define VIGIL_CUDA(call)                                        \
  do {                                                          \
    cudaError_t e_ = (call);                                    \
    if (e_ != cudaSuccess) return Error{cuda_error(e_), #call}; \
  } while (0)

std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16(std::uint16_t h) {
  std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class NcclBackend final : public CommBackend {
 public:
  ~NcclBackend() override { finalize(); }
  std::string_view name() const override { return "nccl"; }

  VoidResult init_local(const RankInfo& info, std::uint64_t max_bytes) override {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      return Error{"no GPU visible to rank " + std::to_string(info.rank) + " on " + info.hostname +
                       (e != cudaSuccess ? " (" + cuda_error(e) + ")" : std::string()) +
                       "; check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES, or use "
                       "--backend host on CPU-only nodes",
                   "cudaGetDeviceCount"};
    const std::optional<int> device = select_device(count, info.local_rank, info.local_ranks);
    if (!device)
      return Error{info.hostname + " runs " + std::to_string(info.local_ranks) +
                       " ranks but rank " + std::to_string(info.rank) + " sees " +
                       std::to_string(count) + " GPUs; start at most " + std::to_string(count) +
                       " ranks per node (one rank per GPU), or bind one GPU per rank "
                       "(srun --gpus-per-task=1)",
                   "cudaGetDeviceCount"};
    device_ = *device;
    VIGIL_CUDA(cudaSetDevice(device_));
    std::size_t free_b = 0, total_b = 0;
    VIGIL_CUDA(cudaMemGetInfo(&free_b, &total_b));
    bytes_ = std::max<std::uint64_t>(max_bytes, 64);
    const std::uint64_t need = 2 * bytes_ + (256ull << 20);  // + headroom for NCCL's buffers
    if (need > free_b)
      return Error{"message size " + std::to_string(max_bytes) +
                       " B does not fit: 2 buffers need " + gib(2 * bytes_) +
                       " plus NCCL headroom, GPU " + std::to_string(device_) + " has " +
                       gib(free_b) + " free of " + gib(total_b) + "; lower -e (maxbytes)",
                   "cudaMemGetInfo(gpu " + std::to_string(device_) + ")"};
    VIGIL_CUDA(cudaMalloc(&send_, bytes_));
    VIGIL_CUDA(cudaMalloc(&recv_, bytes_));
    VIGIL_CUDA(cudaMemset(send_, 0, bytes_));
    VIGIL_CUDA(cudaMemset(recv_, 0, bytes_));
    VIGIL_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return ok_result();
  }

  VoidResult init_comm(const RankInfo& info) override {
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    ncclResult_t idr = ncclSuccess;
    if (info.rank == 0) idr = ncclGetUniqueId(&id);
    // Every rank must reach the broadcast, even when rank 0 failed to get an id.
    int id_ok = idr == ncclSuccess ? 1 : 0;
    MPI_Bcast(&id_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!id_ok)
      return Error{std::string(ncclGetErrorString(idr)) + "; rerun with NCCL_DEBUG=INFO to see why",
                   "ncclGetUniqueId"};
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclResult_t r = ncclCommInitRank(&comm_, info.ranks, id, info.rank);
    if (r != ncclSuccess) {
      std::string last = ncclGetLastError(nullptr);
      comm_ = nullptr;
      return Error{std::string(ncclGetErrorString(r)) + (last.empty() ? "" : " (" + last + ")") +
                       "; rerun with NCCL_DEBUG=INFO for details",
                   "ncclCommInitRank(rank " + std::to_string(info.rank) + " of " +
                       std::to_string(info.ranks) + ", gpu " + std::to_string(device_) + ")"};
    }
    return ok_result();
  }

  std::string device_line(const RankInfo& info) const override {
    cudaDeviceProp p{};
    std::string name = "unknown";
    char bus[32] = "?";
    if (cudaGetDeviceProperties(&p, device_) == cudaSuccess) {
      name = p.name;
      std::snprintf(bus, sizeof bus, "%04x:%02x:%02x", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    }
    char buf[512];
    std::snprintf(buf, sizeof buf, "Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s",
                  info.rank, static_cast<int>(getpid()), info.hostname.c_str(), device_, bus,
                  name.c_str());
    return buf;
  }

  std::string nccl_version() const override {
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return {};
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
  }

  void* send_buffer() override { return send_; }
  void* recv_buffer() override { return recv_; }

  VoidResult upload(void* dst, std::uint64_t offset, const float* src, std::uint64_t n,
                    DataType type) override {
    if (type == DataType::kFloat) {
      VIGIL_CUDA(cudaMemcpyAsync(static_cast<float*>(dst) + offset, src, n * 4,
                                 cudaMemcpyHostToDevice, stream_));
    } else {
      staging_.resize(n);
      for (std::uint64_t i = 0; i < n; ++i) staging_[i] = to_bf16(src[i]);
      VIGIL_CUDA(cudaMemcpyAsync(static_cast<std::uint16_t*>(dst) + offset, staging_.data(), n * 2,
                                 cudaMemcpyHostToDevice, stream_));
    }
    VIGIL_CUDA(cudaStreamSynchronize(stream_));
    return ok_result();
  }

  VoidResult download(float* dst, const void* src, std::uint64_t offset, std::uint64_t n,
                      DataType type) override {
    if (type == DataType::kFloat) {
      VIGIL_CUDA(cudaMemcpyAsync(dst, static_cast<const float*>(src) + offset, n * 4,
                                 cudaMemcpyDeviceToHost, stream_));
      VIGIL_CUDA(cudaStreamSynchronize(stream_));
    } else {
      staging_.resize(n);
      VIGIL_CUDA(cudaMemcpyAsync(staging_.data(), static_cast<const std::uint16_t*>(src) + offset,
                                 n * 2, cudaMemcpyDeviceToHost, stream_));
      VIGIL_CUDA(cudaStreamSynchronize(stream_));
      for (std::uint64_t i = 0; i < n; ++i) dst[i] = from_bf16(staging_[i]);
    }
    return ok_result();
  }

  VoidResult all_reduce_sum(const void* send, void* recv, std::uint64_t count,
                            DataType type) override {
    ncclResult_t r =
        ncclAllReduce(send, recv, count, type == DataType::kBf16 ? ncclBfloat16 : ncclFloat,
                      ncclSum, comm_, stream_);
    if (r != ncclSuccess)
      return Error{std::string(ncclGetErrorString(r)) + "; rerun with NCCL_DEBUG=INFO",
                   "ncclAllReduce(" + std::to_string(count) + " elements)"};
    return ok_result();
  }

  // Polls instead of cudaStreamSynchronize so a hung collective can be abandoned: NCCL async
  // errors and the watchdog's abort request both end the wait with ncclCommAbort.
  VoidResult wait() override {
    while (true) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return ok_result();
      if (e != cudaErrorNotReady) return Error{cuda_error(e), "cudaStreamQuery"};
      ncclResult_t async = ncclSuccess;
      if (comm_ && ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
          async != ncclInProgress) {
        abort_comm();
        return Error{std::string(ncclGetErrorString(async)) + "; rerun with NCCL_DEBUG=INFO",
                     "ncclCommGetAsyncError"};
      }
      if (abort_requested_) {
        abort_comm();
        return Error{"collective did not finish; communicator aborted by the watchdog",
                     "ncclCommAbort"};
      }
    }
  }

  void finalize() override {
    if (comm_) {
      if (abort_requested_)
        ncclCommAbort(comm_);
      else
        ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
    if (stream_) cudaStreamDestroy(stream_);
    if (send_) cudaFree(send_);
    if (recv_) cudaFree(recv_);
    stream_ = nullptr;
    send_ = recv_ = nullptr;
  }

 private:
  void abort_comm() {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  int device_ = -1;
  std::uint64_t bytes_ = 0;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  std::vector<std::uint16_t> staging_;
};

}  // namespace

std::unique_ptr<CommBackend> make_nccl_backend() { return std::make_unique<NcclBackend>(); }

}  // namespace vigil::ncclbench
