#!/usr/bin/env bash
# A Debian root with another Slurm release, for building and testing Vigil's Slurm code against
# it (docs/slurm-compat.md). A build-environment provider, like scripts/install-deps.sh: it is
# the one script that keeps state outside the repository (the root, under the cache dir below).
#
#   slurm-root.sh ensure [--suite S]            # create the root, or reuse it when its stamp matches
#   slurm-root.sh run    [--suite S] -- CMD...  # run CMD inside the root (repo at /vigil)
#   slurm-root.sh test   [--suite S]            # lean build of the Slurm parts + their tests inside
#   slurm-root.sh path   [--suite S]            # print where the root lives
#   slurm-root.sh remove [--suite S]
#   slurm-root.sh mirror                        # the Debian mirror the host's apt uses
#
# S defaults to trixie (Slurm 24.11). The root is made with debootstrap from the Debian mirror
# this machine's apt already uses (read from /etc/apt/sources.list*), then the packages below are
# installed with apt inside it. Stamp files make later runs reuse it: one keyed by suite and
# mirror (else the root is rebuilt), one by the package list (else apt installs what is new,
# inside the existing root). Location:
#   VIGIL_ROOT_CACHE (default ${XDG_CACHE_HOME:-/var/cache}/vigil)/slurm-root-S
# Everything inside runs in fresh mount and PID namespaces (unshare): /proc, /dev and the repo
# bind mounts vanish with the namespace, and every process started inside (munged, slurmctld,
# slurmd, slurmrestd) is killed when the command ends. The host's /etc is never written.
# Needs root (debootstrap, chroot, unshare).
set -euo pipefail

readonly PROG=slurm-root.sh
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly REPO
readonly CACHE=${VIGIL_ROOT_CACHE:-${XDG_CACHE_HOME:-/var/cache}/vigil}
# The Slurm build parts need these; the root's own build directory and ccache live inside it.
readonly PACKAGES=(
  ca-certificates cmake g++ make pkg-config ccache python3 procps iproute2 jq
  slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin libslurm-dev munge libmunge-dev
  nlohmann-json3-dev libcpp-httplib-dev libmicrohttpd-dev libssl-dev zlib1g-dev libyaml-cpp-dev libcli11-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
)
# Bump when the way the root is made changes (not the package list: that is in the stamp).
readonly ROOT_FORMAT=1

log() { echo "$PROG: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() {
  sed -n '6,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# The Debian archive URI the host's apt uses for its own release (deb822 or one-line sources).
host_mirror() {
  local codename f uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r $f ]] || continue
    if [[ $f == *.sources ]]; then
      # deb822 stanzas: the URIs of a stanza whose Suites has the host's codename.
      uri=$(awk -v c="$codename" '
        /^[[:space:]]*$/ { if (u != "" && s) exit; u = ""; s = 0; next }
        /^URIs:/ { u = $2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == c) s = 1 }
        END { if (u != "" && s) print u }' "$f")
    else
      uri=$(awk -v c="$codename" '$1 == "deb" {
        n = 2; if ($2 ~ /^\[/) { while ($n !~ /\]$/) n++; n++ }
        if ($(n + 1) == c) { print $n; exit } }' "$f")
    fi
    if [[ -n $uri ]]; then
      echo "${uri%/}"
      return 0
    fi
  done
  return 1
}

base_stamp() { printf '%s\n' "format=$ROOT_FORMAT" "suite=$1" "mirror=$2" | sha256sum | cut -d' ' -f1; }
packages_stamp() { printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -d' ' -f1; }

# apt-get install of PACKAGES inside ROOT (daemons kept from starting by its policy-rc.d).
install_packages() {
  in_root "$1" env DEBIAN_FRONTEND=noninteractive bash -c \
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null && apt-get clean' \
    apt "${PACKAGES[@]}"
}

root_dir() { echo "$CACHE/slurm-root-$1"; }

# Runs "$@" inside ROOT in new mount + PID namespaces, with /proc, /dev, the repo at /vigil and
# the host's local-cluster lock (so clusters inside and outside pick ports under one lock).
in_root() {
  local root=$1
  shift
  touch /tmp/vigil-local-cluster.lock
  unshare --mount --pid --fork --propagation private -- bash -euo pipefail -c '
    root=$1 repo=$2
    shift 2
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    mkdir -p "$root/vigil" "$root/tmp"
    mount --bind "$repo" "$root/vigil"
    touch "$root/tmp/vigil-local-cluster.lock"
    mount --bind /tmp/vigil-local-cluster.lock "$root/tmp/vigil-local-cluster.lock"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM=dumb CCACHE_DIR=/var/cache/ccache "$@"
  ' in-root "$root" "$REPO" "$@"
}

cmd_ensure() {
  local suite=$1 mirror root base pkgs started
  [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, unshare)"
  command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install debootstrap"
  mirror=$(host_mirror) || die "no Debian mirror for this release found in /etc/apt/sources.list*"
  root=$(root_dir "$suite")
  base=$(base_stamp "$suite" "$mirror")
  pkgs=$(packages_stamp)
  started=$SECONDS
  if [[ -f $root/.vigil-stamp && $(cat "$root/.vigil-stamp") == "$base" ]]; then
    if [[ -f $root/.vigil-packages && $(cat "$root/.vigil-packages") == "$pkgs" ]]; then
      log "reusing $root ($suite)"
      return 0
    fi
    log "package list changed: installing into $root"
    install_packages "$root" || die "apt-get install inside $root failed"
    echo "$pkgs" >"$root/.vigil-packages"
    log "updated $root in $((SECONDS - started)) s"
    return 0
  fi
  log "building $root: debootstrap $suite from $mirror, then ${#PACKAGES[@]} packages"
  mkdir -p "$CACHE"
  rm -rf -- "$root.new"
  debootstrap --variant=minbase "$suite" "$root.new" "$mirror" >"$CACHE/debootstrap-$suite.log" 2>&1 ||
    die "debootstrap failed; see $CACHE/debootstrap-$suite.log"
  # Daemons must not start from package scripts: they would run outside any namespace we own.
  printf '#!/bin/sh\nexit 101\n' >"$root.new/usr/sbin/policy-rc.d"
  chmod 0755 "$root.new/usr/sbin/policy-rc.d"
  install_packages "$root.new" || die "apt-get install inside $root.new failed"
  echo "$base" >"$root.new/.vigil-stamp"
  echo "$pkgs" >"$root.new/.vigil-packages"
  rm -rf -- "$root"
  mv -- "$root.new" "$root"
  log "built $root in $((SECONDS - started)) s"
}

# Configures and builds the Slurm parts (VIGIL_SLURM_ONLY) in the root's own build directory and
# runs their tests: unit first, then the integration tests against a local cluster of this
# root's Slurm, started with the same scripts/local-cluster.sh.
cmd_test() {
  local suite=$1 started=$SECONDS
  cmd_ensure "$suite"
  in_root "$(root_dir "$suite")" bash -euo pipefail -c '
    build=/var/tmp/vigil-build
    slurmctld -V
    cmake -S /vigil -B "$build" -DVIGIL_SLURM_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache ${VIGIL_CMAKE_ARGS:-} >/dev/null
    cmake --build "$build" -j"${VIGIL_JOBS:-2}"
    ctest --test-dir "$build" --output-on-failure -LE "integration|bench" -j"${VIGIL_JOBS:-2}" --timeout 300
    ctest --test-dir "$build" --output-on-failure -L integration --timeout 900
  '
  log "$suite: Slurm build and tests passed in $((SECONDS - started)) s"
}

main() {
  [[ $# -ge 1 ]] || usage
  local cmd=$1 suite=trixie
  shift
  while [[ $# -gt 0 ]]; do
    case $1 in
      --suite) suite=${2:?--suite needs a value}; shift 2 ;;
      --suite=*) suite=${1#*=}; shift ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [[ $suite =~ ^[a-z]+$ ]] || die "--suite must be a Debian codename"
  case $cmd in
    ensure) cmd_ensure "$suite" ;;
    run)
      [[ $# -ge 1 ]] || usage
      cmd_ensure "$suite"
      in_root "$(root_dir "$suite")" "$@"
      ;;
    test) cmd_test "$suite" ;;
    path) root_dir "$suite" ;;
    mirror) host_mirror || die "no Debian mirror for this release found in /etc/apt/sources.list*" ;;
    remove) rm -rf -- "$(root_dir "$suite")" "$(root_dir "$suite").new" ;;
    -h | --help | help) usage ;;
    *) log "unknown command '$cmd'"; usage ;;
  esac
}

main "$@"
