#!/usr/bin/env bash
# The GPU acceptance run (docs/gpu-validation.md), from a bundle made by scripts/gpu-bundle.sh.
# Needs on the GPU machine: the NVIDIA driver, cuBLASLt 13 and NCCL 2 somewhere (a CUDA toolkit
# or PyTorch's nvidia-* wheels: this script finds them and says which it used), python3 with
# PyTorch for the reference figures. Nothing else: no network, no compiler, no Debian package.
#
#   gpu-validate.sh --bundle DIR --out OUT [--no-gpu] [--max-bytes SIZE]
#   gpu-validate.sh --summary-only OUT [--append FILE]
#
#   --bundle DIR       the bundle (scripts/gpu-bundle.sh; this script is inside it too)
#   --out OUT          results, 3 files (the device tool returns at most 8): OUT/summary.md,
#                      OUT/run.log and OUT/raw.tar.gz (every raw output, in raw/)
#   --no-gpu           rehearsal without a GPU (also chosen when nvidia-smi lists none): every
#                      binary starts, every GPU check must be error/skipped, never fail
#   --max-bytes SIZE   largest all_reduce message (default 1G)
#   --summary-only OUT rewrite OUT's summary from OUT/raw.tar.gz (no GPU needed)
# Exit status: 0 every item passed, 1 an item failed, 2 usage or setup error.
#
# Steps (GPU mode), each under its own time limit; the whole run is planned for < 8 minutes on
# one GPU: machine facts, nvidia-smi -q -x next to an NVML-only run, the quick and full suites
# (per-check wall time in the reports), the hook (epilog and healthcheck, --no-post, with and
# without --cuda-sanity, 3 runs each), PyTorch's figures for GEMM, HBM copy and pinned H2D/D2H,
# vigil-allreduce (NCCL, one process) next to all_reduce_perf, the busy-GPU guard with a
# PyTorch process holding the GPU, gpu_sdc with one injected bit flip, the hook under load, and
# last the qualify suite with a 60 s soak (about 90 s on one H200: docs/qualify.md).
set -uo pipefail

readonly PROG=gpu-validate.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle="" out="" no_gpu=0 max_bytes=1G summary_only="" append=""

die() {
  echo "$PROG: error: $*" >&2
  exit 2
}
usage() { sed -n '7,18p' "$0" | sed 's/^# \{0,1\}//'; }
need_value() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --bundle) need_value "$@"; bundle=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --no-gpu) no_gpu=1; shift ;;
    --max-bytes) need_value "$@"; max_bytes=$2; shift 2 ;;
    --summary-only) need_value "$@"; summary_only=$2; shift 2 ;;
    --append) need_value "$@"; append=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $max_bytes =~ ^[0-9]+[KMG]?$ ]] || die "--max-bytes must look like 1G, 512M or 1048576, not '$max_bytes'"

# The run's Python helpers: next to this script in the repository (scripts/lib) or in a bundle.
helper() {
  local c
  for c in "$here/lib/$1" "$here/lib/scripts/$1"; do
    [[ -f $c ]] && { echo "$c"; return; }
  done
}
summary_py=$(helper gpu_validate_summary.py)
reference_py=$(helper gpu_reference.py)
summarise() { # summarise RAW OUT
  [[ -n $summary_py ]] || die "gpu_validate_summary.py not found next to $0"
  python3 "$summary_py" "$1" --out "$2" ${append:+--append "$append"}
}
if [[ -n $summary_only ]]; then
  [[ -f $summary_only/raw.tar.gz ]] || die "--summary-only: no $summary_only/raw.tar.gz"
  work=$(mktemp -d) || die "cannot make a temporary directory"
  trap 'rm -rf -- "$work"' EXIT
  tar -C "$work" -xzf "$summary_only/raw.tar.gz" || die "--summary-only: cannot unpack $summary_only/raw.tar.gz"
  summarise "$work/raw" "$summary_only"
  exit $?
fi

[[ -n $bundle ]] || die "--bundle DIR is required (scripts/gpu-bundle.sh makes it)"
[[ -n $out ]] || die "--out OUT is required"
bundle=$(cd "$bundle" 2>/dev/null && pwd) || die "--bundle: no such directory"
[[ -x $bundle/bin/vigil-check && -f $bundle/MANIFEST.tsv ]] || die "--bundle: $bundle is not a bundle (no bin/vigil-check or MANIFEST.tsv)"
mkdir -p "$out" || die "--out: cannot create $out"
out=$(cd "$out" && pwd)
work=$(mktemp -d) || die "cannot make a temporary directory"
trap 'rm -rf -- "$work"' EXIT
raw=$work/raw
mkdir "$raw"
exec > >(tee "$out/run.log") 2>&1

if [[ $no_gpu == 0 ]] && ! { command -v nvidia-smi >/dev/null && [[ $(nvidia-smi -L 2>/dev/null) == *"GPU "* ]]; }; then
  echo "== nvidia-smi lists no GPU: rehearsal mode (--no-gpu)"
  no_gpu=1
fi
mode=gpu
[[ $no_gpu == 1 ]] && mode=no-gpu
echo "mode=$mode" >"$raw/mode.txt"
# Steps the summary must find, so that a run stopped before one (the device tool's limit) fails
# its item instead of reading like an older bundle without it.
echo "suite-qualify" >"$raw/planned.txt"

# timed NAME LIMIT CMD...: runs CMD under `timeout LIMIT`, stdout to raw/NAME.out, stderr to
# raw/NAME.err, "rc=N wall_s=S" to raw/NAME.time. Never stops the run.
timed() {
  local name=$1 limit=$2 start=$EPOCHREALTIME rc=0
  shift 2
  timeout --kill-after=10 "$limit" "$@" >"$raw/$name.out" 2>"$raw/$name.err" || rc=$?
  awk -v rc="$rc" -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "rc=%d wall_s=%.3f\n", rc, e - s }' >"$raw/$name.time"
  echo "   $name: $(cat "$raw/$name.time")"
  pack
}
# The raw outputs so far, packed after every step: a run stopped from outside (the device
# tool's time limit) still leaves everything it measured.
pack() { tar -C "$work" -czf "$out/raw.tar.gz.new" raw && mv "$out/raw.tar.gz.new" "$out/raw.tar.gz"; }

# ---- libraries the GPU machine must have: the run says which it used -------------------------
# find_lib SONAME: the first match in the loader's cache, the CUDA toolkit, then Python's
# nvidia-* wheels (PyTorch's cuBLAS and NCCL), then anywhere under /usr and /opt.
find_lib() {
  local so=$1 p
  p=$(ldconfig -p 2>/dev/null | awk -v so="$so" '$1 == so {print $NF; exit}')
  [[ -n $p ]] && { echo "$p"; return; }
  for p in /usr/local/cuda/lib64/$so /usr/local/cuda/targets/x86_64-linux/lib/$so; do
    [[ -e $p ]] && { echo "$p"; return; }
  done
  p=$(python3 - "$so" 2>/dev/null <<'EOF'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for m in sorted(glob.glob(os.path.join(r, "nvidia", "**", sys.argv[1]), recursive=True)):
        print(m); sys.exit(0)
EOF
)
  [[ -n $p ]] && { echo "$p"; return; }
  find /usr /opt -name "$so" -print -quit 2>/dev/null
}
libpath=$bundle/lib
{
  for so in libcublasLt.so.13 libnccl.so.2 libnvidia-ml.so.1 libcuda.so.1; do
    p=$(find_lib "$so")
    echo "$so ${p:-NOT-FOUND}"
    if [[ -n $p && $so != libnvidia-ml.so.1 && $so != libcuda.so.1 ]]; then
      libpath+=":$(dirname "$p")"
    fi
  done
} >"$raw/libs.txt"
sed 's/^/   uses /' "$raw/libs.txt"
# Only the bundle's binaries get this environment (PyTorch keeps its own library path). MPI:
# one process without mpirun (singleton, isolated: no orted), the bundle's components only.
v=(env LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  OPAL_PREFIX="$bundle/mpi" OMPI_MCA_mca_base_component_path="$bundle/mpi/lib/openmpi3"
  OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_btl=self OMPI_MCA_pml=ob1)
vc=$bundle/bin/vigil-check
va=$bundle/bin/vigil-allreduce
arp=$bundle/bin/all_reduce_perf
th=$bundle/thresholds

# ---- machine facts ---------------------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "kernel: $(uname -r)"
  echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "bundle: $(tr '\n' ' ' <"$bundle/VERSION")"
  echo "mode: $mode"
  if [[ $mode == gpu ]]; then
    echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)"
    echo "env: $(env | grep -E '^(LD_LIBRARY_PATH|CUDA_VISIBLE_DEVICES|NCCL_[A-Z_]*)=' | tr '\n' ' ')"
    echo "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n1)"
  fi
} >"$raw/machine.txt"
cat "$raw/machine.txt"
if [[ $mode == gpu ]]; then
  nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id,driver_version,memory.total,mig.mode.current,persistence_mode --format=csv >"$raw/gpus.csv" 2>&1
  nvidia-smi topo -m >"$raw/topology.txt" 2>&1
  nvidia-smi -q >"$raw/nvidia-smi-q.txt" 2>&1
  gpus=$(nvidia-smi -L | grep -c '^GPU ')
else
  gpus=0
fi

# ---- every binary starts (the loader finds everything) -------------------------------------
echo "== binaries start"
timed help-vigil-check 30 "${v[@]}" "$vc" --help
timed help-vigil-allreduce 30 "${v[@]}" "$va" --help
[[ -x $arp ]] && timed help-all_reduce_perf 30 "${v[@]}" "$arp" --help
timed list 30 "${v[@]}" "$vc" list
timed thresholds-validate 30 "${v[@]}" "$vc" thresholds validate "$th"

# ---- thresholds for this machine -------------------------------------------------------------
# A lent GPU machine is often a VM with some of a board's GPUs. The shipped SKU files expect a
# whole board (gpu_count 8), so the suites are judged against a copy whose gpu_count is what
# this machine shows: the site override a VM fleet would make (docs/thresholds.md). The shipped
# files are still run once (nvml-shipped) to record which SKU Vigil detects and what it says.
slice_th=$raw/thresholds-slice
cp -r "$th" "$slice_th"
# Likewise the InfiniBand ports: a VM without HCAs is judged as having none.
ib_ports=$(find /sys/class/infiniband/*/ports -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
if [[ $gpus -gt 0 ]]; then
  sed -i -E "s/^(  gpu_count: )[0-9]+/\1$gpus/; s/(gpu_count: \{op: \">=\", fail: )[0-9]+/\1$gpus/" "$slice_th"/*.yaml
  sed -i -E "s/^(  ports: )[0-9]+/\1$ib_ports/; s/(active_ports: \{op: \">=\", fail: )[0-9]+/\1$ib_ports/" "$slice_th"/*.yaml
fi
echo "slice: gpu_count $gpus, infiniband ports $ib_ports" >"$raw/slice.txt"

for b in "$vc" "$va" "$arp"; do
  [[ -x $b ]] && { echo "## $b"; "${v[@]}" ldd "$b"; }
done >"$raw/ldd.txt" 2>&1
if [[ $mode == gpu ]]; then
  # Power, clocks, temperature and utilization once a second for the whole run (context for
  # every figure: a GEMM at the power limit, a clock event during a hook).
  nvidia-smi dmon -s pucvt -d 1 -o T >"$raw/dmon.txt" 2>&1 &
  dmon=$!
  holder=""
  # Also on a stop from outside: no PyTorch process may keep the GPU after the run.
  trap 'kill "$dmon" ${holder:+"$holder"} 2>/dev/null; rm -rf -- "$work"' EXIT
  echo "== NVML next to nvidia-smi (shipped thresholds, then the machine's)"
  nvidia-smi -q -x >"$raw/nvidia-smi.xml" 2>&1
  timed nvml-shipped 120 "${v[@]}" "$vc" run --only gpu_count,nvml_ecc,nvml_row_remap,nvml_retired_pages,nvml_clock_events,nvml_pcie,nvml_nvlink,nvml_temperature,nvml_fabric,nvml_recovery \
    --thresholds "$th" --format json --state-dir "$raw/state-shipped" -o "$raw/nvml-shipped.json"
  nvidia-smi -q -x >"$raw/nvidia-smi-after.xml" 2>&1
  echo "== suites (quick, then full; the quick run records counter baselines)"
  timed suite-quick 180 "${v[@]}" "$vc" run --suite quick --thresholds "$slice_th" --format json \
    --state-dir "$raw/state" --allreduce-binary "$va" -o "$raw/suite-quick.json"
  timed suite-full 240 "${v[@]}" "$vc" run --suite full --thresholds "$slice_th" --format json \
    --state-dir "$raw/state" --allreduce-binary "$va" -o "$raw/suite-full.json"
  # Once more: the run-to-run spread of every figure on the same GPU minutes apart.
  timed suite-quick-2 180 "${v[@]}" "$vc" run --suite quick --thresholds "$slice_th" --format json \
    --state-dir "$raw/state" --allreduce-binary "$va" -o "$raw/suite-quick-2.json"
  echo "== hooks (--no-post: nothing posted, nothing drained)"
  for i in 1 2 3; do
    timed "hook-epilog-$i" 60 "${v[@]}" "$vc" hook epilog --no-post --format json --thresholds "$slice_th" \
      --state-dir "$raw/hook-state" -o "$raw/hook-epilog-$i.json"
    timed "hook-sanity-$i" 60 "${v[@]}" "$vc" hook epilog --no-post --cuda-sanity --format json \
      --thresholds "$slice_th" --state-dir "$raw/hook-state" -o "$raw/hook-sanity-$i.json"
  done
  timed hook-healthcheck 60 "${v[@]}" "$vc" hook healthcheck --no-post --format json --thresholds "$slice_th" \
    --state-dir "$raw/hook-state" -o "$raw/hook-healthcheck.json"
  (dmesg 2>/dev/null || true) | grep -E 'NVRM|nvidia' | tail -n 200 >"$raw/kmsg-nvidia.txt"
  nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE >"$raw/nvidia-smi-after-suites.txt" 2>&1

  echo "== PyTorch reference figures on the same GPU"
  timed reference 150 python3 "$reference_py" measure

  echo "== all_reduce: vigil-allreduce (NCCL, one process) next to all_reduce_perf"
  # One GPU: busbw = algbw x 2(n-1)/n is 0 by definition, so this validates the NCCL path,
  # the timing and the data check, not a bandwidth (docs/gpu-validation.md).
  # NCCL_DEBUG stays unset: vigil-allreduce then keeps NCCL's TUNING log itself and records the
  # algorithm NCCL chose (review F06); a job's NCCL_DEBUG would switch that record off.
  timed allreduce-vigil 120 "${v[@]}" "$va" --backend nccl --transport nvlink -b 1M -e "$max_bytes" -f 2 \
    -w 5 -n 20 --json "$raw/allreduce-vigil.json" --timeout 100
  if [[ -x $arp ]]; then
    timed allreduce-nccl-tests 120 "${v[@]}" "$arp" -b 1M -e "$max_bytes" -f 2 -w 5 -n 20 -g 1 -c 1
  fi

  echo "== busy-GPU guard: a PyTorch process holds GPU 0"
  python3 "$reference_py" hold 90 --gib 4 >"$raw/holder.out" 2>&1 &
  holder=$!
  for _ in $(seq 1 60); do grep -q holding "$raw/holder.out" 2>/dev/null && break; kill -0 "$holder" 2>/dev/null || break; sleep 0.5; done
  timed busy 90 "${v[@]}" "$vc" run --only gpu_gemm,gpu_hbm,gpu_pcie_bw,gpu_memtest,gpu_sdc \
    --thresholds "$slice_th" --format json -o "$raw/busy.json"
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null

  echo "== gpu_sdc with one flipped bit on GPU 0 (VIGIL_SDC_INJECT=0): must fail naming the element"
  timed sdc-inject 180 env VIGIL_SDC_INJECT=0 "${v[@]}" "$vc" run --suite full --only gpu_sdc \
    --thresholds "$slice_th" --format json -o "$raw/sdc-inject.json"

  echo "== HealthCheckProgram during a job: the hook while a PyTorch process runs matmuls"
  # What slurmd's HealthCheckProgram sees during a training job: power capping, clock changes.
  python3 "$reference_py" hold 60 --gib 4 --load >"$raw/loader.out" 2>&1 &
  holder=$!
  for _ in $(seq 1 60); do grep -q holding "$raw/loader.out" 2>/dev/null && break; kill -0 "$holder" 2>/dev/null || break; sleep 0.5; done
  sleep 3  # clocks and power settle under the load
  for i in 1 2 3 4 5; do
    timed "hook-under-load-$i" 60 "${v[@]}" "$vc" hook healthcheck --no-post --format json \
      --thresholds "$slice_th" --state-dir "$raw/hook-state" -o "$raw/hook-under-load-$i.json"
    nvidia-smi -q -d PERFORMANCE >"$raw/performance-under-load-$i.txt" 2>&1
    sleep 1
  done
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null

  # Last, being the longest: a run stopped by the device tool's limit still has every item above.
  echo "== the qualify suite, 60 s soak: a healthy GPU passes, no mismatch over 1,000 repeats"
  timed suite-qualify 300 "${v[@]}" "$vc" run --suite qualify --soak-s 60 --thresholds "$slice_th" \
    --format json --state-dir "$raw/state" --allreduce-binary "$va" -o "$raw/suite-qualify.json"
  kill "$dmon" 2>/dev/null
  wait "$dmon" 2>/dev/null
else
  echo "== rehearsal: the quick and qualify suites and the hook without a GPU"
  timed suite-quick 180 "${v[@]}" "$vc" run --suite quick --thresholds "$slice_th" --format json \
    --state-dir "$raw/state" --allreduce-binary "$va" -o "$raw/suite-quick.json"
  timed hook-epilog-1 60 "${v[@]}" "$vc" hook epilog --no-post --format json --thresholds "$slice_th" \
    --state-dir "$raw/hook-state" -o "$raw/hook-epilog-1.json"
  timed hook-sanity-1 60 "${v[@]}" "$vc" hook epilog --no-post --cuda-sanity --format json \
    --thresholds "$slice_th" --state-dir "$raw/hook-state" -o "$raw/hook-sanity-1.json"
  timed suite-qualify 180 "${v[@]}" "$vc" run --suite qualify --soak-s 60 --thresholds "$slice_th" \
    --format json --state-dir "$raw/state" --allreduce-binary "$va" -o "$raw/suite-qualify.json"
  # The MPI runtime of the bundle: one process, host backend (no GPU needed); the NCCL backend
  # must refuse with a clear message.
  timed allreduce-host 60 "${v[@]}" "$va" --backend host -b 1M -e 4M -f 2 -w 1 -n 2 --json "$raw/allreduce-host.json"
  timed allreduce-vigil 60 "${v[@]}" "$va" --backend nccl --transport nvlink -b 1M -e 4M -f 2 -w 1 -n 2 \
    --json "$raw/allreduce-vigil.json" --timeout 30
fi

pack
echo "== summary"
summarise "$raw" "$out"
exit $?
