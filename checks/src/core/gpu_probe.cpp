#include "vigil/checks/gpu_probe.h"

#include <dlfcn.h>

#include "vigil/checks/runner.h"

namespace vigil {

CudaDriverProbe probe_cuda_driver(const std::string& library) {
  // In a child: cuInit must never run in the parent, which forks a child per check.
  auto out = run_in_child(
      [&]() -> std::string {
        void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) return std::string("E") + ::dlerror();
        using InitFn = int (*)(unsigned);
        using CountFn = int (*)(int*);
        auto init = reinterpret_cast<InitFn>(::dlsym(h, "cuInit"));
        auto count = reinterpret_cast<CountFn>(::dlsym(h, "cuDeviceGetCount"));
        if (!init || !count) return "EcuInit/cuDeviceGetCount not exported by " + library;
        if (int rc = init(0); rc != 0) return "EcuInit failed with CUresult " + std::to_string(rc);
        int n = 0;
        if (int rc = count(&n); rc != 0)
          return "EcuDeviceGetCount failed with CUresult " + std::to_string(rc);
        return "N" + std::to_string(n);
      },
      std::chrono::seconds(30));
  CudaDriverProbe probe;
  if (!out) {
    probe.error = "CUDA driver probe " + out.error().message;
  } else if (!out->empty() && (*out)[0] == 'N') {
    probe.devices = std::stoi(out->substr(1));
    if (probe.devices == 0) probe.error = "CUDA driver reports no devices";
  } else {
    probe.error = out->empty() ? "CUDA driver probe returned nothing" : out->substr(1);
  }
  return probe;
}

bool cuda_built_in() {
#ifdef VIGIL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace vigil
