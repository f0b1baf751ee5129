#!/usr/bin/env bash
# Builds and runs the benchmarks (ctest label "bench"). Each prints its figure as a ratio
# against a baseline measured in the same run, because shared machines are noisy:
#   allreduce_harness_overhead  vigil-allreduce host harness vs a minimal MPI_Allreduce loop
#   drainer_ingest              reports/s over HTTP with auth + fsync vs a bare handler
#   drainer_slow_clients_bench  report POST p99 while 1,200 connections sit idle or trickle,
#                               as a ratio to the same POSTs without them (goal p99 <= 1 s)
#   drainer_fleet               1,000 drains through libslurm vs one scontrol call per node
#   drainer_soak(_smoke)        10 min (smoke: 60 s) of reports for 10,000 simulated nodes with
#                               kill -9 of the drainer and slurmctld restarts: lost reports,
#                               repeated Slurm actions, RSS end/after warm-up, journal bound
#   detect_fleet_sim            fail-slow detection quality on a simulated 1,000-node H100 fleet
#                               (docs/detection.md); judging time as a ratio of parsing time
#   fabric_sim                  fabric localization of slow nodes and leaf switches (docs/fabric.md)
#   hook_bench                  `vigil-check hook` on 8 simulated GPUs with real-NVML call costs
#                               vs the same checks one child per check (docs/hooks.md)
#   repair_bench                time to repair on the local cluster: drain -> reboot -> re-check
#                               -> resume, Vigil's overhead vs the simulated reboot and the
#                               120 s goal (docs/repair.md)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${VIGIL_BUILD_DIR:-build}
bash scripts/install-deps.sh
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${VIGIL_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"${VIGIL_JOBS:-2}"
ctest --test-dir "$BUILD_DIR" -L bench --output-on-failure -V "$@"
