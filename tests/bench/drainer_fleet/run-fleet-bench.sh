#!/usr/bin/env bash
# Runs the drainer fleet benchmark end to end: starts a private slurmctld with 10,000 simulated
# nodes (fleet-cluster.sh), runs drainer_fleet_bench against it, and always stops the daemons.
#   tests/bench/drainer_fleet/run-fleet-bench.sh BENCH_BINARY [bench args...]
# e.g. tests/bench/drainer_fleet/run-fleet-bench.sh build/tests/bench/drainer_fleet/drainer_fleet_bench
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=${1:?usage: run-fleet-bench.sh BENCH_BINARY [--reports N] [--enforce-goals]}
shift
dir=$(mktemp -d /tmp/vigil-fleet.XXXXXX)
trap '"$here/fleet-cluster.sh" stop "$dir" --clean' EXIT
trap 'exit 130' INT TERM
"$here/fleet-cluster.sh" start "$dir" --nodes 10000
"$bench" --conf "$dir/slurm.conf" "$@"
