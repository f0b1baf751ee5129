#!/usr/bin/env bash
# Validate the CUDA probes on a real GPU machine (see docs/cuda-probes.md).
#
# Builds Vigil with CUDA, runs the probe unit tests, then runs the four probes with vigil-check
# in the quick and the full suite and writes everything (JSON reports, device/driver info, a
# summary table) to one directory. Copy the figures into docs/gpu-validation.md.
#
# Usage: scripts/gpu-validate.sh [OUT_DIR]
#   VIGIL_CUDA_ARCHS  CUDA architectures to build (default: native = this machine's GPUs)
#   BUILD_DIR         build directory (default: build-gpu-validate)
#   SUITES            suites to run (default: "quick full")
#   JOBS              parallel build jobs (default: nproc)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/gpu-validation-$(date -u +%Y%m%dT%H%M%SZ)}"
build="${BUILD_DIR:-$repo/build-gpu-validate}"
archs="${VIGIL_CUDA_ARCHS:-native}"
suites="${SUITES:-quick full}"
jobs="${JOBS:-$(nproc)}"
probes="gpu_gemm,gpu_hbm,gpu_pcie_bw,gpu_memtest"

mkdir -p "$out"
echo "== results go to $out"

if ! command -v nvidia-smi >/dev/null; then
  echo "error: nvidia-smi not found; run this on a machine with an NVIDIA GPU and driver" >&2
  exit 3
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,clocks.max.sm \
    --format=csv
  nvidia-smi topo -m 2>/dev/null || true
  "${CUDACXX:-/usr/local/cuda/bin/nvcc}" --version | tail -n 2
} | tee "$out/device.txt"

echo "== configure + build (CUDA archs: $archs) in $build"
cmake -S "$repo" -B "$build" -DVIGIL_WITH_CUDA=ON -DVIGIL_CUDA_ARCHS="$archs" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/configure.log"
cmake --build "$build" -j"$jobs" --target vigil-check checks_cuda_test checks_cuda_math_test \
  >"$out/build.log"

echo "== unit tests (with a GPU, the 'no driver' test reports SKIPPED)"
"$build/tests/checks/cuda/checks_cuda_math_test" | tail -n 3
"$build/tests/checks/cuda/checks_cuda_test" | tee "$out/unit-tests.txt" | tail -n 4

thresholds=()
[[ -d "$repo/checks/thresholds" ]] && thresholds=(--thresholds "$repo/checks/thresholds")

for suite in $suites; do
  echo "== vigil-check run --suite $suite --only $probes"
  start=$(date +%s)
  rc=0
  "$build/checks/vigil-check" run --suite "$suite" --only "$probes" --format json \
    "${thresholds[@]}" -o "$out/report-$suite.json" || rc=$?
  echo "exit code $rc (0 pass, 1 fail, 2 warn, 3 error), wall time $(($(date +%s) - start)) s" \
    | tee "$out/run-$suite.txt"
done

# Reference figures for the comparison the issue asks for (HBM >= 90% of spec, H2D/D2H within
# 10% of a plain memcpy loop, GEMM within 10% of the cuBLAS peak): NVIDIA's nvbandwidth when it
# is installed.
if command -v nvbandwidth >/dev/null; then
  echo "== nvbandwidth reference (host<->device copy engines)"
  nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce | tee "$out/nvbandwidth.txt"
else
  echo "== nvbandwidth not installed: no H2D/D2H reference run (see docs/cuda-probes.md)"
fi

echo "== summary"
# shellcheck disable=SC2086  # one argument per suite
python3 - "$out" $suites <<'EOF' | tee "$out/summary.txt"
import json, sys
out, suites = sys.argv[1], sys.argv[2:]
print(f"{'suite':6} {'check':12} {'status':7} {'gpu':>3} {'measurement':18} {'value':>10} unit")
for suite in suites:
    try:
        report = json.load(open(f"{out}/report-{suite}.json"))
    except (OSError, ValueError) as e:
        print(f"{suite}: no report ({e})")
        continue
    for c in report.get("checks", []):
        ms = c.get("measurements") or [{}]
        for m in ms:
            print(f"{suite:6} {c['check']:12} {c['status']:7} {str(m.get('gpu', '')):>3} "
                  f"{m.get('name', ''):18} {m.get('value', float('nan')):10.1f} {m.get('unit', '')}")
        print(f"{'':6} {'':12} message: {c.get('message', '')}")
EOF
echo "== done: record date, device, driver and these figures in docs/gpu-validation.md"
