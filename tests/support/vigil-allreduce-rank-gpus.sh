#!/usr/bin/env bash
# TEST ONLY: stands in for vigil-allreduce as the program mpirun starts for every rank on the
# local cluster's production profile (VIGIL_ALLREDUCE), to show which GPUs a rank may use. Before
# it runs the real benchmark (VIGIL_RANK_REAL, every argument passed on), it opens each of its
# node's GPU device nodes (DIR/dev/<node>, made by scripts/local-cluster.sh with NVIDIA's major
# 195) and appends "<node> <opened>/<total>" to VIGIL_RANK_GPU_LOG. Whether an open succeeds is
# the kernel's device cgroup of the Slurm step the rank runs in (ConstrainDevices=yes): ENXIO (no
# driver behind the node) where the step holds the GPU, EPERM where it does not, as the real
# libcuda and libnvidia-ml meet it (tests/fake_cuda/fake_cuda.c reads the same way).
# The name starts with "vigil-allreduce" so that vigil-check launches it as its own benchmark.
set -uo pipefail
node=${SLURMD_NODENAME:?not inside a Slurm step}
cluster=${VIGIL_CLUSTER_DIR:-$(dirname "$(dirname "${SLURM_CONF:?SLURM_CONF not set}")")}
opened=0 total=0
for dev in "$cluster/dev/$node"/nvidia*; do
  [[ -e $dev ]] || continue
  total=$((total + 1))
  if err=$( (exec 3<"$dev") 2>&1) || [[ $err == *"No such device or address"* ]]; then
    opened=$((opened + 1))
  fi
done
echo "$node $opened/$total" >>"${VIGIL_RANK_GPU_LOG:?set VIGIL_RANK_GPU_LOG}"
exec "${VIGIL_RANK_REAL:?set VIGIL_RANK_REAL}" "$@"
