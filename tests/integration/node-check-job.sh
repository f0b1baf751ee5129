#!/usr/bin/env bash
#SBATCH --job-name=vigil-node-check
#SBATCH --no-requeue
#SBATCH --ntasks=2
#SBATCH --time=10
# TEST ONLY: batch script of the issue-2 integration test (vigil_check_cluster_test). Runs
# `vigil-check run` on the node it lands on and writes <VIGIL_RUN_DIR>/<node>.json. The fake
# hardware of the simulated node (NVML fixture, sysfs tree, chosen by node name) is wired by the
# one wrapper tests/support/fake-node-check.sh, which the demo uses too. host_allreduce runs here
# with real MPI (--ntasks=2 gives mpirun two slots); only the checks that need a real GPU are
# excluded. Production nodes use cronjobs/vigil-check.sbatch.
#
# sbatch copies this script into the spool directory, so it finds the tree via the environment:
#   VIGIL_RUN_DIR     where reports and per-node state go (required)
#   VIGIL_SOURCE_DIR  repository root (default: $SLURM_SUBMIT_DIR)
#   VIGIL_BUILD_DIR   build directory (default: $VIGIL_SOURCE_DIR/build)
# Extra arguments go to `vigil-check run`. Exit code: vigil-check's (0 pass, 1 fail, 2 warn, 3 error).
set -euo pipefail

node=${SLURMD_NODENAME:?run this script with sbatch (SLURMD_NODENAME is not set)}
run_dir=${VIGIL_RUN_DIR:?set VIGIL_RUN_DIR to the directory for reports}
src=${VIGIL_SOURCE_DIR:-${SLURM_SUBMIT_DIR:-$PWD}}
build=${VIGIL_BUILD_DIR:-$src/build}
export VIGIL_FAKE_CHECK=$build/checks/vigil-check
export VIGIL_FAKE_NVML_LIB=$build/tests/fake_nvml/libnvidia-ml.so.1
export VIGIL_FIXTURES_DIR=${VIGIL_FIXTURES_DIR:-$src/tests/fixtures/nodes}
export VIGIL_FAKE_EXCLUDE=gpu_gemm,gpu_hbm,gpu_pcie_bw,gpu_memtest,nccl_allreduce_nvlink,nccl_allreduce_ib
# OpenMPI refuses to run as root unless told it is deliberate (tests run as root in CI).
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p "$run_dir/state/$node"
exec "$src/tests/support/fake-node-check.sh" run --format json --output "$run_dir/$node.json" \
  --node "$node" --thresholds "$src/checks/thresholds" --state-dir "$run_dir/state/$node" \
  --allreduce-binary "$build/nccl-bench/vigil-allreduce" "$@"
