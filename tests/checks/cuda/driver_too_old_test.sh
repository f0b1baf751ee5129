#!/usr/bin/env bash
# A node whose driver cannot run this build (docs/driver-matrix.md): the real vigil-check, its
# statically linked CUDA runtime and a stand-in libcuda.so.1 that reports CUDA 12.2 (an R535
# driver). Every CUDA probe and the NCCL check must be `skipped` VIGIL-CUDA-DRIVER-TOO-OLD with
# the versions and the fix, and vigil-check must exit 0 (nothing failed). Then the Fabric Manager
# case (cuInit 802), below.
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

# Review F12: a driver that supports this build but whose cuInit answers 802
# CUDA_ERROR_SYSTEM_NOT_READY (an NVSwitch node whose Fabric Manager is down). No CUDA job can
# start there: the probes fail VIGIL-CUDA-SYSTEM-NOT-READY and name Fabric Manager. A negative
# control (cuInit succeeds on the same stand-in) is not this fault.
for init in 802 0; do
  rc=0
  LD_LIBRARY_PATH=$cuda_dir VIGIL_FAKE_CUDA_DRIVER_VERSION=13000 VIGIL_FAKE_CUDA_INIT_RESULT=$init \
    VIGIL_FAKE_NVML_FIXTURE=$src/tests/fixtures/nodes/gpu-0/nvml.json \
    "$check" run --node gpu-0 --nvml-library "$nvml" --sysfs-root "$src/tests/fixtures/nodes/gpu-0/sysfs" \
    --state-dir "$(dirname "$out")/vigil-driver-test-$$" --only gpu_hbm --format json >"$out" || rc=$?
  rm -rf "$(dirname "$out")/vigil-driver-test-$$"
  python3 - "$out" "$rc" "$init" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report = report[0] if isinstance(report, list) else report
rc, init = int(sys.argv[2]), sys.argv[3]
c = report["checks"][0]
if init == "802":
    ok = (c["status"] == "fail" and c.get("fault_code") == "VIGIL-CUDA-SYSTEM-NOT-READY"
          and "Fabric Manager" in c.get("message", "") and rc != 0)
else:
    ok = c.get("fault_code") != "VIGIL-CUDA-SYSTEM-NOT-READY" and c["status"] != "fail"
print(("ok" if ok else "BAD") + f": cuInit {init}: {c['status']} {c.get('fault_code')} rc={rc}: {c.get('message')}")
sys.exit(0 if ok else 1)
PY
done
