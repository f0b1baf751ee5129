#!/usr/bin/env bash
# The acceptance run for Vigil's GPU paths on the first real GPU machine (docs/gpu-validation.md).
#
# From the repository root of a fresh GPU machine (driver loaded, CUDA + NCCL in /usr/local/cuda,
# OpenMPI, no network needed):
#   1. builds Vigil with CUDA for this machine's GPUs and nccl-tests' all_reduce_perf from a
#      source tree you carry in (not part of this repository);
#   2. runs `vigil-check run --suite quick` and `--suite full` on every check, with wall time;
#   3. runs vigil-allreduce --backend nccl in NVLink and IB-loopback mode next to all_reduce_perf
#      with the same environment, sizes and timing rule (-a 3: slowest rank, as Vigil reports);
#   4. saves `nvidia-smi -q -x` to compare every NVML figure Vigil reported against it;
#   5. writes one summary with pass/fail per item (scripts/lib/gpu_validate_summary.py) to
#      OUT/summary.md and, with --doc, appends it to docs/gpu-validation.md.
# Goals checked by the summary: vigil-allreduce busbw >= 0.99 x all_reduce_perf at >= 1 GiB, HBM
# >= 90% of the SKU's spec, quick suite < 60 s on 8 GPUs, no `fail` on a healthy node, NVML
# figures equal to nvidia-smi's.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/gpu-validate.sh --nccl-tests DIR [options]
  --nccl-tests DIR   nccl-tests source tree (e.g. github.com/NVIDIA/nccl-tests, any 2.x tag)
  --out DIR          where results go (default: BUILD/results-<UTC time>, ignored by git)
  --build DIR        Vigil build directory (default: build-gpu-validate)
  --cuda DIR         CUDA toolkit with NCCL (default: /usr/local/cuda)
  --ranks N          GPUs for the all-reduce runs (default: all GPUs nvidia-smi lists)
  --max-bytes SIZE   largest all-reduce message (default: 8G; goal measured at >= 1 GiB)
  --hbm-spec GB/S    HBM spec bandwidth (default: from the GPU name, see the summary writer)
  --healthy          assert this node is healthy: any `fail` is a false fail (default: on)
  --no-healthy       the node is known to be faulty: `fail` results are not judged
  --doc              append the summary to docs/gpu-validation.md
  --summary-only DIR rewrite the summary of an earlier run's OUT directory (no GPU needed)
  -h, --help         this text
Exit status: 0 every item passed, 1 an item failed, 2 usage or setup error.
EOF
}

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nccl_tests="" out="" build="$repo/build-gpu-validate" cuda="/usr/local/cuda" ranks=""
max_bytes="8G" hbm_spec="" healthy=1 doc=0 summary_only=""

die() {
  echo "gpu-validate.sh: $*" >&2
  exit 2
}
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --nccl-tests) need_value "$@"; nccl_tests="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --cuda) need_value "$@"; cuda="$2"; shift 2 ;;
    --ranks) need_value "$@"; ranks="$2"; shift 2 ;;
    --max-bytes) need_value "$@"; max_bytes="$2"; shift 2 ;;
    --hbm-spec) need_value "$@"; hbm_spec="$2"; shift 2 ;;
    --healthy) healthy=1; shift ;;
    --no-healthy) healthy=0; shift ;;
    --doc) doc=1; shift ;;
    --summary-only) need_value "$@"; summary_only="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ -z "$ranks" || "$ranks" =~ ^[1-9][0-9]*$ ]] || die "--ranks must be a positive integer, not '$ranks'"
[[ "$max_bytes" =~ ^[0-9]+[KMG]?$ ]] || die "--max-bytes must look like 8G, 512M or 1048576, not '$max_bytes'"
[[ -z "$hbm_spec" || "$hbm_spec" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--hbm-spec must be GB/s, not '$hbm_spec'"

summarise() {
  local dir="$1" args=()
  [[ -n "$hbm_spec" ]] && args+=(--hbm-spec "$hbm_spec")
  [[ "$healthy" == 1 ]] && args+=(--healthy)
  [[ "$doc" == 1 ]] && args+=(--append "$repo/docs/gpu-validation.md")
  python3 "$repo/scripts/lib/gpu_validate_summary.py" "$dir" "${args[@]}"
}

if [[ -n "$summary_only" ]]; then
  [[ -d "$summary_only" ]] || die "--summary-only: no such directory: $summary_only"
  summarise "$summary_only"
  exit $?
fi

[[ -n "$nccl_tests" ]] || die "--nccl-tests DIR is required (the all_reduce_perf reference)"
[[ -f "$nccl_tests/src/all_reduce.cu" ]] || die "--nccl-tests: $nccl_tests has no src/all_reduce.cu"
[[ -x "$cuda/bin/nvcc" ]] || die "--cuda: no $cuda/bin/nvcc"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: run this on a GPU machine"
command -v mpirun >/dev/null || die "mpirun not found (scripts/install-deps.sh installs OpenMPI)"
command -v mpicc >/dev/null || die "mpicc not found (libopenmpi-dev) to build all_reduce_perf"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[[ "$gpus" -gt 0 ]] || die "nvidia-smi lists no GPU"
ranks="${ranks:-$gpus}"
[[ "$ranks" -le "$gpus" ]] || die "--ranks $ranks but only $gpus GPUs"

out="${out:-$build/results-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
echo "== results in $out"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "gpus: $gpus"
  echo "ranks: $ranks"
  "$cuda/bin/nvcc" --version | tail -n 1
} >"$out/machine.txt"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv \
  >"$out/gpus.csv"
nvidia-smi topo -m >"$out/topology.txt" 2>&1 || true

timed() { # timed NAME CMD...: runs CMD, records exit code and wall seconds in OUT/NAME.time
  local name="$1" start="$EPOCHREALTIME" rc=0
  shift
  "$@" || rc=$?
  awk -v rc="$rc" -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "rc=%d wall_s=%.2f\n", rc, e - s }' \
    >"$out/$name.time"
  echo "   $name: exit $rc, $(cut -d' ' -f2 "$out/$name.time")"
}

echo "== build Vigil with CUDA (native archs) in $build"
cmake -S "$repo" -B "$build" -DVIGIL_WITH_CUDA=ON -DVIGIL_CUDA_ARCHS=native \
  -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >"$out/configure.log" 2>&1 || die "configure failed: see $out/configure.log"
cmake --build "$build" -j"$(nproc)" --target vigil-check vigil-allreduce checks_cuda_test \
  >"$out/build.log" 2>&1 || die "build failed: see $out/build.log"
echo "== build all_reduce_perf from $nccl_tests"
# MPI_HOME must hold include/ and lib/ (Debian: /usr/lib/x86_64-linux-gnu/openmpi); NCCL comes
# with the CUDA toolkit here (libnccl in $cuda/lib64). NVCC_GENCODE from the environment, if set,
# limits the architectures nccl-tests builds for.
mpi_libdir=$(mpicc --showme:libdirs | awk '{print $1}')
make -C "$nccl_tests/src" -j"$(nproc)" MPI=1 MPI_HOME="$(dirname "$mpi_libdir")" \
  CUDA_HOME="$cuda" NCCL_HOME="$cuda" BUILDDIR="$out/nccl-tests-build" \
  "$out/nccl-tests-build/all_reduce_perf" >"$out/nccl-tests-build.log" 2>&1 ||
  die "building all_reduce_perf failed: see $out/nccl-tests-build.log"

echo "== CUDA probe unit tests"
"$build/tests/checks/cuda/checks_cuda_test" >"$out/checks_cuda_test.txt" 2>&1 || true

thresholds=()
[[ -d "$repo/checks/thresholds" ]] && thresholds=(--thresholds "$repo/checks/thresholds")
# Right before the quick suite, whose NVML checks run first: temperature and power then differ
# only by the seconds between the two reads (the summary allows 3 C and 10%).
nvidia-smi -q -x >"$out/nvidia-smi.xml"
for suite in quick full; do
  echo "== vigil-check run --suite $suite"
  # --state-dir: the quick run records the counter baselines, the full run computes deltas.
  timed "suite-$suite" "$build/checks/vigil-check" run --suite "$suite" --format json \
    "${thresholds[@]}" --state-dir "$out/state" \
    --allreduce-binary "$build/nccl-bench/vigil-allreduce" -o "$out/suite-$suite.json"
done

# The Slurm hooks' passive suite (goal: < 2 s for the whole process), then the prolog with the
# CUDA sanity check (goal: <= 0.1 s per GPU); --no-post: nothing is posted or drained.
timed "hook-healthcheck" "$build/checks/vigil-check" hook healthcheck --no-post --format json \
  "${thresholds[@]}" --state-dir "$out/hook-state" -o "$out/hook-healthcheck.json"
timed "hook-sanity" "$build/checks/vigil-check" hook prolog --no-post --cuda-sanity \
  --format json "${thresholds[@]}" --state-dir "$out/hook-state" -o "$out/hook-sanity.json"

mpi=(mpirun --allow-run-as-root --bind-to numa -np "$ranks")
for transport in nvlink ib; do
  env_args=()
  if [[ "$transport" == ib ]]; then
    env_args=(-x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1 -x NCCL_ALGO=Ring)
  else
    env_args=(-x NCCL_P2P_DISABLE=0 -x NCCL_SHM_DISABLE=0)
  fi
  echo "== all-reduce over $transport: vigil-allreduce, then all_reduce_perf"
  timed "allreduce-$transport-vigil" "${mpi[@]}" "$build/nccl-bench/vigil-allreduce" \
    --backend nccl --transport "$transport" -b 1M -e "$max_bytes" -f 2 -w 5 -n 20 \
    --json "$out/allreduce-$transport-vigil.json" >"$out/allreduce-$transport-vigil.txt" 2>&1
  timed "allreduce-$transport-nccl-tests" "${mpi[@]}" "${env_args[@]}" \
    "$out/nccl-tests-build/all_reduce_perf" -b 1M -e "$max_bytes" -f 2 -w 5 -n 20 -g 1 -a 3 \
    >"$out/allreduce-$transport-nccl-tests.txt" 2>&1
done

echo "== summary"
summarise "$out"
