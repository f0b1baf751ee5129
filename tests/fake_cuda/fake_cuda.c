/* A stand-in for the NVIDIA driver's libcuda.so.1 that reports an old CUDA version
 * (VIGIL_FAKE_CUDA_DRIVER_VERSION, default 12020 = CUDA 12.2, what an R535 driver reports), for
 * the driver-compatibility tests (docs/driver-matrix.md). It answers what the statically linked
 * CUDA runtime asks before its own version check, cuGetProcAddress for cuDriverGetVersion
 * (cudart then fails every call with cudaErrorInsufficientDriver, as on a real R535 node), and
 * cuInit / cuDeviceGetCount for vigil-check's driver probe (gpu_probe.h), with 8 devices. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
enum { kSuccess = 0, kNoDevice = 100, kNotFound = 500 };

CUresult cuDriverGetVersion(int* v) {
  const char* e = getenv("VIGIL_FAKE_CUDA_DRIVER_VERSION");
  *v = e ? atoi(e) : 12020;
  return kSuccess;
}

/* VIGIL_FAKE_CUDA_INIT_RESULT: what cuInit answers, e.g. 802 CUDA_ERROR_SYSTEM_NOT_READY (cuda.h:
 * "the system is not yet ready to start any CUDA work ... all required driver daemons are
 * actively running"), which an NVSwitch system gives while its Fabric Manager is down. */
static int accessible_devices(void);

/* With no device the process may open, cuInit answers CUDA_ERROR_NO_DEVICE (100, cuda.h: "no
 * CUDA-capable devices were detected by the installed CUDA driver"). */
CUresult cuInit(unsigned flags) {
  (void)flags;
  const char* e = getenv("VIGIL_FAKE_CUDA_INIT_RESULT");
  if (e) return atoi(e);
  return accessible_devices() > 0 ? kSuccess : kNoDevice;
}

/* VIGIL_FAKE_GPU_DEV_DIR (the local cluster's production profile, docs/local-cluster.md): the
 * node's GPUs are DIR/nvidia0.. and the driver enumerates only those the process may open, as
 * under a device cgroup (Slurm's ConstrainDevices=yes): an open that fails with EPERM or EACCES
 * hides the GPU, one that succeeds or fails with ENXIO (no driver behind the local cluster's
 * nodes) shows it. Without the variable: 8 devices. */
static int accessible_devices(void) {
  const char* dir = getenv("VIGIL_FAKE_GPU_DEV_DIR");
  if (!dir || !*dir) return 8;
  int n = 0;
  for (int i = 0; i < 256; ++i) {
    char path[4096];
    snprintf(path, sizeof path, "%s/nvidia%d", dir, i);
    if (access(path, F_OK) != 0) break;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) close(fd);
    if (fd >= 0 || errno == ENXIO) ++n;
  }
  return n;
}

CUresult cuDeviceGetCount(int* n) {
  *n = accessible_devices();
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
