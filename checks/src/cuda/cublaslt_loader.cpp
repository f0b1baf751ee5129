#include "cuda/cublaslt_loader.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace vigil::cuda_probe {
namespace {

template <typename Fn>
bool resolve(void* handle, const char* symbol, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (!out && missing.empty()) missing = symbol;
  return out != nullptr;
}

Result<CublasLtApi> open_cublaslt() {
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return Error{why ? why : "dlopen failed", "dlopen " + soname};
  }
  CublasLtApi api;
  std::string missing;
  resolve(handle, "cublasLtGetStatusName", api.get_status_name, missing);
  resolve(handle, "cublasLtGetStatusString", api.get_status_string, missing);
  resolve(handle, "cublasLtCreate", api.create, missing);
  resolve(handle, "cublasLtDestroy", api.destroy, missing);
  resolve(handle, "cublasLtMatmulDescCreate", api.matmul_desc_create, missing);
  resolve(handle, "cublasLtMatmulDescDestroy", api.matmul_desc_destroy, missing);
  resolve(handle, "cublasLtMatmulDescSetAttribute", api.matmul_desc_set_attribute, missing);
  resolve(handle, "cublasLtMatrixLayoutCreate", api.matrix_layout_create, missing);
  resolve(handle, "cublasLtMatrixLayoutDestroy", api.matrix_layout_destroy, missing);
  resolve(handle, "cublasLtMatmulPreferenceCreate", api.matmul_preference_create, missing);
  resolve(handle, "cublasLtMatmulPreferenceDestroy", api.matmul_preference_destroy, missing);
  resolve(handle, "cublasLtMatmulPreferenceSetAttribute", api.matmul_preference_set_attribute,
          missing);
  resolve(handle, "cublasLtMatmulAlgoGetHeuristic", api.matmul_algo_get_heuristic, missing);
  resolve(handle, "cublasLtMatmul", api.matmul, missing);
  if (!missing.empty()) {
    dlclose(handle);
    return Error{soname + " has no symbol " + missing, "dlsym"};
  }
  return api;
}

}  // namespace

Result<const CublasLtApi*> load_cublaslt() {
  static std::once_flag once;
  static Result<CublasLtApi> loaded = Error{"not loaded", "load_cublaslt"};
  std::call_once(once, [] { loaded = open_cublaslt(); });
  if (!loaded) return loaded.error();
  return &*loaded;
}

}  // namespace vigil::cuda_probe
