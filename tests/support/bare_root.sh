#!/usr/bin/env bash
# A bare Debian root (minbase + python3, none of the project's libraries) that the GPU bundle
# test and the package tests run programs in: bookworm (Debian 12, the default) or trixie
# (Debian 13). Made once by scripts/slurm-root.sh bootstrap and cached (a stamp file says it is
# complete), under a lock so two tests never build or replace it at the same time. Prints its
# path; exits non-zero when it cannot be made.
#   bare_root.sh REPO [SUITE]
set -euo pipefail
repo=$1
suite=${2:-bookworm}
cache=${VIGIL_ROOT_CACHE:-${XDG_CACHE_HOME:-/var/cache}/vigil}
root=$cache/gpu-bundle-root-$suite
mkdir -p "$cache"
exec 9>"$cache/gpu-bundle-root-$suite.lock"
flock 9
if [[ ! -f $root/.vigil-bare-root ]]; then
  rm -rf -- "$root"
  bash "$repo/scripts/slurm-root.sh" bootstrap --suite "$suite" "$root" python3 >&2
  touch "$root/.vigil-bare-root"
fi
echo "$root"
