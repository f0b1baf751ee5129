#!/usr/bin/env bash
# Vigil demo: install what is missing, build, start a local Slurm cluster (gpu-[0-3]) and
# vigil-drainer, run `vigil-check` on every node as ordinary sbatch jobs that post their reports
# to the drainer, and print a per-node table. The simulated node gpu-2 has a GPU with pending
# row remaps: the drainer drains it (visible in `sinfo -R`). Then its fixture is "repaired" (the
# GPU was reset), it is re-checked in place with `srun -Z` while it stays drained, and after
# resume_after passing reports the drainer resumes it. Every daemon the demo starts is stopped
# when it exits, also on Ctrl-C.
#
#   scripts/demo.sh [--skip-deps] [--skip-build] [--build-dir DIR] [--keep-cluster]
#
# Exit code 0 when the demo ran (the unhealthy node is expected); 1 when something broke.
# Reports are kept in <build-dir>/demo/<timestamp>/ (NODE.json, NODE.log).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build
skip_deps=0 skip_build=0 keep_cluster=0
job_timeout=${VIGIL_DEMO_JOB_TIMEOUT:-300}
while [[ $# -gt 0 ]]; do
  case $1 in
    --skip-deps) skip_deps=1 ;;
    --skip-build) skip_build=1 ;;
    --build-dir) build=$(realpath -m "${2:?--build-dir needs a directory}"); shift ;;
    --keep-cluster) keep_cluster=1 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

step() { printf '\n==> %s\n' "$*"; }
nodes=(gpu-0 gpu-1 gpu-2 gpu-3)

# 1. Dependencies and build --------------------------------------------------------------------
if ((!skip_deps)); then
  step "Installing missing Debian packages (scripts/install-deps.sh)"
  "$repo/scripts/install-deps.sh"
fi
if ((!skip_build)); then
  step "Building vigil-check, vigil-allreduce, vigil-drainer and the fake NVML library in $build"
  mkdir -p "$build"
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log" >&2
    echo "demo: cmake configure failed (log above)" >&2
    exit 1
  }
  grep -A12 'configuration summary' "$build/configure.log" | sed 's/^-- //' || true
  cmake --build "$build" -j2 --target vigil-check vigil-allreduce vigil-drainer fake_nvml || {
    echo "demo: build failed (compiler output above)" >&2
    exit 1
  }
fi

# 2. Local Slurm cluster, stopped on every exit path ------------------------------------------
cluster=$(mktemp -d /tmp/vigil-demo.XXXXXX)
drainer_pid=""
stop_cluster() {
  if [[ -n $drainer_pid ]]; then
    kill "$drainer_pid" 2>/dev/null && wait "$drainer_pid" 2>/dev/null || true
  fi
  if ((keep_cluster)); then
    echo "demo: cluster left running in $cluster; stop it with: scripts/local-cluster.sh stop $cluster --clean"
  else
    "$repo/scripts/local-cluster.sh" stop "$cluster" --clean || true
  fi
}
trap stop_cluster EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

step "Starting a local Slurm cluster: munged + slurmctld + 4 slurmd (${nodes[*]}) in $cluster"
"$repo/scripts/local-cluster.sh" start "$cluster" --nodes ${#nodes[@]}
# shellcheck disable=SC1091
source "$cluster/env"
sinfo

# 3. vigil-drainer ------------------------------------------------------------------------------
run_dir=$build/demo/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$run_dir"
# A private copy of the node fixtures, so "repairing" gpu-2 later never touches the repository.
cp -r "$repo/tests/fixtures/nodes" "$run_dir/fixtures"
export VIGIL_RUN_DIR=$run_dir VIGIL_SOURCE_DIR=$repo VIGIL_BUILD_DIR=$build
export VIGIL_FIXTURES_DIR=$run_dir/fixtures
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$run_dir/token"
cat >"$run_dir/drainer.yaml" <<YAML
listen: {address: 127.0.0.1, port: $port}
auth: {token_file: $run_dir/token}
state_dir: $run_dir/drainer
policy:
  defaults: {drain_after: 2, resume_after: 2}
breaker: {max_drains: 2, max_percent: 50, window_s: 3600}
YAML
step "Starting vigil-drainer on 127.0.0.1:$port (state in $run_dir/drainer)"
"$build/drainer/vigil-drainer" serve --config "$run_dir/drainer.yaml" >"$run_dir/drainer.log" 2>&1 &
drainer_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  kill -0 "$drainer_pid" 2>/dev/null || { cat "$run_dir/drainer.log" >&2; exit 1; }
  sleep 0.1
done
export VIGIL_REPORT_URL=http://127.0.0.1:$port VIGIL_TOKEN_FILE=$run_dir/token
export VIGIL_SPOOL_DIR=$run_dir/spool

# 4. One sbatch job per node ------------------------------------------------------------------
step "Submitting vigil-check to every node (scripts/demo-node-job.sh; reports in $run_dir)"
declare -A job_of
for node in "${nodes[@]}"; do
  job_of[$node]=$(sbatch --parsable --nodelist="$node" --job-name="vigil-check-$node" \
    --output="$run_dir/$node.log" "$repo/scripts/demo-node-job.sh")
  echo "  $node: job ${job_of[$node]}"
done

ids=$(IFS=,; echo "${job_of[*]}")
waited_from=$SECONDS
deadline=$((SECONDS + job_timeout))
last=""
while :; do
  active=$(squeue -h -j "$ids" -t PD,R,CG,CF -o %i 2>/dev/null | wc -l)
  ((active == 0)) && break
  if ((SECONDS >= deadline)); then
    echo "demo: $active job(s) still not finished after ${job_timeout}s:" >&2
    squeue -j "$ids" >&2
    exit 1
  fi
  [[ $active == "$last" ]] || echo "  waiting for $active of ${#nodes[@]} jobs ($((SECONDS - waited_from))s)"
  last=$active
  sleep 1
done
echo "  all ${#nodes[@]} jobs finished after $((SECONDS - waited_from))s."

# 5. Results ----------------------------------------------------------------------------------
step "Results"
reports=()
for node in "${nodes[@]}"; do
  exit_code=$(scontrol show job -o "${job_of[$node]}" | grep -o 'ExitCode=[0-9:]*' | cut -d= -f2)
  if [[ -s $run_dir/$node.json ]]; then
    reports+=("$run_dir/$node.json")
  else
    echo "demo: $node wrote no report (job ${job_of[$node]}, exit $exit_code); its log:" >&2
    tail -n 20 "$run_dir/$node.log" >&2 || true
  fi
done
((${#reports[@]} > 0)) || { echo "demo: no node produced a report" >&2; exit 1; }

if ! "$build/checks/vigil-check" report table "${reports[@]}"; then
  # Fallback straight from the JSON: node, overall status, failing checks with their message.
  echo "demo: vigil-check report table failed; raw view:" >&2
  jq -r '[.node,
          ([.checks[].status] | if index("fail") then "FAIL" elif index("error") then "ERROR"
                                elif index("warn") then "WARN" else "PASS" end),
          ([.checks[] | select(.status == "fail" or .status == "error" or .status == "warn")
            | "\(.check) \(.status): \(.message)"] | join("; ") | if . == "" then "-" else . end)]
         | @tsv' "${reports[@]}"
fi

unhealthy=$(jq -r 'select([.checks[].status] | index("fail")) | .node' "${reports[@]}" | xargs)
echo
echo "Unhealthy nodes: ${unhealthy:-none}. Full reports: $run_dir/*.json   Job logs: $run_dir/*.log"

# 6. Drain, repair, re-check, resume -----------------------------------------------------------
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds
  local limit=$1 what=$2
  shift 2
  for ((i = 0; i < limit * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  echo "demo: timed out after ${limit}s waiting for: $what" >&2
  tail -n 20 "$run_dir/drainer.log" >&2
  return 1
}
drained() { sinfo -h -n gpu-2 -o %E | grep -q '^vigil:'; }
resumed() { ! sinfo -h -n gpu-2 -t drain,drained,draining -o %N | grep -q gpu-2; }
# srun -Z steps leave slurmctld briefly unsure of the node ("idle*") until its next ping.
responding() { ! sinfo -h -n gpu-2 -o %T | grep -q '\*'; }
recheck_gpu2() {  # in place, while the node stays drained: srun -Z needs no allocation
  srun -Z --nodelist=gpu-2 --export=ALL "$repo/scripts/demo-node-job.sh" --run-id "gpu-2-recheck-$1" \
    >>"$run_dir/gpu-2.recheck.log" 2>&1 || true
}

# drain_after is 2: the row remap is a fatal finding (drain_after 1), the others need two fails.
step "vigil-drainer drains gpu-2 (sinfo -R)"
wait_for 30 "gpu-2 drained with a vigil: reason" drained
sinfo -R
step "Repairing gpu-2's simulated GPU (row remap done after a GPU reset) and re-checking it in place"
cp "$run_dir/fixtures/gpu-0/nvml.json" "$run_dir/fixtures/gpu-2/nvml.json"
for n in 1 2; do
  recheck_gpu2 "$n"
  echo "  re-check $n of gpu-2 (srun -Z): $(jq -r '[.checks[] | select(.status == "fail")] | length' "$run_dir/gpu-2.json") failing check(s); sinfo -R still shows: $(sinfo -h -n gpu-2 -o %E)"
done
step "vigil-drainer resumes gpu-2 after resume_after (2) passing reports"
wait_for 30 "gpu-2 resumed" resumed
wait_for 120 "gpu-2 responding again" responding || true
sinfo -N -p gpu -o '%N %T %E'
echo
echo "Drainer state:"
"$build/drainer/vigil-drainer" status --config "$run_dir/drainer.yaml" || true
echo "Metrics: curl -s http://127.0.0.1:$port/metrics | grep ^vigil_   Audit log: $run_dir/drainer/audit.jsonl"
