#!/usr/bin/env bash
# The Debian packages (cmake/VigilPackaging.cmake, docs/deploy.md "Packages") install and run on
# a bare Debian root with nothing but what they declare: minbase + python3 (tests/support/
# bare_root.sh, made by scripts/slurm-root.sh bootstrap and cached), seen through an overlay so
# the cached root stays bare. apt-get installs each .deb with the dependencies its Depends names,
# from the Debian mirror the root was made from; then every program starts, the hook runs (no
# GPU, no Slurm here: `error`s, exit 0, never a drain), the shipped thresholds validate, and
# vigil-check's Depends names no libslurm (it works with any Slurm release).
#   deb_test.sh BUILD_DIR                      bookworm: packs this (host, bookworm) build
#   deb_test.sh --debs DIR --suite trixie      packages built for that suite (build-image.sh)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
suite=bookworm build="" debs_in=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --debs) debs_in=$(cd "$2" && pwd); shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    *) build=$(cd "$1" && pwd); shift ;;
  esac
done
fail() {
  echo "deb_test: FAIL: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "needs root (chroot, unshare, overlay), as scripts/test.sh runs"

tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
mkdir -p "$tmp/debs"
if [[ -n $debs_in ]]; then
  cp "$debs_in"/vigil-*.deb "$tmp/debs/"
else
  [[ -n $build ]] || fail "give BUILD_DIR or --debs DIR"
  (cd "$tmp/debs" && cpack -G DEB --config "$build/CPackConfig.cmake" >"$tmp/cpack.log" 2>&1) ||
    { cat "$tmp/cpack.log"; fail "cpack failed"; }
fi
check_deb=$(ls "$tmp"/debs/vigil-check_*.deb) || fail "no vigil-check .deb"
drainer_deb=$(ls "$tmp"/debs/vigil-drainer_*.deb) || fail "no vigil-drainer .deb"
depends=$(dpkg-deb -f "$check_deb" Depends)
echo "vigil-check Depends: $depends"
[[ $depends != *libslurm* ]] || fail "vigil-check depends on a libslurm: $depends"
echo "vigil-drainer Depends: $(dpkg-deb -f "$drainer_deb" Depends)"
for lib in libyaml-cpp libmunge2; do
  [[ $depends == *$lib* ]] || fail "vigil-check's Depends misses $lib: $depends"
done
# vigil-check and vigil-allreduce move together (transport modes): an older vigil-allreduce breaks.
breaks=$(dpkg-deb -f "$check_deb" Breaks)
version=$(dpkg-deb -f "$check_deb" Version)
[[ $breaks == "vigil-allreduce (<< $version)" ]] ||
  fail "vigil-check must break an older vigil-allreduce (Breaks: $breaks, Version: $version)"

root=$(bash "$repo/tests/support/bare_root.sh" "$repo" "$suite") ||
  fail "could not make the bare $suite root"
grep -q "VERSION_CODENAME=$suite" "$root/etc/os-release" || fail "$root is not $suite"
chroot "$root" dpkg-query -W -f='${Package} ${Status}\n' 'libyaml-cpp*' 2>/dev/null |
  grep -q "install ok" && fail "the bare root has a libyaml-cpp: it would hide a missing Depends"

mkdir -p "$tmp/upper" "$tmp/work" "$tmp/merged"
cat >"$tmp/debs/in-root.sh" <<'SH'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >/dev/null
apt-get install -y -qq --no-install-recommends /debs/vigil-check_*.deb /debs/vigil-drainer_*.deb >/dev/null
dpkg-query -W -f='${Package} ${Status}\n' vigil-check vigil-drainer
vigil-check --help >/dev/null
vigil-check thresholds validate /usr/share/vigil/thresholds
vigil-drainer --help >/dev/null
echo "6,1,100,-;quiet" >/tmp/kmsg
rc=0
SLURMD_NODENAME=bare-0 VIGIL_HOOK_LOG=/tmp/hook.log vigil-hook healthcheck --no-post \
  --kmsg /tmp/kmsg --state-dir /tmp/state >/tmp/hook.out 2>&1 || rc=$?
echo "vigil-hook healthcheck exit $rc"; head -12 /tmp/hook.out
[ "$rc" = 0 ] || { cat /tmp/hook.out /tmp/hook.log 2>/dev/null; exit 1; }
grep -q "kmsg_xid" /tmp/hook.out || { cat /tmp/hook.out; exit 1; }
if grep -q "not found\|error while loading" /tmp/hook.out /tmp/hook.log 2>/dev/null; then
  cat /tmp/hook.out /tmp/hook.log; exit 1
fi
# The packaged defaults: the drainer's config validates once a token exists; the node package's
# slurm.conf hook script runs with its /etc/vigil/hook.env (no report URL: check and print only).
[ -f /usr/lib/systemd/system/vigil-drainer.service ] || { echo "no systemd unit"; exit 1; }
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >/etc/vigil/token
vigil-drainer config validate /etc/vigil/drainer.yaml
echo "6,2,100,-;quiet" >/tmp/kmsg2
rc=0
SLURMD_NODENAME=bare-0 VIGIL_HOOK_LOG=/tmp/hook2.log VIGIL_KMSG=/tmp/kmsg2 \
  /usr/share/vigil/hooks/healthcheck >/tmp/hook2.out 2>&1 || rc=$?
echo "slurm.conf hook script exit $rc"
[ "$rc" = 0 ] && grep -q "kmsg_xid" /tmp/hook2.out || { cat /tmp/hook2.out /tmp/hook2.log; exit 1; }
echo "in-root: ok"
SH
bash "$repo/tests/support/overlay_chroot.sh" "$root" "$tmp" "$tmp/debs" in-root.sh 2>&1 |
  tee "$tmp/root.log" || true
grep -q "^in-root: ok" "$tmp/root.log" || fail "the packages did not install and run in the bare root"
echo "ok: vigil-check and vigil-drainer installed on bare $suite with their declared Depends only and ran"
