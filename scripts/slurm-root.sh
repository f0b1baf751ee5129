#!/usr/bin/env bash
# A Debian root with another Slurm release, for building and testing Vigil's Slurm code against
# it (docs/slurm-compat.md). A build-environment provider, like scripts/install-deps.sh: it is
# the one script that keeps state outside the repository (the root, under the cache dir below).
#
#   slurm-root.sh ensure [--suite S]            # create the root, or reuse it when its stamp matches
#   slurm-root.sh run    [--suite S] -- CMD...  # run CMD inside the root (repo at /vigil)
#   slurm-root.sh build  [--suite S] [--set lean|full]  # build the Slurm parts inside
#   slurm-root.sh test   [--suite S] [--set lean|full]  # build the Slurm parts + run their tests inside
#   slurm-root.sh path   [--suite S]            # print where the root lives
#   slurm-root.sh remove [--suite S]
#   slurm-root.sh mirror                        # the Debian mirror the host's apt uses
#   slurm-root.sh bootstrap [--suite S] DIR PKG...  # a minbase root of S with PKG at DIR (build-image.sh)
#
# S defaults to trixie (Slurm 24.11). The root is made with mmdebstrap (one apt run: pipelined
# downloads, one dpkg pass; debootstrap + apt-get when mmdebstrap is missing) from the Debian
# mirror this machine's apt already uses (read from /etc/apt/sources.list*), with the packages
# below. Stamp files make later runs reuse it: one keyed by suite and
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
# Bump when what the root holds changes (not the package list: that is in the stamp; not the tool
# that made it: mmdebstrap and debootstrap + apt-get give the same minbase root + PACKAGES).
readonly ROOT_FORMAT=1
# `test --set lean` (scripts/test.sh's default, sized for CI): the Slurm client on both backends
# (libslurm and slurmrestd/JWT: node table, drain, undrain, states, names, job reader, every REST
# API version, tokens), the hostlist, reason and topology units, Slurm's switch tree from a
# topology/tree cluster, the drainer's drain / resume / ownership tests, a reboot past
# ResumeTimeout, and vigil-submit's REST reader against the real cluster. `--set full`: every test of the VIGIL_SLURM_ONLY build.
readonly LEAN_TARGETS="slurm_test slurm_client_test slurm_topology_test drainer_slurm_test drainer_reboot_timeout_slurm_test submit_rest_test"
readonly LEAN_TESTS='^(Hostlist|Reason|Ownership|SlurmTopology|SlurmTopologyText|ScontrolText)\.|SlurmClient\.|^RestClient\.|^LibslurmClient\.a_second|^DrainerSlurm\.(failing_report|resume_after|over_slurmrestd|a_node_an_admin|an_admin_drain_after|a_down_node)|^SubmitRest\.|^SlurmRebootTimeout\.'

log() { echo "$PROG: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() {
  sed -n '6,13p' "$0" | sed 's/^# \{0,1\}//' >&2
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

# apt-get install of PACKAGES (or the packages given after ROOT) inside ROOT (daemons kept from
# starting by its policy-rc.d).
install_packages() {
  local root=$1
  shift
  [[ $# -gt 0 ]] || set -- "${PACKAGES[@]}"
  in_root "$root" env DEBIAN_FRONTEND=noninteractive bash -c \
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null && apt-get clean' \
    apt "$@"
}

root_dir() { echo "$CACHE/slurm-root-$1"; }

# Daemons must not start from package scripts: they would run outside any namespace we own.
no_daemons() {
  printf '#!/bin/sh\nexit 101\n' >"$1/usr/sbin/policy-rc.d"
  chmod 0755 "$1/usr/sbin/policy-rc.d"
}

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
    # /sys with its cgroup hierarchies: the production profile of the local cluster gives each slurmd
    # its own cgroup tree (scripts/lib/node-cgroup.sh, docs/local-cluster.md "Profiles").
    mkdir -p "$root/sys"
    mount --rbind /sys "$root/sys"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    mkdir -p "$root/vigil" "$root/tmp"
    mount --bind "$repo" "$root/vigil"
    touch "$root/tmp/vigil-local-cluster.lock"
    mount --bind /tmp/vigil-local-cluster.lock "$root/tmp/vigil-local-cluster.lock"
    exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 TERM=dumb CCACHE_DIR=/var/cache/ccache "$@"
  ' in-root "$root" "$REPO" "$@"
}

# A minbase root of SUITE from MIRROR at DIR (must not exist) with PACKAGES and no recommends,
# daemons kept from starting; the log goes to the cache dir. Also what scripts/build-image.sh
# makes its runtime roots with (`slurm-root.sh bootstrap`).
make_root() {
  local suite=$1 mirror=$2 dir=$3 name
  shift 3
  name=$(basename "${dir%.new}")
  mkdir -p "$CACHE"
  if command -v mmdebstrap >/dev/null; then
    # mmdebstrap keeps daemons from starting while it installs (its own policy-rc.d, removed
    # at the end: ours is written below, for later apt-get runs inside the root). Testing and
    # unstable (forky, sid: Slurm 26.05) sign Release files valid for a week; a mirror snapshot
    # older than that still serves them signed, so only the expiry is not checked.
    log "building $dir: mmdebstrap $suite minbase + $# packages from $mirror"
    mmdebstrap --variant=minbase --include="$(
      IFS=,
      echo "$*"
    )" --aptopt='APT::Install-Recommends "false"' --aptopt='Acquire::Check-Valid-Until "false"' \
      --dpkgopt=force-unsafe-io \
      "$suite" "$dir" "$mirror" >"$CACHE/mmdebstrap-$name.log" 2>&1 ||
      die "mmdebstrap failed; see $CACHE/mmdebstrap-$name.log"
    no_daemons "$dir"
  else
    log "building $dir: debootstrap $suite from $mirror, then $# packages (mmdebstrap is faster)"
    debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$CACHE/debootstrap-$name.log" 2>&1 ||
      die "debootstrap failed; see $CACHE/debootstrap-$name.log"
    no_daemons "$dir"
    install_packages "$dir" "$@" || die "apt-get install inside $dir failed"
  fi
}

cmd_ensure() {
  local suite=$1 mirror root base pkgs started
  [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, unshare)"
  command -v mmdebstrap >/dev/null || command -v debootstrap >/dev/null ||
    die "neither mmdebstrap nor debootstrap found: apt-get install mmdebstrap"
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
  rm -rf -- "$root.new"
  make_root "$suite" "$mirror" "$root.new" "${PACKAGES[@]}"
  echo "$base" >"$root.new/.vigil-stamp"
  echo "$pkgs" >"$root.new/.vigil-packages"
  rm -rf -- "$root"
  mv -- "$root.new" "$root"
  log "built $root in $((SECONDS - started)) s"
}

# Configures and builds the Slurm parts (VIGIL_SLURM_ONLY) of SET (lean or full, above) in the
# root's own build directory (/var/tmp/vigil-build, ccache in the root).
cmd_build() {
  local suite=$1 set=$2 started=$SECONDS targets=""
  case $set in
    lean) targets=$LEAN_TARGETS ;;
    full) ;;
    *) die "--set must be lean or full" ;;
  esac
  cmd_ensure "$suite"
  log "$suite: $set build (root ready after $((SECONDS - started)) s)"
  in_root "$(root_dir "$suite")" env VIGIL_TARGETS="$targets" \
    VIGIL_JOBS="${VIGIL_JOBS:-2}" VIGIL_CMAKE_ARGS="${VIGIL_CMAKE_ARGS:-}" bash -euo pipefail -c '
    build=/var/tmp/vigil-build
    slurmctld -V
    cmake -S /vigil -B "$build" -DVIGIL_SLURM_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache $VIGIL_CMAKE_ARGS >/dev/null
    t0=$SECONDS
    cmake --build "$build" -j"$VIGIL_JOBS" ${VIGIL_TARGETS:+--target $VIGIL_TARGETS}
    echo "slurm-root.sh: build took $((SECONDS - t0)) s" >&2
  '
}

# cmd_build, then the tests of SET: unit first, then the integration tests against a local
# cluster of this root's Slurm, started with the same scripts/local-cluster.sh.
cmd_test() {
  local suite=$1 set=$2 started=$SECONDS tests=""
  [[ $set == lean ]] && tests=$LEAN_TESTS
  cmd_build "$suite" "$set"
  in_root "$(root_dir "$suite")" env VIGIL_TESTS="$tests" VIGIL_JOBS="${VIGIL_JOBS:-2}" \
    bash -euo pipefail -c '
    build=/var/tmp/vigil-build
    t0=$SECONDS
    ctest --test-dir "$build" --output-on-failure -LE "integration|bench" -j"$VIGIL_JOBS" \
      --timeout 300 ${VIGIL_TESTS:+-R "$VIGIL_TESTS"}
    ctest --test-dir "$build" --output-on-failure -L integration --timeout 900 \
      ${VIGIL_TESTS:+-R "$VIGIL_TESTS"}
    echo "slurm-root.sh: tests took $((SECONDS - t0)) s" >&2
  '
  log "$suite: Slurm build and tests ($set) passed in $((SECONDS - started)) s"
}

main() {
  [[ $# -ge 1 ]] || usage
  local cmd=$1 suite=trixie set=full
  shift
  while [[ $# -gt 0 ]]; do
    case $1 in
      --suite) suite=${2:?--suite needs a value}; shift 2 ;;
      --suite=*) suite=${1#*=}; shift ;;
      --set) set=${2:?--set needs lean or full}; shift 2 ;;
      --set=*) set=${1#*=}; shift ;;
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
    build) cmd_build "$suite" "$set" ;;
    test) cmd_test "$suite" "$set" ;;
    path) root_dir "$suite" ;;
    mirror) host_mirror || die "no Debian mirror for this release found in /etc/apt/sources.list*" ;;
    bootstrap)
      [[ $# -ge 2 ]] || usage
      [[ ! -e $1 ]] || die "bootstrap: $1 exists"
      [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, unshare)"
      make_root "$suite" "$(host_mirror)" "$@"
      ;;
    remove) rm -rf -- "$(root_dir "$suite")" "$(root_dir "$suite").new" ;;
    -h | --help | help) usage ;;
    *) log "unknown command '$cmd'"; usage ;;
  esac
}

# `exit` on the same line: bash reads a script as it runs, so an edit made while a long `test`
# runs cannot make it run anything after main returns.
main "$@"; exit
