#!/usr/bin/env bash
# The vigil-drainer package's systemd unit, run by systemd itself: a bare bookworm root
# (tests/support/bare_root.sh, through an overlay so the cached root stays bare) gets systemd,
# curl and the vigil-drainer .deb with apt-get, the unit is enabled as the package ships it
# (plus a token, which the admin creates), and systemd 252 boots as PID 1 in new PID, mount,
# network, UTS and IPC namespaces (`container=` set, as a container manager would; only loopback
# exists there). A oneshot probe unit ordered after the drainer asks systemd and the drainer what
# happened: the unit is active with its sandbox (ProtectSystem=strict, NoNewPrivileges, the
# StateDirectory made by systemd), /readyz answers, and `systemctl stop` ends it cleanly (SIGTERM,
# exit 0). The probe then powers the "machine" off. Found when first run: the shipped unit's
# ReadWritePaths named /var/spool/vigil, which a fresh install lacks, and systemd refused the
# start with 226/NAMESPACE.
#   systemd_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() {
  echo "systemd_test: FAIL: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "needs root (chroot, unshare, overlay), as scripts/test.sh runs"

tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
mkdir -p "$tmp/debs" "$tmp/upper" "$tmp/work" "$tmp/merged" "$tmp/out"
(cd "$tmp/debs" && cpack -G DEB --config "$build/CPackConfig.cmake" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack failed"; }
root=$(bash "$repo/tests/support/bare_root.sh" "$repo") || fail "could not make the bare root"

# 1. Install, in a plain chroot of the overlay.
cat >"$tmp/debs/install.sh" <<'SH'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >/dev/null
apt-get install -y -qq --no-install-recommends systemd curl /debs/vigil-drainer_*.deb >/dev/null
systemctl enable vigil-drainer.service
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >/etc/vigil/token
cat >/etc/systemd/system/vigil-probe.service <<'UNIT'
[Unit]
Description=Vigil test probe: the drainer under systemd
After=vigil-drainer.service
Wants=vigil-drainer.service
[Service]
Type=oneshot
ExecStart=/bin/bash /debs/probe.sh
[Install]
WantedBy=multi-user.target
UNIT
systemctl enable vigil-probe.service
echo "install: ok"
SH
cat >"$tmp/debs/probe.sh" <<'SH'
out=/out
for _ in $(seq 1 100); do
  curl -fsS http://127.0.0.1:8480/readyz >"$out/readyz" 2>&1 && break
  sleep 0.1
done
systemctl show vigil-drainer -p ActiveState -p SubState -p NoNewPrivileges -p ProtectSystem \
  -p StateDirectory -p PrivateTmp >"$out/running"
stat -c '%F %U' /var/lib/vigil-drainer >"$out/state_dir" 2>&1
systemctl --no-pager status vigil-drainer >"$out/status" 2>&1
systemctl stop vigil-drainer
systemctl show vigil-drainer -p ActiveState -p Result -p ExecMainStatus >"$out/stopped"
systemctl poweroff --no-block
SH
bash "$repo/tests/support/overlay_chroot.sh" "$root" "$tmp" "$tmp/debs" install.sh \
  >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "install"; }
grep -q "^install: ok" "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }

# 2. Boot systemd as PID 1 (at most 120 s; the probe powers off in seconds).
rc=0
# -k: systemd as PID 1 answers SIGTERM by re-executing itself; --kill-child: when unshare dies,
# its child (systemd, and with it the whole PID namespace) is killed too.
timeout -k 10 120 unshare --mount --pid --net --uts --ipc --fork --kill-child \
  --propagation private -- bash -euc '
  r=$1 t=$2
  mount -t overlay overlay -o "lowerdir=$r,upperdir=$t/upper,workdir=$t/work" "$t/merged"
  mkdir -p "$t/merged/debs" "$t/merged/out"
  mount --bind "$t/debs" "$t/merged/debs"
  mount --bind "$t/out" "$t/merged/out"
  mount -t proc proc "$t/merged/proc"
  mount --rbind /dev "$t/merged/dev"
  mount --rbind /sys "$t/merged/sys"
  mount -t tmpfs tmpfs "$t/merged/run"
  exec chroot "$t/merged" /usr/bin/env -i container=vigil-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    /usr/lib/systemd/systemd --system
' sd-boot "$root" "$tmp" >"$tmp/boot.log" 2>&1 || rc=$?
[[ $rc -ne 124 ]] || { tail -40 "$tmp/boot.log"; fail "systemd did not power off within 120 s"; }
for f in readyz running state_dir status stopped; do
  echo "== $f"
  cat "$tmp/out/$f" 2>/dev/null || { tail -40 "$tmp/boot.log"; fail "the probe wrote no $f"; }
done
expect() { grep -qx -- "$2" "$tmp/out/$1" || fail "$1: expected '$2'"; }
expect readyz "ready"
expect running "ActiveState=active"
expect running "SubState=running"
expect running "ProtectSystem=strict"
expect running "NoNewPrivileges=yes"
expect running "PrivateTmp=yes"
expect state_dir "directory root"
expect stopped "ActiveState=inactive"
expect stopped "Result=success"
expect stopped "ExecMainStatus=0"
echo "ok: vigil-drainer.service ran under systemd (PID 1) as packaged, answered /readyz and stopped cleanly"
