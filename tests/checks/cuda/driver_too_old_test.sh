#!/usr/bin/env bash
# A node whose driver cannot run this build (docs/driver-matrix.md): the real vigil-check, its
# statically linked CUDA runtime and a stand-in libcuda.so.1 that reports CUDA 12.2 (an R535
# driver). Every CUDA probe and the NCCL check must be `skipped` VIGIL-CUDA-DRIVER-TOO-OLD with
# the versions and the fix, and vigil-check must exit 0 (nothing failed).
#   driver_too_old_test.sh VIGIL_CHECK FAKE_NVML_LIB FAKE_CUDA_DIR SOURCE_DIR
set -euo pipefail
check=$1 nvml=$2 cuda_dir=$3 src=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
LD_LIBRARY_PATH=$cuda_dir VIGIL_FAKE_CUDA_DRIVER_VERSION=12020 \
  VIGIL_FAKE_NVML_FIXTURE=$src/tests/fixtures/nodes/gpu-0/nvml.json \
  "$check" run --node gpu-0 --nvml-library "$nvml" --sysfs-root "$src/tests/fixtures/nodes/gpu-0/sysfs" \
  --state-dir "$(dirname "$out")/vigil-driver-test-$$" \
  --only gpu_hbm,gpu_pcie_bw,gpu_memtest,nccl_allreduce_nvlink --format json >"$out" || rc=$?
rm -rf "$(dirname "$out")/vigil-driver-test-$$"
python3 - "$out" "$rc" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report = report[0] if isinstance(report, list) else report
rc = int(sys.argv[2])
bad = []
seen = set()
for c in report["checks"]:
    seen.add(c["check"])
    msg = c.get("message", "")
    if (c["status"] != "skipped" or c.get("fault_code") != "VIGIL-CUDA-DRIVER-TOO-OLD"
            or "supports CUDA 12.2" not in msg or "cuda-compat-" not in msg):
        bad.append(f'{c["check"]}: {c["status"]} {c.get("fault_code")}: {msg}')
want = {"gpu_hbm", "gpu_pcie_bw", "gpu_memtest", "nccl_allreduce_nvlink"}
if seen != want:
    bad.append(f"checks run: {sorted(seen)}, want {sorted(want)}")
if rc != 0:
    bad.append(f"vigil-check exited {rc}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"ok: {len(seen)} checks skipped: {report['checks'][0]['message']}")
PY
