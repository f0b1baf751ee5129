#!/usr/bin/env bash
# Vigil demo, end to end on one machine: install what is missing, build, start a local Slurm
# cluster (gpu-[0-3]) and vigil-drainer, then run vigil-submit exactly as the CronJob does:
# one sbatch job per node runs vigil-check (fake GPUs/IB per node) and POSTs its report to the
# drainer. gpu-2 has a GPU with pending row remaps: the drainer drains it (`sinfo -R` shows the
# vigil reason; the drainer's metrics show it drained). Then gpu-2's fixture is "repaired" and
# vigil-submit re-checks it held (docs/recheck.md: a reservation, an allocation of every GPU, the
# drain back before the check runs); after resume_after (2)
# passing re-checks the drainer resumes it. Every daemon is stopped on exit, also on Ctrl-C.
#
#   scripts/demo.sh [--skip-deps] [--skip-build] [--build-dir DIR] [--keep-cluster]
#
# Exit code 0 when the demo ran as described; 1 when something broke.
# Everything of a run is kept in <build-dir>/demo/<timestamp>/ (job logs, drainer state/log).
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
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

step() { printf '\n==> %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }
nodes=(gpu-0 gpu-1 gpu-2 gpu-3)

# 1. Dependencies and build --------------------------------------------------------------------
if ((!skip_deps)); then
  step "Installing missing Debian packages (scripts/install-deps.sh)"
  "$repo/scripts/install-deps.sh"
fi
if ((!skip_build)); then
  step "Building vigil-check, vigil-submit, vigil-drainer and the fake NVML library in $build"
  mkdir -p "$build"
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log" >&2
    die "cmake configure failed (log above)"
  }
  grep -A12 'configuration summary' "$build/configure.log" | sed 's/^-- //' || true
  cmake --build "$build" -j2 --target vigil-check vigil-submit vigil-drainer fake_nvml ||
    die "build failed (compiler output above)"
fi
find_binary() {
  local f
  for f in "$@"; do [[ -x $f ]] && { echo "$f"; return 0; }; done
  die "none of $* is built (run without --skip-build)"
}
check_bin=$(find_binary "$build/checks/vigil-check")
submit_bin=$(find_binary "$build/checks/submit/vigil-submit")
drainer_bin=$(find_binary "$build/drainer/vigil-drainer")
nvml_lib=$(find_binary "$build/tests/fake_nvml/libnvidia-ml.so.1")

# 2. Local Slurm cluster and drainer, stopped on every exit path ----------------------------------
cluster=$(mktemp -d /tmp/vigil-demo.XXXXXX)
drainer_pid="" prom_pid=""
cleanup() {
  if [[ -n $prom_pid ]] && kill -0 "$prom_pid" 2>/dev/null; then
    kill "$prom_pid" 2>/dev/null || true
    wait "$prom_pid" 2>/dev/null || true
  fi
  if [[ -n $drainer_pid ]] && kill -0 "$drainer_pid" 2>/dev/null; then
    kill "$drainer_pid" 2>/dev/null || true
    wait "$drainer_pid" 2>/dev/null || true
  fi
  if ((keep_cluster)); then
    echo "demo: cluster left running in $cluster; stop it with: scripts/local-cluster.sh stop $cluster --clean"
  else
    "$repo/scripts/local-cluster.sh" stop "$cluster" --clean || true
  fi
}
trap cleanup EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

step "Starting a local Slurm cluster: munged + slurmctld + 4 slurmd (${nodes[*]}) in $cluster"
"$repo/scripts/local-cluster.sh" start "$cluster" --nodes ${#nodes[@]}
# shellcheck disable=SC1091
source "$cluster/env"
sinfo

run_dir=$build/demo/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$run_dir"
# A per-run copy of the node fixtures, so "repairing" gpu-2 never touches the repository.
cp -r "$repo/tests/fixtures/nodes" "$run_dir/fixtures"

step "Starting vigil-drainer (bearer token auth; drain_after 1, resume_after 2)"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$run_dir/token"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# A fixed port (not 0) so that `vigil-drainer status --config` finds the service.
port=$(free_port)
cat >"$run_dir/drainer.yaml" <<EOF
listen: {address: 127.0.0.1, port: $port}
auth: {token_file: $run_dir/token}
state_dir: $run_dir/drainer-state
policy:
  defaults: {drain_after: 1, resume_after: 2}
slurm: {enabled: true, conf: $SLURM_CONF, batch_window_ms: 100}
kubernetes: {enabled: false}
EOF
"$drainer_bin" serve --config "$run_dir/drainer.yaml" >"$run_dir/drainer.log" 2>&1 &
drainer_pid=$!
drainer_url=http://127.0.0.1:$port
ready=0
for _ in $(seq 100); do
  curl -sf "$drainer_url/readyz" >/dev/null && { ready=1; break; }
  kill -0 "$drainer_pid" 2>/dev/null || { cat "$run_dir/drainer.log" >&2; die "vigil-drainer exited"; }
  sleep 0.1
done
((ready)) || { cat "$run_dir/drainer.log" >&2; die "vigil-drainer did not become ready"; }
echo "  vigil-drainer on $drainer_url (log: $run_dir/drainer.log)"

# Prometheus (Debian package) scraping the drainer every second, with Vigil's alert rules, so the
# demo can show the Fleet dashboard's query. Loopback only, a free port, stopped on exit.
prom_url=""
if command -v prometheus >/dev/null; then
  prom_port=$(free_port)
  cat >"$run_dir/prometheus.yml" <<PROM
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$repo/dashboards/alerts.yaml]
scrape_configs:
  - job_name: vigil-drainer
    static_configs: [{targets: ['127.0.0.1:$port']}]
PROM
  prometheus --config.file="$run_dir/prometheus.yml" --storage.tsdb.path="$run_dir/prometheus" \
    --web.listen-address="127.0.0.1:$prom_port" >"$run_dir/prometheus.log" 2>&1 &
  prom_pid=$!
  prom_url=http://127.0.0.1:$prom_port
  echo "  prometheus on $prom_url (log: $run_dir/prometheus.log)"
fi

# 3. vigil-submit, as the CronJob runs it ------------------------------------------------------------
# TEST/DEMO ONLY wiring: the simulated nodes have no GPUs or InfiniBand, so the job script's
# vigil-check is tests/support/fake-node-check.sh (fake NVML + sysfs fixture chosen by node name).
export VIGIL_CHECK=$repo/tests/support/fake-node-check.sh VIGIL_FAKE_CHECK=$check_bin \
  VIGIL_FAKE_NVML_LIB=$nvml_lib VIGIL_FIXTURES_DIR=$run_dir/fixtures \
  VIGIL_THRESHOLDS=$repo/checks/thresholds VIGIL_STATE_DIR=$run_dir/node-state/%n \
  VIGIL_SPOOL_DIR=$run_dir/spool VIGIL_REPORT_URL=$drainer_url/v1/reports \
  VIGIL_TOKEN_FILE=$run_dir/token VIGIL_CHECK_ARGS="--format json --output $run_dir/reports/%n.json"
mkdir -p "$run_dir/reports"
submit=("$submit_bin" --job-script "$repo/cronjobs/vigil-check.sbatch" --partition vigil
  --interval-ms 100 --recheck-timeout-s 300 "--sbatch-arg=--output=$run_dir/%x-%j.out")

wait_for_vigil_jobs() {
  local deadline=$((SECONDS + job_timeout)) active
  while :; do
    active=$(squeue -h -n vigil-check -t PD,R,CG,CF -o %i | wc -l)
    ((active == 0)) && return 0
    ((SECONDS < deadline)) || { squeue >&2; die "$active vigil job(s) not finished after ${job_timeout}s"; }
    sleep 1
  done
}
drained_reason() { sinfo -h -N -p vigil -n gpu-2 -o '%T|%E'; }

step "vigil-submit: one sbatch job per node (cronjobs/vigil-check.sbatch); job logs in $run_dir"
"${submit[@]}"
wait_for_vigil_jobs
echo "  all jobs finished."

step "vigil-check results, one row per node (vigil-check report table)"
"$check_bin" report table "$run_dir"/reports/*.json || true
for _ in $(seq 50); do
  [[ $(drained_reason) == *"|vigil:"* ]] && break
  sleep 0.2
done

step "Slurm: sinfo -R (gpu-2 drained by Vigil; the reason names the check and the figures)"
sinfo -R
[[ $(drained_reason) == *"|vigil:"* ]] || { tail -20 "$run_dir/drainer.log" >&2; die "gpu-2 was not drained by vigil"; }
echo
scontrol show node gpu-2 | grep -E 'State=|Reason='

step "Drainer: node states (GET /v1/nodes) and metrics (GET /metrics)"
auth=(-H "Authorization: Bearer $(<"$run_dir/token")")
curl -fsS "${auth[@]}" "$drainer_url/v1/nodes" | jq -r '(["NODE", "STATE", "REASON"], (.nodes[] | [.node, .state, .reason])) | @tsv' 2>/dev/null ||
  curl -fsS "${auth[@]}" "$drainer_url/v1/nodes"
curl -fsS "$drainer_url/metrics" | grep -E '^vigil_(node_state|actions_total)\{.*\} [1-9]' || true
curl -fsS "$drainer_url/metrics" | grep -q 'vigil_node_state{node="gpu-2".*state="drained"} 1' ||
  die "the drainer's metrics do not show gpu-2 drained"

if [[ -n $prom_url ]]; then
  # The Fleet dashboard's "Drained by Vigil" panel (dashboards/vigil-fleet.json), All SKUs/partitions.
  query='sum(vigil_node_state{state="drained", sku=~".*", partition=~".*"})'
  step "Prometheus: the Fleet dashboard's query $query"
  value=""
  for _ in $(seq 60); do
    value=$(curl -fsS "$prom_url/api/v1/query" --data-urlencode "query=$query" 2>/dev/null |
      jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true)
    [[ $value == 1 ]] && break
    sleep 0.5
  done
  echo "  drained nodes according to Prometheus: ${value:-no data}"
  [[ $value == 1 ]] || die "Prometheus does not show the drained node (log: $run_dir/prometheus.log)"
fi

# 4. Repair gpu-2 and let the re-checks resume it --------------------------------------------------
step "A user job that wants gpu-2 waits while it is drained"
user_job=$(sbatch --parsable --nodelist=gpu-2 --job-name=user-job --output=/dev/null --wrap 'hostname')
squeue -j "$user_job"

step "\"Repairing\" gpu-2 (healthy NVML fixture over the per-run copy) and re-checking it held (reservation vigil-hold-gpu-2)"
cp "$repo/tests/fixtures/nvml/healthy_8x_h100.json" "$run_dir/fixtures/gpu-2/nvml.json"
for pass in 1 2; do
  echo "  re-check $pass of 2 (resume_after = 2); gpu-2 stays drained meanwhile: $(drained_reason)"
  "${submit[@]}" --nodes gpu-2
done
for _ in $(seq 50); do
  [[ $(drained_reason) != *drain* ]] && break
  sleep 0.2
done
[[ $(drained_reason) != *drain* ]] || { tail -20 "$run_dir/drainer.log" >&2; die "gpu-2 was not resumed"; }

# A re-check can leave slurmctld briefly unsure of the node ("idle*") until its next ping.
for _ in $(seq 600); do
  [[ $(sinfo -h -n gpu-2 -p vigil -o %T) != *'*'* ]] && break
  sleep 0.2
done
step "gpu-2 resumed: sinfo -R is empty, the user job runs now"
sinfo -R
sinfo -N -p vigil -o '%N %T %E'
for _ in $(seq 100); do
  state=$(scontrol show job -o "$user_job" | grep -o 'JobState=[A-Z]*' | cut -d= -f2)
  [[ $state == COMPLETED ]] && break
  sleep 0.2
done
echo "  user job $user_job: ${state:-?}"
echo
echo "Drainer state:"
"$drainer_bin" status --config "$run_dir/drainer.yaml" || true
echo
echo "Demo done. Drainer audit log: $run_dir/drainer-state/audit.jsonl   Job logs: $run_dir/*.out"
