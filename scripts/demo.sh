#!/usr/bin/env bash
# Vigil demo: install what is missing, build, start a local Slurm cluster (gpu-[0-3]), run
# `vigil-check` on every node as ordinary sbatch jobs and print a per-node table. The simulated
# node gpu-2 has a GPU with pending row remaps, so the table shows it failing and why.
# Every daemon the demo starts is stopped when it exits, also on Ctrl-C.
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
  step "Building vigil-check, vigil-allreduce and the fake NVML library in $build"
  mkdir -p "$build"
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log" >&2
    echo "demo: cmake configure failed (log above)" >&2
    exit 1
  }
  grep -A12 'configuration summary' "$build/configure.log" | sed 's/^-- //' || true
  cmake --build "$build" -j2 --target vigil-check vigil-allreduce fake_nvml || {
    echo "demo: build failed (compiler output above)" >&2
    exit 1
  }
fi

# 2. Local Slurm cluster, stopped on every exit path ------------------------------------------
cluster=$(mktemp -d /tmp/vigil-demo.XXXXXX)
stop_cluster() {
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

# 3. One sbatch job per node ------------------------------------------------------------------
run_dir=$build/demo/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$run_dir"
export VIGIL_RUN_DIR=$run_dir VIGIL_SOURCE_DIR=$repo VIGIL_BUILD_DIR=$build
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

# 4. Results ----------------------------------------------------------------------------------
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
echo "Unhealthy nodes: ${unhealthy:-none}. A later Vigil step drains them in Slurm (vigil-drainer)."
echo "Full reports: $run_dir/*.json   Job logs: $run_dir/*.log"
