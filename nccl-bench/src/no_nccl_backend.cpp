// Built instead of nccl_backend.cpp when CUDA/NCCL are not available.
#include "backend.h"

namespace vigil::ncclbench {

std::unique_ptr<CommBackend> make_nccl_backend() { return nullptr; }

}  // namespace vigil::ncclbench
