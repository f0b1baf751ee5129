#!/usr/bin/env bash
# RebootProgram for the local test cluster (docs/local-cluster.md "Reboots"); never for a real
# node. slurmd runs it (as root, through system(3)) when slurmctld asks a node to reboot.
#
# A real reboot gives the node a new boot time, which is how slurmctld tells a finished reboot
# from a slurmd that merely restarted (it compares the boot time the node registers with to the
# time it issued the reboot). Here every node is one slurmd on a shared host, so "rebooting"
# gpu-i means: stop that slurmd, run DIR/etc/on-reboot NODE if it exists (the test's stand-in
# for what a reboot clears, e.g. a fake NVML fixture), and start slurmd again inside a new time
# namespace whose CLOCK_BOOTTIME starts near zero (unshare --time --boottime), so its uptime,
# and the boot time it reports, are those of a freshly booted machine. Each reboot appends
# "NODE EPOCH" to DIR/log/reboots. DIR/etc/reboot-delay-s (seconds) makes the boot that long.
#
# It returns at once: slurmd waits for this program, and the slurmd is what it stops, so the
# work happens in a detached child.
set -euo pipefail
# Slurm 26.05's slurmd runs the RebootProgram with a PATH without the sbin directories (measured
# in the forky root, 2026-11-27: "unshare: failed to execute slurmd"). Found by name, not through
# /proc/PID/exe, so the new daemon's name stays "slurmd" (Debian's binary is slurmd-wlm behind a
# symlink) and a second reboot of the node still finds it.
export PATH=${PATH:+$PATH:}/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin

# shellcheck source-path=SCRIPTDIR source=daemons.sh
source "$(dirname "${BASH_SOURCE[0]}")/daemons.sh"
log() { echo "local-reboot.sh: $*" >&2; }

# The slurmd that ran us: the nearest ancestor whose command is slurmd.
find_slurmd() {
  local pid=$PPID depth
  for ((depth = 0; depth < 6 && pid > 1; depth++)); do
    if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == slurmd ]]; then
      echo "$pid"
      return 0
    fi
    pid=$(awk '$1 == "PPid:" {print $2}' "/proc/$pid/status" 2>/dev/null) || return 1
  done
  return 1
}

# Prints the value after FLAG in PID's command line.
arg_after() {
  local pid=$1 flag=$2 prev="" arg
  while IFS= read -r -d '' arg; do
    if [[ $prev == "$flag" ]]; then
      echo "$arg"
      return 0
    fi
    prev=$arg
  done <"/proc/$pid/cmdline"
  return 1
}

restart() {
  local slurmd=$1 node=$2 conf=$3 dir=$4 wrapper=$5 up new waited=0
  set -u
  sleep 2
  terminate 10 "$slurmd"
  if [[ -f $dir/etc/on-reboot ]]; then
    bash "$dir/etc/on-reboot" "$node" >>"$dir/log/on-reboot.log" 2>&1 || true
  fi
  echo "$node $(date +%s)" >>"$dir/log/reboots"
  rm -f "$dir/run/slurmd-$node.pid"
  # DIR/etc/reboot-delay-s: how many seconds this boot takes (a test of a reboot that outlasts
  # Slurm's ResumeTimeout); none, at once. Cut short when the cluster is stopped meanwhile.
  local delay=0 slept=0
  [[ -f $dir/etc/reboot-delay-s ]] && delay=$(($(cat "$dir/etc/reboot-delay-s") * 10))
  while ((slept < delay)) && [[ ! -f $dir/run/stopping && -f $dir/run/pids ]]; do
    sleep 0.1
    slept=$((slept + 1))
  done
  # The cluster is being stopped (local-cluster.sh stop marks run/stopping first): no slurmd
  # may outlive it.
  if [[ -f $dir/run/stopping || ! -f $dir/run/pids ]]; then
    log "cluster in $dir stopped; $node not restarted"
    return 0
  fi
  # Uptime starts below one second: slurmd reports its boot time in whole seconds, and it must
  # not fall before the second slurmctld issued the reboot in. A slurmd "rebooted" before runs
  # us inside its time namespace: the host's uptime is ours minus our namespace's offset.
  up=$(($(cut -d. -f1 /proc/uptime) - $(awk '$1 == "boottime" {print $2}' /proc/self/timens_offsets)))
  # wrapper: the production profile's node-cgroup.sh (daemons.sh node_wrapper), which sees that
  # it already runs inside the node's cgroup namespace and keeps the new slurmd there.
  # shellcheck disable=SC2086 # wrapper is words, or nothing
  spawn "$dir" slurmd "slurmd-$node" unshare --fork --kill-child=TERM --time \
    --boottime "-$up" $wrapper slurmd -D -N "$node" -f "$conf"
  # Record slurmd itself too (unshare is its parent), so `stop` signals the daemon directly.
  while [[ ! -s $dir/run/slurmd-$node.pid ]] && ((waited < 100)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  new=$(cat "$dir/run/slurmd-$node.pid" 2>/dev/null || true)
  [[ -n $new ]] && echo "slurmd $new slurmd-$node" >>"$dir/run/pids"
}

main() {
  local slurmd node conf dir
  slurmd=$(find_slurmd) || {
    log "not started by slurmd"
    exit 1
  }
  node=$(arg_after "$slurmd" -N) || {
    log "slurmd $slurmd has no -N"
    exit 1
  }
  conf=$(arg_after "$slurmd" -f) || {
    log "slurmd $slurmd has no -f"
    exit 1
  }
  dir=$(dirname "$(dirname "$conf")")
  # Only a Vigil local cluster: its slurm.conf starts with the marker local-cluster.sh writes.
  head -1 "$conf" | grep -q '^# vigil local cluster' || {
    log "$conf is not a Vigil local cluster's"
    exit 1
  }
  # What the detached child needs, checked while a failure can still be reported: once it has
  # stopped slurmd, nothing would bring the node back.
  [[ -r /proc/self/timens_offsets ]] && unshare --fork --time --boottime 0 true || {
    log "this kernel or util-linux cannot create time namespaces; not rebooting $node"
    exit 1
  }
  log "rebooting $node (slurmd $slurmd) in $dir"
  # shellcheck disable=SC2016 # expanded by the child's bash
  setsid bash -c "$(declare -f restart spawn terminate pid_alive log)"'; restart "$@"' \
    local-reboot "$slurmd" "$node" "$conf" "$dir" "$(node_wrapper "$dir" "$node")" </dev/null >>"$dir/log/local-reboot.log" 2>&1 &
  # Return only once the child has left our process group: Slurm 26.05's slurmd kills the
  # RebootProgram's process group as soon as it exits (measured in the forky root, 2026-11-27:
  # a child still on its way to setsid(2) was killed before its first line, and the node stayed
  # DOWN+REBOOT_ISSUED). 22.05 and 24.11 leave it alone.
  local child=$! mine waited=0
  mine=$(pgrp_of $$)
  while [[ $(pgrp_of "$child") == "$mine" ]] && ((waited < 100)); do
    sleep 0.05
    waited=$((waited + 1))
  done
}

# A process's group id, field 5 of /proc/PID/stat ("" once it is gone); the command name in
# field 2 may hold spaces, so the fields are read after its closing parenthesis.
pgrp_of() {
  local stat pgrp
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  read -r _ _ pgrp _ <<<"$stat"
  echo "$pgrp"
}

main "$@"
