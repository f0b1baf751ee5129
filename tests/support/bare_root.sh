#!/usr/bin/env bash
# The bare Debian bookworm root (minbase + python3, none of the project's libraries) that the GPU
# bundle test and the package test run programs in: made once by scripts/slurm-root.sh bootstrap
# and cached (a stamp file says it is complete), under a lock so two tests never build or replace
# it at the same time. Prints its path; exits non-zero when it cannot be made.
#   bare_root.sh REPO
set -euo pipefail
repo=$1
cache=${VIGIL_ROOT_CACHE:-${XDG_CACHE_HOME:-/var/cache}/vigil}
root=$cache/gpu-bundle-root-bookworm
mkdir -p "$cache"
exec 9>"$cache/gpu-bundle-root-bookworm.lock"
flock 9
if [[ ! -f $root/.vigil-bare-root ]]; then
  rm -rf -- "$root"
  bash "$repo/scripts/slurm-root.sh" bootstrap --suite bookworm "$root" python3 >&2
  touch "$root/.vigil-bare-root"
fi
echo "$root"
