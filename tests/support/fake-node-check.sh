#!/usr/bin/env bash
# TEST/DEMO ONLY: stands in for `vigil-check` on the simulated nodes of the local Slurm cluster.
# cronjobs/vigil-check.sbatch runs "$VIGIL_CHECK run ..." (or "repair reset-gpu ...") on a node;
# pointing VIGIL_CHECK here adds the fake hardware of that node (by node name) and passes every argument on:
#   VIGIL_FAKE_CHECK     the real vigil-check binary (required)
#   VIGIL_FAKE_NVML_LIB  fake libnvidia-ml.so.1 (tests/fake_nvml)
#   VIGIL_FIXTURES_DIR   <dir>/<node>/nvml.json and <dir>/<node>/sysfs (a per-run copy, so a test
#                        can "repair" a node by copying a healthy fixture over it)
#   VIGIL_CLUSTER_DIR    the local cluster (default: from SLURM_CONF); its dev/<node> becomes
#                        VIGIL_FAKE_GPU_DEV_DIR when the cluster runs the production profile
#   VIGIL_FAKE_EXCLUDE   checks to report as skipped (default: those that need a real GPU, and
#                        host_allreduce, a slower MPI run the issue-2 cluster test keeps)
set -euo pipefail
node=${SLURMD_NODENAME:?not inside a Slurm step}
fixtures=${VIGIL_FIXTURES_DIR:?set VIGIL_FIXTURES_DIR}
export VIGIL_FAKE_NVML_FIXTURE=$fixtures/$node/nvml.json
# The production profile's /dev of this node (docs/local-cluster.md "Profiles"): the fake NVML
# and CUDA then see only the GPUs this step's device cgroup lets it open, as the real ones do.
cluster=${VIGIL_CLUSTER_DIR:-$(dirname "$(dirname "${SLURM_CONF:-/nonexistent/etc/slurm.conf}")")}
if [[ -d $cluster/dev/$node ]]; then export VIGIL_FAKE_GPU_DEV_DIR=$cluster/dev/$node; fi
# `repair reset-gpu` (the job script's reset mode) takes NVML but no sysfs or check selection;
# its nvidia-smi is VIGIL_NVIDIA_SMI (tests/support/fake-nvidia-smi.sh in the cluster tests).
if [[ ${1:-} == repair ]]; then
  exec "${VIGIL_FAKE_CHECK:?set VIGIL_FAKE_CHECK}" "$@" \
    --nvml-library "${VIGIL_FAKE_NVML_LIB:?set VIGIL_FAKE_NVML_LIB}"
fi
exec "${VIGIL_FAKE_CHECK:?set VIGIL_FAKE_CHECK}" "$@" \
  --nvml-library "${VIGIL_FAKE_NVML_LIB:?set VIGIL_FAKE_NVML_LIB}" \
  --sysfs-root "$fixtures/$node/sysfs" \
  --exclude "${VIGIL_FAKE_EXCLUDE:-gpu_gemm,gpu_hbm,gpu_pcie_bw,gpu_memtest,nccl_allreduce_nvlink,nccl_allreduce_ib,host_allreduce}"
