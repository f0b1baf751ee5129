/* A stand-in for the NVIDIA driver's libcuda.so.1 that reports an old CUDA version
 * (VIGIL_FAKE_CUDA_DRIVER_VERSION, default 12020 = CUDA 12.2, what an R535 driver reports), for
 * the driver-compatibility tests (docs/driver-matrix.md). It answers what the statically linked
 * CUDA runtime asks before its own version check, cuGetProcAddress for cuDriverGetVersion
 * (cudart then fails every call with cudaErrorInsufficientDriver, as on a real R535 node), and
 * cuInit / cuDeviceGetCount for vigil-check's driver probe (gpu_probe.h), with 8 devices. */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { kSuccess = 0, kNotFound = 500 };

CUresult cuDriverGetVersion(int* v) {
  const char* e = getenv("VIGIL_FAKE_CUDA_DRIVER_VERSION");
  *v = e ? atoi(e) : 12020;
  return kSuccess;
}

/* VIGIL_FAKE_CUDA_INIT_RESULT: what cuInit answers, e.g. 802 CUDA_ERROR_SYSTEM_NOT_READY (cuda.h:
 * "the system is not yet ready to start any CUDA work ... all required driver daemons are
 * actively running"), which an NVSwitch system gives while its Fabric Manager is down. */
CUresult cuInit(unsigned flags) {
  (void)flags;
  const char* e = getenv("VIGIL_FAKE_CUDA_INIT_RESULT");
  return e ? atoi(e) : kSuccess;
}

CUresult cuDeviceGetCount(int* n) {
  *n = 8;
  return kSuccess;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, unsigned long long flags,
                             int* status);

CUresult cuGetProcAddress(const char* symbol, void** fn, int version, unsigned long long flags) {
  (void)version;
  (void)flags;
  *fn = NULL;
  if (strcmp(symbol, "cuDriverGetVersion") == 0) *fn = (void*)cuDriverGetVersion;
  if (strcmp(symbol, "cuInit") == 0) *fn = (void*)cuInit;
  if (strcmp(symbol, "cuDeviceGetCount") == 0) *fn = (void*)cuDeviceGetCount;
  if (strcmp(symbol, "cuGetProcAddress") == 0) *fn = (void*)cuGetProcAddress_v2;
  return *fn ? kSuccess : kNotFound;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int version, unsigned long long flags,
                             int* status) {
  if (status) *status = 0;
  return cuGetProcAddress(symbol, fn, version, flags);
}
