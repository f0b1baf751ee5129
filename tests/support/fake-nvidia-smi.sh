#!/usr/bin/env bash
# TEST ONLY: stands in for nvidia-smi on the simulated nodes of the local Slurm cluster, for
# `vigil-check repair reset-gpu` (docs/repair.md "GPU reset"). It answers what the reset asks:
#   --query-gpu=uuid,persistence_mode --format=csv,noheader   nothing (no GPU in persistence mode)
#   -pm 0|1 -i UUID                                             "All done."
#   --gpu-reset                                                 the "reset": a node named in
#       $VIGIL_FIXTURES_DIR/cleared-by-reset gets the healthy gpu-0 fixture (a pending row remap
#       is applied by a reset); any other keeps its fault. Each reset is logged in
#       $VIGIL_FIXTURES_DIR/resets.log as "<node> <epoch>".
set -euo pipefail
node=${SLURMD_NODENAME:?not inside a Slurm step}
fixtures=${VIGIL_FIXTURES_DIR:?set VIGIL_FIXTURES_DIR}
case ${1:-} in
  --query-gpu=uuid,persistence_mode) ;;
  -pm) echo "All done." ;;
  --gpu-reset)
    echo "$node $(date +%s)" >>"$fixtures/resets.log"
    if grep -qx "$node" "$fixtures/cleared-by-reset" 2>/dev/null; then
      cp "$fixtures/gpu-0/nvml.json" "$fixtures/$node/nvml.json"
    fi
    echo "GPU 00000000:18:00.0 was successfully reset."
    ;;
  *)
    echo "fake nvidia-smi: unsupported arguments: $*" >&2
    exit 2
    ;;
esac
