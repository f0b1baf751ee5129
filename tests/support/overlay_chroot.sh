#!/usr/bin/env bash
# Runs a script of DEBS_DIR as root inside ROOT seen through an overlay (upper and work layers
# under WORK_DIR, so ROOT stays as it was), in private mount + PID namespaces, with /proc, /dev,
# the host's resolv.conf (apt reaches the mirror ROOT was made from) and DEBS_DIR at /debs.
# The package tests (tests/packaging) install and run the project's .debs with it.
#   overlay_chroot.sh ROOT WORK_DIR DEBS_DIR SCRIPT_NAME
set -euo pipefail
root=$1 work=$2 debs=$3 script=$4
mkdir -p "$work/upper" "$work/work" "$work/merged"
exec unshare --mount --pid --fork --propagation private -- bash -euc '
  r=$1 t=$2 d=$3 s=$4
  mount -t overlay overlay -o "lowerdir=$r,upperdir=$t/upper,workdir=$t/work" "$t/merged"
  mkdir -p "$t/merged/debs"
  mount --bind "$d" "$t/merged/debs"
  mount -t proc proc "$t/merged/proc"
  mount --rbind /dev "$t/merged/dev"
  cp /etc/resolv.conf "$t/merged/etc/resolv.conf"
  exec chroot "$t/merged" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    bash "/debs/$s"
' overlay-chroot "$root" "$work" "$debs" "$script"
