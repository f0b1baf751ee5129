#!/usr/bin/env bash
#SBATCH --job-name=vigil-demo-check
#SBATCH --no-requeue
#SBATCH --ntasks=2
#SBATCH --time=10
# Per-node batch script of the local-cluster demo and integration tests: runs `vigil-check run`
# on the node it lands on and writes <VIGIL_RUN_DIR>/<node>.json.
#
# TEST/DEMO ONLY: the simulated nodes gpu-[0-3] have no GPUs and no InfiniBand, so this script
# wires fake hardware by node name: the fake NVML library reads
# tests/fixtures/nodes/$SLURMD_NODENAME/nvml.json and the IB checks read the sysfs tree
# tests/fixtures/nodes/$SLURMD_NODENAME/sysfs. The checks that need a real GPU (GEMM, HBM, H2D,
# memtest, NCCL) are excluded; host_allreduce runs instead, with real MPI (--ntasks=2 gives
# mpirun two slots on the node). Production nodes use cronjobs/vigil-check.sbatch.
#
# sbatch copies this script into the spool directory, so it finds the tree via the environment
# (sbatch exports the submitter's environment by default):
#   VIGIL_RUN_DIR     where reports, per-node state and logs go (required)
#   VIGIL_SOURCE_DIR  repository root (default: the submit directory, $SLURM_SUBMIT_DIR)
#   VIGIL_BUILD_DIR   build directory (default: $VIGIL_SOURCE_DIR/build)
#   VIGIL_CHECK       vigil-check binary (default: $VIGIL_BUILD_DIR/checks/vigil-check)
#   VIGIL_NVML_LIBRARY fake NVML (default: $VIGIL_BUILD_DIR/tests/fake_nvml/libnvidia-ml.so.1)
#   VIGIL_FIXTURES_DIR node fixtures (default: $VIGIL_SOURCE_DIR/tests/fixtures/nodes)
#   VIGIL_ALLREDUCE   vigil-allreduce binary (default: $VIGIL_BUILD_DIR/nccl-bench/vigil-allreduce)
# Extra arguments are passed on to `vigil-check run`. Exit code: vigil-check's (0 pass, 1 fail,
# 2 warn, 3 error), so `sacct`/`scontrol show job` show the verdict too.
set -euo pipefail

node=${SLURMD_NODENAME:?run this script with sbatch (SLURMD_NODENAME is not set)}
run_dir=${VIGIL_RUN_DIR:?set VIGIL_RUN_DIR to the directory for reports}
src=${VIGIL_SOURCE_DIR:-${SLURM_SUBMIT_DIR:-$PWD}}
build=${VIGIL_BUILD_DIR:-$src/build}
check=${VIGIL_CHECK:-$build/checks/vigil-check}
nvml=${VIGIL_NVML_LIBRARY:-$build/tests/fake_nvml/libnvidia-ml.so.1}
fixtures=${VIGIL_FIXTURES_DIR:-$src/tests/fixtures/nodes}
allreduce=${VIGIL_ALLREDUCE:-$build/nccl-bench/vigil-allreduce}

for f in "$check" "$nvml" "$fixtures/$node/nvml.json"; do
  [[ -e $f ]] || {
    echo "demo-node-job: $f is missing on $node (build first: cmake --build $build)" >&2
    exit 3
  }
done
[[ -d $fixtures/$node/sysfs ]] || {
  echo "demo-node-job: no sysfs fixture $fixtures/$node/sysfs for $node" >&2
  exit 3
}

# The demo runs as root; OpenMPI refuses that unless told it is deliberate.
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export VIGIL_FAKE_NVML_FIXTURE=$fixtures/$node/nvml.json
mkdir -p "$run_dir/state/$node"

# Need a real GPU; simulated nodes have none.
gpu_only=gpu_gemm,gpu_hbm,gpu_pcie_bw,gpu_memtest,nccl_allreduce_nvlink,nccl_allreduce_ib
args=(run --format json --output "$run_dir/$node.json"
  --node "$node"
  --thresholds "$src/checks/thresholds"
  --nvml-library "$nvml"
  --sysfs-root "$fixtures/$node/sysfs"
  --state-dir "$run_dir/state/$node"
  --exclude "$gpu_only")
[[ -x $allreduce ]] && args+=(--allreduce-binary "$allreduce")

echo "demo-node-job: $node job ${SLURM_JOB_ID:-?}: $check ${args[*]} $*" >&2
exec "$check" "${args[@]}" "$@"
