#!/usr/bin/env bash
# Runs the drainer soak end to end: a private slurmctld with 10,000 simulated nodes
# (../drainer_fleet/fleet-cluster.sh), drainer_soak driving the real vigil-drainer against it,
# and always stops every daemon and removes the scratch dirs.
#   tests/bench/drainer_soak/run-soak.sh SOAK_BINARY VIGIL_DRAINER [--duration-s S] [--cycle-s S] ...
# VIGIL_SOAK_KEEP=1 keeps the work dir (journal, audit log, drainer logs) for a look afterwards.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
soak=${1:?usage: run-soak.sh SOAK_BINARY VIGIL_DRAINER [options]}
drainer=${2:?usage: run-soak.sh SOAK_BINARY VIGIL_DRAINER [options]}
shift 2
fleet=$here/../drainer_fleet/fleet-cluster.sh
cluster=$(mktemp -d /tmp/vigil-soak-ctld.XXXXXX)
work=$(mktemp -d /tmp/vigil-soak.XXXXXX)
cleanup() {
  # The drainer the driver started, should the driver have died first (killed by a timeout).
  local pid
  pid=$(cat "$work/drainer.pid" 2>/dev/null || true)
  if [[ -n $pid ]] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$work/drainer.yaml"; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  "$fleet" stop "$cluster" --clean
  if [[ ${VIGIL_SOAK_KEEP:-0} == 1 ]]; then echo "run-soak.sh: kept $work" >&2; else rm -rf -- "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$fleet" start "$cluster" --nodes "${VIGIL_SOAK_NODES:-10000}"
"$soak" --drainer "$drainer" --cluster-dir "$cluster" --fleet-script "$fleet" --work "$work" \
  --nodes "${VIGIL_SOAK_NODES:-10000}" "$@"
