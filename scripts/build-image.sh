#!/usr/bin/env bash
# Builds the Vigil image without a container engine or a base image from a registry
# (docs/slurm-compat.md, "The image"): the runtime root is a Debian root made with debootstrap
# from the mirror the host's apt uses, Vigil is built (CPU-only, Release) and installed into it,
# the result is packed as an OCI image with umoci, and the image is checked by unpacking it again
# and running `vigil-check --help`, `vigil-drainer --help`, `vigil-submit --help` in a chroot of
# its root (in private mount + PID namespaces). The same layout as cronjobs/Dockerfile.
#
#   build-image.sh [--suite bookworm] [--out DIR]     # default DIR: build-image/ (ignored by git)
#
# bookworm (Slurm 22.05) is built from this machine's toolchain. State kept between runs: the
# runtime root under ${VIGIL_ROOT_CACHE:-${XDG_CACHE_HOME:-/var/cache}/vigil}/image-root-<suite>
# (rebuilt when its package list changes) and the build directory build-image/<suite>/build.
# Needs root (debootstrap, chroot, unshare) and umoci.
set -euo pipefail

readonly PROG=build-image.sh
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly REPO
readonly CACHE=${VIGIL_ROOT_CACHE:-${XDG_CACHE_HOME:-/var/cache}/vigil}
# What the programs need at run time: the Slurm client and munge (sbatch, srun -Z), the shared
# libraries they link, OpenMPI for the fabric jobs (as cronjobs/Dockerfile installs them).
readonly RUNTIME_BOOKWORM=(slurm-client libslurm38 munge libyaml-cpp0.7 libcpp-httplib0.11 libmicrohttpd12
  libprometheus-cpp-core1.0 libssl3 openmpi-bin libopenmpi3 ca-certificates curl bash)

log() { echo "$PROG: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

mirror() { bash "$REPO/scripts/slurm-root.sh" mirror; }

# Runs "$@" chrooted into ROOT with /proc and /dev, in new mount + PID namespaces.
in_chroot() {
  local root=$1
  shift
  unshare --mount --pid --fork --propagation private -- bash -euo pipefail -c '
    root=$1
    shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 "$@"
  ' in-chroot "$root" "$@"
}

runtime_root() {
  local suite=$1 root stamp packages
  case $suite in
    bookworm) packages=("${RUNTIME_BOOKWORM[@]}") ;;
    *) die "--suite $suite: only bookworm is built by this script (see docs/slurm-compat.md)" ;;
  esac
  root=$CACHE/image-root-$suite
  stamp=$(printf '%s\n' "$suite" "$(mirror)" "${packages[@]}" | sha256sum | cut -d' ' -f1)
  if [[ -f $root/.vigil-stamp && $(cat "$root/.vigil-stamp") == "$stamp" ]]; then
    log "reusing runtime root $root"
  else
    local started=$SECONDS
    log "debootstrap $suite runtime root ($(mirror)), ${#packages[@]} packages"
    rm -rf -- "$root" "$root.new"
    mkdir -p "$CACHE"
    debootstrap --variant=minbase --include="$(
      IFS=,
      echo "${packages[*]}"
    )" "$suite" "$root.new" "$(mirror)" >"$CACHE/image-debootstrap-$suite.log" 2>&1 ||
      die "debootstrap failed; see $CACHE/image-debootstrap-$suite.log"
    rm -rf "$root.new"/var/cache/apt/archives/*.deb "$root.new"/var/lib/apt/lists/*
    echo "$stamp" >"$root.new/.vigil-stamp"
    mv -- "$root.new" "$root"
    log "runtime root built in $((SECONDS - started)) s"
  fi
  echo "$root"
}

main() {
  local suite=bookworm out=$REPO/build-image
  while [[ $# -gt 0 ]]; do
    case $1 in
      --suite) suite=${2:?}; shift 2 ;;
      --out) out=${2:?}; shift 2 ;;
      *) die "unknown argument $1 (usage: $PROG [--suite bookworm] [--out DIR])" ;;
    esac
  done
  [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, unshare)"
  for tool in debootstrap umoci unshare chroot; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install $tool)"
  done
  local host_suite
  host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [[ $suite == "$host_suite" ]] || die "--suite $suite: this script builds with the host's toolchain ($host_suite)"
  local started=$SECONDS root work build stage
  root=$(runtime_root "$suite")
  work=$out/$suite
  build=$work/build
  stage=$work/rootfs
  mkdir -p "$work"

  # CPU-only Release build: an image for GPU nodes starts from a CUDA runtime instead
  # (cronjobs/Dockerfile, docs/deploy.md).
  cmake -S "$REPO" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVIGIL_WITH_CUDA=OFF \
    -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF ${VIGIL_IMAGE_CMAKE_ARGS:-} >"$work/cmake.log"
  cmake --build "$build" -j"${VIGIL_JOBS:-2}" --target vigil-check vigil-drainer vigil-submit \
    vigil-allreduce
  rm -rf -- "$stage"
  cp -a "$root" "$stage"
  rm -f "$stage/.vigil-stamp"
  cmake --install "$build" --prefix "$stage/usr/local" >/dev/null
  install -D -m 0644 "$REPO/cronjobs/vigil-check.sbatch" "$stage/etc/vigil/job/vigil-check.sbatch"
  mkdir -p "$stage/etc/vigil/thresholds"
  cp -a "$REPO/checks/thresholds/." "$stage/etc/vigil/thresholds/"

  # OCI image: an empty image, unpacked, its rootfs replaced by ours, repacked as one layer.
  local layout=$work/oci tag=vigil-$suite bundle=$work/bundle
  rm -rf -- "$layout" "$bundle"
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci unpack --image "$layout:$tag" "$bundle" >/dev/null
  cp -a "$stage/." "$bundle/rootfs/"
  umoci repack --image "$layout:$tag" "$bundle"
  umoci config --image "$layout:$tag" --config.cmd vigil-submit --config.cmd --help \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  rm -rf -- "$bundle"

  # The check: what the image holds, not the staging tree, runs.
  local check=$work/check
  rm -rf -- "$check"
  umoci unpack --image "$layout:$tag" "$check" >/dev/null
  local prog
  for prog in vigil-check vigil-drainer vigil-submit; do
    in_chroot "$check/rootfs" "$prog" --help >"$work/$prog.help" 2>&1 ||
      die "$prog --help failed in the image: $(head -c 400 "$work/$prog.help")"
    log "$prog --help in the image: ok ($(head -n 1 "$work/$prog.help"))"
  done
  if in_chroot "$check/rootfs" sh -c 'ldd /usr/local/bin/vigil-* | grep "not found"'; then
    die "a shared library is missing in the image (above)"
  fi
  rm -rf -- "$check"
  log "image $layout:$tag ($(du -sh "$layout" | cut -f1)) built and checked in $((SECONDS - started)) s"
}

main "$@"
