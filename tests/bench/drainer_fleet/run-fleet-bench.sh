#!/usr/bin/env bash
# Runs the drainer fleet benchmark end to end: starts a private slurmctld with 10,000 simulated
# nodes (fleet-cluster.sh), runs drainer_fleet_bench against it, and always stops the daemons.
#   tests/bench/drainer_fleet/run-fleet-bench.sh BENCH_BINARY [bench args...]
# VIGIL_FLEET_BACKENDS="libslurm rest" runs the bench once per backend against the same cluster
# (rest: slurmrestd with JWT; each run prints its own ratio against per-node scontrol).
# e.g. tests/bench/drainer_fleet/run-fleet-bench.sh build/tests/bench/drainer_fleet/drainer_fleet_bench
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:?usage: run-fleet-bench.sh BENCH_BINARY [--reports N] [--enforce-goals]}
shift
dir=$(mktemp -d /tmp/vigil-fleet.XXXXXX)
trap '"$here/fleet-cluster.sh" stop "$dir" --clean' EXIT
trap 'exit 130' INT TERM
# Default: libslurm, and rest too where slurmrestd serves node updates (Slurm 23.11 and newer).
default_backends=libslurm
if command -v slurmrestd >/dev/null; then
  read -r major minor < <(slurmctld -V | sed -n 's/^slurm[^0-9]*\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  if ((10#$major > 23 || (10#$major == 23 && 10#$minor >= 11))); then default_backends="libslurm rest"; fi
fi
backends=${VIGIL_FLEET_BACKENDS:-$default_backends}
rest_flag=()
[[ $backends == *rest* ]] && rest_flag=(--rest)
"$here/fleet-cluster.sh" start "$dir" --nodes 10000 "${rest_flag[@]}"
for backend in $backends; do
  if [[ $backend == rest ]]; then
    # shellcheck disable=SC1091
    source "$dir/env"
    "$bench" --conf "$dir/slurm.conf" --backend rest --rest-url "$VIGIL_SLURMRESTD_URL" \
      --token-file "$VIGIL_SLURM_JWT_FILE" "$@"
  else
    "$bench" --conf "$dir/slurm.conf" "$@"
  fi
  # The next backend drains the same node ranges: put them back.
  SLURM_CONF=$dir/slurm.conf scontrol update nodename=sim-[00000-09999] state=undrain 2>/dev/null || true
done
