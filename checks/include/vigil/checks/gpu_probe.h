#pragma once
// Whether this node has a usable CUDA driver, asked without initialising CUDA in the calling
// process (CUDA is not fork-safe and every check runs in a forked child): the probe dlopen()s
// libcuda.so.1 and calls cuInit/cuDeviceGetCount in a time-boxed child process.
#include <string>

namespace vigil {

struct CudaDriverProbe {
  int devices = 0;    // 0 when no driver, no device, or the probe failed
  std::string error;  // why devices is 0 ("libcuda.so.1: cannot open shared object file", ...)
};

CudaDriverProbe probe_cuda_driver(const std::string& library = "libcuda.so.1");

// True when this build contains the CUDA probes and the NCCL backend (VIGIL_WITH_CUDA).
bool cuda_built_in();

}  // namespace vigil
