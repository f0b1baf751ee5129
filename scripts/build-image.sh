#!/usr/bin/env bash
# Builds the Vigil image without a container engine or a base image from a registry
# (docs/slurm-compat.md, "The image"): the runtime root is a minbase Debian root made by
# `slurm-root.sh bootstrap` (mmdebstrap, else debootstrap) from the mirror the host's apt uses,
# Vigil is built (CPU-only, Release) and packed as the project's Debian packages (cpack,
# cmake/VigilPackaging.cmake), the packages are installed into the root with apt-get (which
# pulls exactly their Depends), the result is packed as an OCI image with umoci, and the image
# is checked by unpacking it again and running `vigil-check --help`, `vigil-drainer --help`,
# `vigil-submit --help` in a chroot of its root (in private mount + PID namespaces), with ldd
# finding every library. The same layout as cronjobs/Dockerfile. The packages stay in
# <DIR>/<suite>/debs: for trixie they are the Debian 13 build (tests/packaging/deb_test.sh).
#
#   build-image.sh [--suite bookworm|trixie] [--out DIR]   # default DIR: build-image/ (ignored by git)
#
# bookworm: Slurm 22.05, trixie: Slurm 24.11. The host's own suite is built with the host's
# toolchain; another suite is built inside an overlay of scripts/slurm-root.sh's root of that
# suite (its compiler and libslurm-dev) with BUILD_EXTRA added in the overlay's upper layer:
# the Slurm root itself is never written. State kept between runs, under
# ${VIGIL_ROOT_CACHE:-${XDG_CACHE_HOME:-/var/cache}/vigil}: the runtime root image-root-<suite>
# (rebuilt when its package list changes), the overlay's upper layer image-build-<suite> (rebuilt
# when the Slurm root or BUILD_EXTRA changes; holds its own ccache), and the build directory
# <DIR>/<suite>/build. Needs root (mmdebstrap or debootstrap, chroot, unshare, overlayfs) and umoci.
set -euo pipefail

readonly PROG=build-image.sh
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly REPO
readonly CACHE=${VIGIL_ROOT_CACHE:-${XDG_CACHE_HOME:-/var/cache}/vigil}
# What the programs need at run time, per suite: the Slurm client and munge (sbatch, srun -Z),
# the shared libraries they link, OpenMPI for the fabric jobs (as cronjobs/Dockerfile installs
# them). trixie renamed the libraries (64-bit time_t: *t64; new sonames) and ships OpenMPI 5.
declare -rA RUNTIME=(
  [bookworm]="slurm-client libslurm38 munge libyaml-cpp0.7 libcpp-httplib0.11 libmicrohttpd12
    libprometheus-cpp-core1.0 libssl3 openmpi-bin libopenmpi3 ca-certificates curl bash"
  [trixie]="slurm-client libslurm42t64 munge libyaml-cpp0.8 libcpp-httplib0.18 libmicrohttpd12t64
    libprometheus-cpp-core1.0 libssl3t64 openmpi-bin libopenmpi40 ca-certificates curl bash"
)
# What a build inside the Slurm root needs on top of its packages (it builds only the Slurm
# parts: vigil-check and vigil-allreduce also need MPI). The -dev names are the same in every suite.
# cpack's DEB generator computes Depends with dpkg-shlibdeps (dpkg-dev) and finds ELF files with
# `file`.
readonly BUILD_EXTRA=(libopenmpi-dev dpkg-dev file)
readonly PATH_IN_ROOT=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { echo "$PROG: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

slurm_root() { bash "$REPO/scripts/slurm-root.sh" "$@"; }

# Runs CMD chrooted into ROOT with /proc and /dev, in new mount + PID namespaces:
#   in_chroot ROOT [--overlay LOWER UPPER WORK] [--bind SRC DST]... -- CMD...
# --overlay mounts LOWER with UPPER on top at ROOT first (LOWER is never written); --bind
# bind-mounts SRC at DST inside the root.
in_chroot() {
  local root=$1
  shift
  local overlay="" binds=""
  while [[ $1 != -- ]]; do
    case $1 in
      --overlay)
        overlay="mount -t overlay overlay -o lowerdir=$(printf %q "$2"),upperdir=$(printf %q "$3"),workdir=$(printf %q "$4") $(printf %q "$root")"
        shift 4
        ;;
      --bind)
        binds+="mkdir -p $(printf %q "$root$3") && mount --bind $(printf %q "$2") $(printf %q "$root$3")"$'\n'
        shift 3
        ;;
      *) die "in_chroot: unknown option $1" ;;
    esac
  done
  shift
  # The overlay first, the bind mounts on the merged tree; /proc and /dev last.
  local setup_script=$overlay$'\n'$binds
  unshare --mount --pid --fork --propagation private -- bash -euo pipefail -c '
    root=$1 setup=$2
    shift 2
    eval "$setup"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot "$root" /usr/bin/env -i PATH='"$PATH_IN_ROOT"' HOME=/root LANG=C.UTF-8 "$@"
  ' in-chroot "$root" "$setup_script" "$@"
}

# The runtime root of SUITE (made once, reused while its stamp matches); prints its path.
runtime_root() {
  local suite=$1 root stamp
  local -a packages
  IFS=$' \n' read -r -d '' -a packages <<<"${RUNTIME[$suite]}" || true
  root=$CACHE/image-root-$suite
  stamp=$(printf '%s\n' "$suite" "$(slurm_root mirror)" "${packages[@]}" | sha256sum | cut -d' ' -f1)
  if [[ -f $root/.vigil-stamp && $(cat "$root/.vigil-stamp") == "$stamp" ]]; then
    log "reusing runtime root $root"
  else
    local started=$SECONDS
    log "$suite runtime root, ${#packages[@]} packages"
    rm -rf -- "$root" "$root.new"
    slurm_root bootstrap --suite "$suite" "$root.new" "${packages[@]}"
    rm -rf "$root.new"/var/cache/apt/archives/*.deb "$root.new"/var/lib/apt/lists/*
    rm -f "$root.new/usr/sbin/policy-rc.d"
    echo "$stamp" >"$root.new/.vigil-stamp"
    mv -- "$root.new" "$root"
    log "runtime root built in $((SECONDS - started)) s"
  fi
  echo "$root"
}

# The overlay that builds SUITE: scripts/slurm-root.sh's root of SUITE (made or reused by its
# `ensure`) below, BUILD_EXTRA installed into the upper layer. Prints "LOWER UPPER WORK MERGED".
build_overlay() {
  local suite=$1 lower dir stamp
  slurm_root ensure --suite "$suite" >&2
  lower=$(slurm_root path --suite "$suite")
  dir=$CACHE/image-build-$suite
  # The upper layer holds a copy of dpkg's status: it must be remade whenever the lower changes.
  stamp=$(cat "$lower/.vigil-stamp" "$lower/.vigil-packages" <(printf '%s\n' "${BUILD_EXTRA[@]}") |
    sha256sum | cut -d' ' -f1)
  if [[ ! -f $dir/.vigil-stamp || $(cat "$dir/.vigil-stamp") != "$stamp" ]]; then
    local started=$SECONDS
    log "$suite build overlay on $lower: installing ${BUILD_EXTRA[*]}"
    rm -rf -- "$dir"
    mkdir -p "$dir/upper" "$dir/work" "$dir/merged"
    in_chroot "$dir/merged" --overlay "$lower" "$dir/upper" "$dir/work" -- \
      env DEBIAN_FRONTEND=noninteractive bash -c 'apt-get update -qq &&
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null && apt-get clean' \
      apt "${BUILD_EXTRA[@]}" >"$CACHE/image-build-$suite.log" 2>&1 ||
      die "apt-get install in the $suite build overlay failed; see $CACHE/image-build-$suite.log"
    echo "$stamp" >"$dir/.vigil-stamp"
    log "$suite build overlay ready in $((SECONDS - started)) s"
  fi
  echo "$lower $dir/upper $dir/work $dir/merged"
}

# CPU-only Release build of SUITE packed as .debs under WORK/debs: on the host for the host's
# suite, else in the suite's build overlay (repository at /vigil, WORK at /out). An image for
# GPU nodes starts from a CUDA runtime instead (cronjobs/Dockerfile, docs/deploy.md).
build_vigil() {
  local suite=$1 work=$2 host_suite
  local -a env_cmd
  host_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  if [[ $suite == "$host_suite" ]]; then
    env_cmd=(env SRC="$REPO" OUT="$work")
  else
    local overlay lower upper wd merged
    overlay=$(build_overlay "$suite")  # a failure here stops the script (not so in "< <(...)")
    read -r lower upper wd merged <<<"$overlay"
    env_cmd=(in_chroot "$merged" --overlay "$lower" "$upper" "$wd" --bind "$REPO" /vigil
      --bind "$work" /out -- env SRC=/vigil OUT=/out CCACHE_DIR=/var/cache/vigil-image-ccache)
  fi
  "${env_cmd[@]}" JOBS="${VIGIL_JOBS:-2}" CMAKE_ARGS="${VIGIL_IMAGE_CMAKE_ARGS:-}" bash -euo pipefail -c '
    launcher=""
    if command -v ccache >/dev/null; then launcher=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
    cmake -S "$SRC" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release -DVIGIL_WITH_CUDA=OFF \
      -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF $launcher $CMAKE_ARGS >"$OUT/cmake.log"
    grep -E "libslurm|MPI " "$OUT/cmake.log" | sed "s/^-- */build-image.sh: /" >&2
    cmake --build "$OUT/build" -j"$JOBS" --target vigil-check vigil-drainer vigil-submit vigil-allreduce
    rm -rf -- "$OUT/debs"
    mkdir -p "$OUT/debs"
    (cd "$OUT/debs" && cpack -G DEB --config "$OUT/build/CPackConfig.cmake" >"$OUT/cpack.log" 2>&1) ||
      { cat "$OUT/cpack.log" >&2; exit 1; }
    rm -rf -- "$OUT/debs/_CPack_Packages"
  '
}

main() {
  local suite=bookworm out=$REPO/build-image
  while [[ $# -gt 0 ]]; do
    case $1 in
      --suite) suite=${2:?}; shift 2 ;;
      --out) out=${2:?}; shift 2 ;;
      *) die "unknown argument $1 (usage: $PROG [--suite bookworm|trixie] [--out DIR])" ;;
    esac
  done
  out=$(realpath -m -- "$out")
  [[ -v RUNTIME[$suite] ]] || die "--suite $suite: not one of ${!RUNTIME[*]} (see docs/slurm-compat.md)"
  [[ $(id -u) -eq 0 ]] || die "needs root (mmdebstrap or debootstrap, chroot, unshare)"
  for tool in umoci unshare chroot; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install $tool)"
  done
  local started=$SECONDS root work stage t0
  root=$(runtime_root "$suite")
  work=$out/$suite
  stage=$work/rootfs
  mkdir -p "$work"
  t0=$SECONDS
  build_vigil "$suite" "$work"
  log "$suite build took $((SECONDS - t0)) s"
  rm -rf -- "$stage"
  cp -a "$root" "$stage"
  rm -f "$stage/.vigil-stamp"
  # The image is the packages: apt-get installs them with their Depends from the suite's mirror.
  local debs=()
  mapfile -t debs < <(cd "$work/debs" && ls vigil-*.deb)
  [[ ${#debs[@]} -eq 4 ]] || die "expected 4 packages in $work/debs, found: ${debs[*]}"
  log "installing ${debs[*]}"
  cp /etc/resolv.conf "$stage/etc/resolv.conf"
  in_chroot "$stage" --bind "$work/debs" /debs -- env DEBIAN_FRONTEND=noninteractive bash -c '
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${@/#//debs/}" >/dev/null &&
      apt-get clean && rm -rf /var/lib/apt/lists/*' apt "${debs[@]}" >"$work/apt.log" 2>&1 ||
    die "apt-get install of the packages failed; see $work/apt.log"
  : >"$stage/etc/resolv.conf"
  rmdir "$stage/debs" 2>/dev/null || true
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
    in_chroot "$check/rootfs" -- "$prog" --help >"$work/$prog.help" 2>&1 ||
      die "$prog --help failed in the image: $(head -c 400 "$work/$prog.help")"
    log "$prog --help in the image: ok ($(head -n 1 "$work/$prog.help"))"
  done
  in_chroot "$check/rootfs" -- dpkg-query -W -f='${Package} ${Version} ${Status}\n' \
    vigil-check vigil-allreduce vigil-drainer vigil-submit >"$work/packages.txt" ||
    die "the image lacks a Vigil package: $(cat "$work/packages.txt")"
  log "packages in the image: $(cut -d' ' -f1,2 "$work/packages.txt" | tr '\n' ' ')"
  if in_chroot "$check/rootfs" -- sh -c 'ldd /usr/bin/vigil-* | grep "not found"'; then
    die "a shared library is missing in the image (above)"
  fi
  rm -rf -- "$check"
  log "image $layout:$tag ($(du -sh "$layout" | cut -f1)) built and checked in $((SECONDS - started)) s"
}

main "$@"
