#!/usr/bin/env bash
# hook_bench: wall time of `vigil-check hook healthcheck --no-post` for one 8-GPU node against the
# fake NVML with per-call costs set to real-NVML figures, as a median over REPS runs, next to a
# baseline measured in the same run: the same checks through `vigil-check run --only ...`, which
# forks one child per check, each attaching NVML on its own.
#
# Simulated costs (docs/hooks.md "Time"; not measured on a GPU here, no GPU on this machine):
#   init_latency_ms 500  per nvmlInit_v2 attach on an 8-GPU node: NVIDIA/mig-parted PR #332
#                        measured ~42 s of CPU for 68-100 NVML Init/Shutdown cycles on a DGX
#                        B300 (8 GPUs), 0.4-0.6 s per cycle.
#   call_latency_us 1000 per device query (ECC, remapped rows, NVLink state and counters...):
#                        a pessimistic round figure; these calls go to the kernel driver / GSP
#                        and serialize there (flightlessmango/MangoHud PR #1307).
# The goal (issue 12) is a median under 2 s for 8 GPUs.
#   hook_bench.sh VIGIL_CHECK FAKE_NVML SOURCE_DIR [REPS]
set -euo pipefail
check=$1 fake=$2 src=$3 reps=${4:-11}
work=$(mktemp -d /tmp/vigil-hook-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$src/tests/fixtures/nodes/gpu-0/nvml.json" "$work/nvml.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["init_latency_ms"] = 500
j["call_latency_us"] = 1000
json.dump(j, open(sys.argv[2], "w"))
PY
printf '6,1,100,-;Linux version 6.1\n' >"$work/kmsg"
export VIGIL_FAKE_NVML_FIXTURE=$work/nvml.json
common=(--node gpu-0 --nvml-library "$fake" --sysfs-root "$src/tests/fixtures/nodes/gpu-0/sysfs")
only=gpu_count,nvml_ecc,nvml_row_remap,nvml_retired_pages,nvml_clock_events,nvml_nvlink,ib_port

time_one() {  # prints seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
cpu_one() {  # prints user+sys CPU seconds of the command (bash's time keyword; load-independent)
  local TIMEFORMAT='%U %S' out
  out=$({ time "$@" >/dev/null 2>&1; } 2>&1 || true)
  awk '{print $1 + $2}' <<<"$out"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

hook_times=() run_times=() suite_times=() floor_times=() cpu_times=()
for ((i = 0; i < reps; i++)); do
  hook_times+=("$(time_one "$check" hook healthcheck --no-post "${common[@]}" --kmsg "$work/kmsg")")
  # The suite's own time, as the hook reports it on stderr ("..., pass in 0.83 s; ...").
  suite_times+=("$("$check" hook healthcheck --no-post "${common[@]}" --kmsg "$work/kmsg" 2>&1 >/dev/null |
    sed -n 's/.* in \([0-9.]*\) s;.*/\1/p')")
  run_times+=("$(time_one "$check" run --quiet "${common[@]}" --only "$only")")
  floor_times+=("$(time_one "$check" list)")  # process start + registry: what any command pays
  cpu_times+=("$(cpu_one "$check" hook healthcheck --no-post "${common[@]}" --kmsg "$work/kmsg")")
done
cpu_med=$(printf '%s\n' "${cpu_times[@]}" | median)
hook_med=$(printf '%s\n' "${hook_times[@]}" | median)
suite_med=$(printf '%s\n' "${suite_times[@]}" | median)
run_med=$(printf '%s\n' "${run_times[@]}" | median)
floor_med=$(printf '%s\n' "${floor_times[@]}" | median)
printf 'hook_bench: 8 GPUs, fake NVML at 500 ms per nvmlInit and 1 ms per device query, %d runs each\n' "$reps"
printf '  vigil-check hook healthcheck (one NVML attach):      median %.2f s\n' "$hook_med"
printf '    of which the passive suite itself:                median %.2f s\n' "$suite_med"
printf '    CPU time of the whole process (user+sys):         median %.2f s\n' "$cpu_med"
printf '  vigil-check run, same checks (one attach per check): median %.2f s (baseline)\n' "$run_med"
printf '  vigil-check list (process start, no checks):         median %.2f s (machine floor; load %s)\n' \
  "$floor_med" "$(cut -d' ' -f1 /proc/loadavg)"
awk -v h="$hook_med" -v r="$run_med" \
  'BEGIN {printf "  ratio hook/baseline: %.2f; goal median < 2 s: %s\n", h / r, (h < 2 ? "met" : "NOT met")}'
