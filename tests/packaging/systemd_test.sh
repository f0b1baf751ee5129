#!/usr/bin/env bash
# The packages under systemd itself: a bare bookworm root (tests/support/bare_root.sh, through an
# overlay so the cached root stays bare) gets systemd, curl and the vigil-drainer and vigil-check
# .debs with apt-get, and systemd 252 boots as PID 1 in new PID, mount, network, UTS and IPC
# namespaces (`container=` set, as a container manager would; only loopback exists there). A
# oneshot probe unit ordered after the others asks systemd and Vigil what happened, then powers
# the "machine" off.
#   1. vigil-drainer.service, enabled as the package ships it (plus a token, which the admin
#      creates): active with its sandbox (ProtectSystem=strict, NoNewPrivileges, the
#      StateDirectory made by systemd), /readyz answers, and `systemctl stop` ends it cleanly
#      (SIGTERM, exit 0). Found when first run: the shipped unit's ReadWritePaths named
#      /var/spool/vigil, which a fresh install lacks, and systemd refused the start with
#      226/NAMESPACE.
#   2. host_services against this systemd (docs/checks-host.md): stand-in units with the GPU
#      stack's names (a Fabric Manager whose start exits 1, a persistenced in a restart loop, an
#      IMEX daemon that runs), an NVSwitch in a built sysfs tree, the fake NVML reading every GPU
#      registered, and a SKU file requiring a unit that is not installed. `vigil-check run` fails
#      naming Fabric Manager with NVML's cross-check and the missing unit, counts the loop's
#      restarts from systemd's NRestarts between two runs, and `vigil-hook healthcheck` (the
#      HealthCheckProgram) reports the same fail and exits 0.
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
# For host_services: the fake NVML with every GPU registered, an NVSwitch in a sysfs tree (vendor
# 0x10de, class 0x068000), and a SKU file that requires a unit nobody installed.
mkdir -p "$tmp/debs/nvml" "$tmp/debs/sku" "$tmp/debs/sysroot/sys/bus/pci/devices/0000:05:00.0"
cp "$build/tests/fake_nvml/libnvidia-ml.so.1" "$repo/tests/fixtures/nvml/healthy_8x_h100.json" \
  "$tmp/debs/nvml/"
printf '0x10de\n' >"$tmp/debs/sysroot/sys/bus/pci/devices/0000:05:00.0/vendor"
printf '0x068000\n' >"$tmp/debs/sysroot/sys/bus/pci/devices/0000:05:00.0/class"
cat >"$tmp/debs/sku/test.yaml" <<'YAML'
sku: SYSTEMD-TEST
match:
  gpu_names: ["NVIDIA H100 80GB HBM3"]
  gpu_count: 8
services:
  required: [site-agent]
YAML

# 1. Install, in a plain chroot of the overlay.
cat >"$tmp/debs/install.sh" <<'SH'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >/dev/null
apt-get install -y -qq --no-install-recommends systemd curl /debs/vigil-drainer_*.deb \
  /debs/vigil-check_*.deb >/dev/null
systemctl enable vigil-drainer.service
unit() { printf '[Unit]\nDescription=Vigil test stand-in\nStartLimitIntervalSec=0\n[Service]\n%s\n[Install]\nWantedBy=multi-user.target\n' "$2" >"/etc/systemd/system/$1"; }
unit nvidia-fabricmanager.service "ExecStart=/bin/sh -c 'exit 1'"
unit nvidia-persistenced.service $'ExecStart=/bin/false\nRestart=always\nRestartSec=1'
unit nvidia-imex.service "ExecStart=/bin/sleep infinity"
systemctl enable nvidia-fabricmanager.service nvidia-persistenced.service nvidia-imex.service
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >/etc/vigil/token
cat >/etc/systemd/system/vigil-probe.service <<'UNIT'
[Unit]
Description=Vigil test probe: the drainer under systemd
After=vigil-drainer.service nvidia-fabricmanager.service nvidia-imex.service
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
services() {
  VIGIL_FAKE_NVML_FIXTURE=/debs/nvml/healthy_8x_h100.json vigil-check run -q --only host_services \
    --thresholds /debs/sku --sku SYSTEMD-TEST --sysfs-root /debs/sysroot --state-dir /tmp/vs \
    --nvml-library /debs/nvml/libnvidia-ml.so.1 --format json --node sd-0 >"$out/$1" 2>&1 || true
}
services services1.json
sleep 5
services services2.json
echo "6,1,100,-;quiet" >/tmp/kmsg
rc=0
SLURMD_NODENAME=sd-0 vigil-hook healthcheck --no-post --kmsg /tmp/kmsg --state-dir /tmp/hs \
  --sysfs-root /debs/sysroot >"$out/hook" 2>&1 || rc=$?
echo "exit $rc" >>"$out/hook"
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
for f in readyz running state_dir status stopped services2.json hook; do
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
python3 - "$tmp/out" <<'PY' || fail "host_services did not judge systemd's units as expected"
import json, sys
out = sys.argv[1]
def result(name):
    report = json.load(open(f"{out}/{name}"))
    return next(c for c in report["checks"] if c["check"] == "host_services")
r = result("services2.json")
assert r["status"] == "fail", r
assert r["fault_code"] == "VIGIL-SERVICE-NOT-INSTALLED", r  # the SKU's unit is named first
for part in ("nvidia-fabricmanager.service failed (exit-code)",
             "NVML still reads 8 of 8 GPUs registered", "site-agent.service is not installed"):
    assert part in r["message"], (part, r["message"])
deltas = {m["port"]: m["value"] for m in r["measurements"] if m["name"] == "service_restarts_delta"}
assert deltas.get("nvidia-persistenced.service", 0) >= 3, deltas  # RestartSec=1 for 5 s
assert deltas.get("nvidia-imex.service") == 0, deltas
hook = open(f"{out}/hook").read()
assert "host_services" in hook and "nvidia-fabricmanager.service failed" in hook, hook
assert hook.rstrip().endswith("exit 0"), hook
PY
echo "ok: host_services read systemd's own account of the units, and the hook reported it, exit 0"
