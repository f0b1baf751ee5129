#!/usr/bin/env bash
# Embedded local Slurm cluster for Vigil's tests and demo (see docs/local-cluster.md).
#
#   local-cluster.sh start  DIR [--nodes N] [--timeout SECONDS] [--rest] [--extra-conf FILE]
#                               [--node-addrs] [--profile production|bare] [--gpus G] [--owner PID]
#   local-cluster.sh stop   DIR [--clean]
#   local-cluster.sh status DIR
#   local-cluster.sh env    DIR
#   local-cluster.sh run    DIR [--nodes N] [--timeout SECONDS] [--extra-conf FILE] -- COMMAND...
#
# --extra-conf appends FILE's lines to the generated slurm.conf (Prolog=, Epilog=,
# HealthCheckProgram= ... for the hook tests); a key it repeats overrides ours (slurmctld: "latest
# value used").
# --profile production (the default) configures Slurm as GPU sites do: task/cgroup with affinity,
# proctrack/cgroup, cgroup accounting, cgroup.conf ConstrainDevices/Cores/RAMSpace=yes,
# PrologFlags=Alloc,Contain, GresTypes=gpu and gres.conf File= over G (--gpus, default 8)
# character devices per node under DIR/dev/<node> (NVIDIA's major 195, a distinct minor each;
# never the host's /dev), and Slurm's default timeouts. Each slurmd then runs in its own cgroup
# tree (scripts/lib/node-cgroup.sh). A host without usable cgroups makes `start` exit 4 with the
# reason. --profile bare is the old cgroup-less configuration (task/none, no GRES).
# `start` runs one private munged, one slurmctld and N slurmd (gpu-0 .. gpu-N-1) on loopback.
# --node-addrs gives node gpu-i its own loopback address, NodeAddr=127.0.1.(i+1) (Linux routes
# all of 127.0.0.0/8 to lo, so nothing needs setting up), and its own munged with that address
# as its origin (munged --origin) on DIR/munge/gpu-i.socket, sharing the cluster's key: a MUNGE
# credential encoded there says it comes from gpu-i, as one from a real node would
# (docs/security.md, auth mode munge).
# --rest also turns on JWT authentication (AuthAltTypes=auth/jwt, key DIR/etc/jwt.key) and runs
# slurmrestd (rest_auth/jwt, as user nobody) on 127.0.0.1; DIR/env then has its URL and a token.
# Everything (config, state, logs, sockets, pid files, the munge key) lives under DIR; nothing in
# /etc is read or written. Ports are chosen free at start, under a host-wide lock, so two
# clusters can start in parallel. `source DIR/env` points sinfo/sbatch/squeue at the cluster.
# `stop` kills exactly the processes this script started (and the slurmstepd/slurmscriptd they
# spawned), TERM first and KILL after a grace period; it is idempotent and removes DIR only
# with --clean.
# --owner PID ties the cluster to that process (the test fixture passes its own): a watcher in a
# session of its own polls it once a second and, once it is gone, runs `stop DIR --clean`. A
# test killed with SIGKILL or by ctest's timeout runs no destructor, and the daemons, each in a
# session of its own, would otherwise outlive it. `stop` ends the watcher.
#
# Scripts that start a cluster should always stop it, also on Ctrl-C (stop on EXIT; INT/TERM
# only exit, which runs the EXIT trap, so the script does not carry on after Ctrl-C):
#   dir=$(mktemp -d /tmp/vigil-cluster.XXXXXX)
#   trap 'scripts/local-cluster.sh stop "$dir" --clean' EXIT
#   trap 'exit 130' INT TERM
#   scripts/local-cluster.sh start "$dir" --nodes 4 && source "$dir/env"
# or let `run` do exactly that around one command.
set -euo pipefail

readonly PROG=local-cluster.sh
readonly DEFAULT_NODES=4
readonly DEFAULT_TIMEOUT=120
# Unix socket paths (munge socket, slurmd step sockets under the spool dir) must fit in 108
# bytes; slurmd adds up to ~45 characters below DIR.
readonly MAX_DIR_LEN=60
readonly LOCK_FILE=${VIGIL_CLUSTER_LOCK_FILE:-/tmp/vigil-local-cluster.lock}
readonly MARKER="# vigil local cluster"
NODE_CGROUP="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/node-cgroup.sh"
readonly NODE_CGROUP
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
readonly SELF

# shellcheck source-path=SCRIPTDIR source=lib/daemons.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/daemons.sh"

log() { echo "$PROG: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- helpers -------------------------------------------------------------------------------------

abs_dir() { realpath -m -- "$1"; }

# Helper processes of this cluster's daemons: slurmstepd (spawned by slurmd for each job step;
# slurmd does not kill them when it exits) and slurmscriptd (slurmctld's script runner, orphaned
# if slurmctld dies hard). Both hold a log or spool file of DIR open, which is how we know they
# are ours; their command lines do not mention DIR. Usage: helper_pids DIR [COMM]
helper_pids() {
  local dir=$1 only=${2:-} p fd target comm
  for p in /proc/[0-9]*; do
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    [[ $comm == slurmstepd || $comm == slurmscriptd ]] || continue
    [[ -z $only || $comm == "$only" ]] || continue
    for fd in "$p"/fd/*; do
      target=$(readlink "$fd" 2>/dev/null) || continue
      if [[ $target == "$dir"/* ]]; then
        echo "${p#/proc/}"
        break
      fi
    done
  done
}

# Daemons (COMM: slurmd, slurmctld) started with this cluster's slurm.conf, recorded or not: a
# slurmd the local reboot (scripts/lib/local-reboot.sh) started is recorded only once its pid
# file appears, and a stop in between used to leave it running (found after a CI run,
# 2026-11-27); a slurmctld a test restarted (SlurmTestCluster::start_controller) is never
# recorded. Usage: conf_daemons DIR COMM
conf_daemons() {
  local conf=$1/etc/slurm.conf comm=$2 p cmd
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == "$comm" ]] || continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
    [[ " $cmd " == *" -f $conf "* ]] && echo "${p#/proc/}"
  done
  return 0
}

tail_logs() {
  local dir=$1 f
  for f in "$dir"/log/*.log "$dir"/log/*.out; do
    [[ -s $f ]] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 15 "$f" >&2
  done
}

# --- start ---------------------------------------------------------------------------------------

# Node address of gpu-I with --node-addrs.
node_addr() { echo "127.0.1.$(($1 + 1))"; }

# extra: more words for every node (the production profile's Gres= and RealMemory=).
node_lines() {
  local nodes=$1 node_port=$2 cpus=$3 addrs=$4 extra=${5:-} i
  if ((addrs)); then
    for ((i = 0; i < nodes; i++)); do
      echo "NodeName=gpu-$i NodeHostname=localhost NodeAddr=$(node_addr $i) Port=$((node_port + i)) CPUs=$cpus$extra State=UNKNOWN"
    done
  else
    echo "NodeName=gpu-[0-$((nodes - 1))] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$node_port-$((node_port + nodes - 1))] CPUs=$cpus$extra State=UNKNOWN"
  fi
}

# The production profile's GPUs: DIR/dev/gpu-i/nvidia0 .. nvidia(G-1), character devices with
# NVIDIA's major 195 (the driver's fixed major, NV_MAJOR_DEVICE_NUMBER in the open kernel
# module) and the minor i*G+j, distinct across the simulated nodes because the device cgroup
# matches major:minor, not the path. No driver is behind them: an open the cgroup allows fails
# with ENXIO, one it denies with EPERM (measured with Slurm 22.05 and 24.11.5, the wave-4
# review's W1; tests/integration/production_slurm_test.cpp), which is what the fake NVML and CUDA
# stand-ins read (VIGIL_FAKE_GPU_DEV_DIR).
make_gpu_devices() {
  local dir=$1 nodes=$2 gpus=$3 i j
  for ((i = 0; i < nodes; i++)); do
    mkdir -p "$dir/dev/gpu-$i"
    for ((j = 0; j < gpus; j++)); do
      [[ -c $dir/dev/gpu-$i/nvidia$j ]] || mknod -m 0666 "$dir/dev/gpu-$i/nvidia$j" c 195 $((i * gpus + j))
    done
  done
}

# gres.conf: each node's GPUs by file, as sites without NVML autodetection write it (gres.conf(5)).
write_gres_conf() {
  local dir=$1 nodes=$2 gpus=$3 i
  {
    echo "AutoDetect=off"
    for ((i = 0; i < nodes; i++)); do
      echo "NodeName=gpu-$i Name=gpu File=$dir/dev/gpu-$i/nvidia[0-$((gpus - 1))]"
    done
  } >"$dir/etc/gres.conf"
}

# The slurm.conf lines that differ between the profiles.
profile_lines() {
  if [[ $1 == production ]]; then
    cat <<EOF
# Production profile: what GPU sites run (slurm.conf(5), cgroup.conf(5), gres.conf(5)). Each
# slurmd has its own cgroup tree (scripts/lib/node-cgroup.sh).
ProctrackType=proctrack/cgroup
# Without task/affinity, and ConstrainCores=no in cgroup.conf, unlike most sites: the simulated
# nodes share the host's cores, and binding or confining each node's first task to its first CPU
# puts every node's rank on host core 0 (measured: the NVLink domain test's host all_reduce pairs
# fell from above 1.71 to 0.92 GB/s). What Vigil depends on, the device constraint, is kept.
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/cgroup
PrologFlags=Alloc,Contain
GresTypes=gpu
# Slurm's defaults, written out (slurm.conf(5)).
SlurmdTimeout=300
SlurmctldTimeout=120
MessageTimeout=10
KillWait=30
ResumeTimeout=60
EOF
  else
    cat <<EOF
# Bare profile: no cgroups (several slurmd share one host), no GRES, short timeouts.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SlurmdTimeout=30
SlurmctldTimeout=30
MessageTimeout=20
KillWait=5
EOF
  fi
}

write_slurm_conf() {
  local dir=$1 nodes=$2 ctld_port=$3 node_port=$4 rest=$5 extra=${6:-} addrs=${7:-0}
  local profile=${8:-bare} gpus=${9:-0} cpus major minor node_extra="" mem
  # At least 2 CPUs per node, so a job can hold 2 MPI slots even on a 1-core runner
  # (config_overrides makes slurmd report the configured, not the detected, hardware).
  cpus=$(nproc)
  ((cpus >= 2)) || cpus=2
  if [[ $profile == production ]]; then
    # ConstrainRAMSpace limits a job that asks for no memory to its node's RealMemory; the
    # default (1 MB) would kill every job. Half the host's memory, shared out.
    mem=$(($(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) / 2 / nodes))
    ((mem >= 512)) || mem=512
    # Features: what a site declares its nodes to be (slurm.conf(5) "Features"); the drainer's
    # hardware classes read them (docs/thresholds.md "Classes").
    node_extra=" RealMemory=$mem Gres=gpu:$gpus Features=sim,ib"
  fi
  cat >"$dir/etc/slurm.conf" <<EOF
$MARKER in $dir (generated by scripts/$PROG; test/demo only)
ClusterName=vigil
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$node_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/etc/plugstack.conf
TmpFS=$dir/tmp
$(profile_lines "$profile")
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# mpirun inside an allocation starts its daemons with plain srun; srun --mpi=pmix does not work
# with several slurmd on one host.
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
InactiveLimit=0
MailProg=/bin/true
PropagateResourceLimits=NONE
$( ((rest)) && jwt_conf_lines "$dir/etc/jwt.key")
$(node_lines "$nodes" "$node_port" "$cpus" "$addrs" "$node_extra")
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
# Hidden partition for health-check jobs (the drainer's re-check path uses it).
PartitionName=vigil Nodes=ALL Hidden=YES MaxTime=INFINITE State=UP PriorityTier=10
EOF
  if [[ -n $extra ]]; then
    {
      echo "# --extra-conf $extra"
      cat "$extra"
    } >>"$dir/etc/slurm.conf"
  fi
  : >"$dir/etc/plugstack.conf"
  # slurmd of 23.11 and newer initialises a cgroup plugin even with proctrack/linuxproc and
  # task/none, and fails where it cannot (several slurmd in one container); say there is none.
  # (22.05 has no such setting and needs no cgroup.conf.)
  local version
  version=$(slurmd -V | sed -n 's/^slurm[^0-9]*\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  read -r major minor <<<"$version"
  if [[ $profile == production ]]; then
    # The host's cgroup v1 hierarchies (node-cgroup.sh probe refuses anything else), named
    # rather than autodetected: Slurm does not support hybrid hosts (cgroups.html), and this
    # one also mounts an empty cgroup2 at /sys/fs/cgroup/unified.
    cat >"$dir/etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
ConstrainDevices=yes
# Not yes, as most sites set it: every simulated node's CPU 0 is the host's core 0 (slurm.conf).
ConstrainCores=no
ConstrainRAMSpace=yes
EOF
    write_gres_conf "$dir" "$nodes" "$gpus"
  elif ((10#${major:-0} > 23 || (10#${major:-0} == 23 && 10#${minor:-0} >= 11))); then
    echo "CgroupPlugin=disabled" >"$dir/etc/cgroup.conf"
  fi
}

write_env() {
  local dir=$1 nodes=$2 rest_port=$3
  cat >"$dir/env" <<EOF
# source this file to talk to the local Vigil test cluster in $dir
export SLURM_CONF=$dir/etc/slurm.conf
export VIGIL_CLUSTER_DIR=$dir
export VIGIL_CLUSTER_NODES='gpu-[0-$((nodes - 1))]'
export VIGIL_CLUSTER_NODE_COUNT=$nodes
EOF
  if ((rest_port)); then
    cat >>"$dir/env" <<EOF
export VIGIL_SLURMRESTD_URL=http://127.0.0.1:$rest_port
export VIGIL_SLURM_JWT_FILE=$dir/etc/jwt.token
EOF
  fi
}

# Node name -> state for the default partition, "gpu-0 idle" lines.
node_states() { SLURM_CONF=$1/etc/slurm.conf timeout 20 sinfo -h -N -p gpu -o '%N %T' 2>/dev/null; }

# During start the daemons are our own children, so their PIDs cannot be recycled yet; a dead
# one is a zombie until we exit.
check_alive() {
  local dir=$1 pid name
  while read -r _ pid name; do
    pid_alive "$pid" || {
      log "error: $name (pid $pid) exited during start"
      return 1
    }
  done <"$dir/run/pids"
}

# The --owner watcher (see the header): exits by itself once the cluster is stopped or DIR gone.
watch_owner() { # DIR PID
  local dir=$1 owner=$2
  # shellcheck disable=SC2016 # expanded by the watcher's own bash
  # The owner is gone once /proc has no such process or it is a zombie (a parent that has not
  # reaped it yet; kill -0 would still succeed).
  setsid bash -c 'while stat=$(cat "/proc/$1/stat" 2>/dev/null) && [[ ${stat##*) } != Z* ]]; do
      [[ -d $2 && ! -f $2/run/pids.stopped ]] || exit 0
      sleep 1
    done
    echo "owner $1 is gone: stopping the cluster"
    exec bash "$3" stop "$2" --clean' vigil-owner-watch "$owner" "$dir" "$SELF" \
    </dev/null >>"$dir/log/owner-watch.log" 2>&1 &
  echo "$!" >"$dir/run/watcher.pid"
}

# Ends the watcher of DIR unless it is the one stopping the cluster (it execs stop: same pid).
# Only a process that is still DIR's watcher (its command line says so) is signalled: a pid left
# in the file may have been reused.
end_owner_watch() { # DIR
  local pid cmd
  pid=$(cat "$1/run/watcher.pid" 2>/dev/null) || return 0
  rm -f "$1/run/watcher.pid"
  [[ $pid =~ ^[0-9]+$ && $pid != "$$" ]] || return 0
  cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 0
  [[ $cmd == *" vigil-owner-watch "*" $1 "* ]] || return 0
  kill -- "-$pid" 2>/dev/null || true  # its session's group: the loop and its sleep
}

fail_start() {
  local dir=$1
  shift
  log "error: $*"
  tail_logs "$dir"
  log "stopping what was started; state kept in $dir for inspection"
  cmd_stop "$dir" >/dev/null 2>&1 || true
  exit 1
}

cmd_start() {
  local dir="" nodes=$DEFAULT_NODES timeout=$DEFAULT_TIMEOUT rest=0 extra="" addrs=0
  local profile=${VIGIL_CLUSTER_PROFILE:-production} gpus=8 owner=""
  while [[ $# -gt 0 ]]; do
    case $1 in
      --owner) owner=${2:?--owner needs a pid}; shift 2 ;;
      --owner=*) owner=${1#*=}; shift ;;
      --profile) profile=${2:?--profile needs production or bare}; shift 2 ;;
      --profile=*) profile=${1#*=}; shift ;;
      --gpus) gpus=${2:?--gpus needs a value}; shift 2 ;;
      --gpus=*) gpus=${1#*=}; shift ;;
      --rest) rest=1; shift ;;
      --node-addrs) addrs=1; shift ;;
      --extra-conf) extra=${2:?--extra-conf needs a file}; shift 2 ;;
      --extra-conf=*) extra=${1#*=}; shift ;;
      --nodes) nodes=${2:?--nodes needs a value}; shift 2 ;;
      --nodes=*) nodes=${1#*=}; shift ;;
      --timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
      --timeout=*) timeout=${1#*=}; shift ;;
      -*) die "unknown option $1" ;;
      *) [[ -z $dir ]] || die "only one DIR"; dir=$1; shift ;;
    esac
  done
  [[ -n $dir ]] || usage
  [[ $nodes =~ ^[0-9]+$ && $nodes -ge 1 && $nodes -le 64 ]] || die "--nodes must be 1..64"
  [[ $timeout =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds"
  [[ $profile == production || $profile == bare ]] || die "--profile must be production or bare"
  [[ $gpus =~ ^[0-9]+$ && $gpus -ge 1 && $gpus -le 8 ]] || die "--gpus must be 1..8"
  # NVIDIA's GPU minors are 0..254 (255 is nvidiactl).
  ((nodes * gpus <= 255)) || die "--nodes x --gpus must be at most 255 (one device minor each)"
  [[ -z $extra || -r $extra ]] || die "--extra-conf: cannot read '$extra'"
  [[ -z $owner ]] || { [[ $owner =~ ^[0-9]+$ ]] && kill -0 "$owner" 2>/dev/null; } ||
    die "--owner: no process $owner"
  dir=$(abs_dir "$dir")
  [[ ${#dir} -le $MAX_DIR_LEN ]] ||
    die "DIR '$dir' is ${#dir} characters; use at most $MAX_DIR_LEN (unix socket paths under it must fit in 108 bytes), e.g. mktemp -d /tmp/vigil-cluster.XXXXXX"
  [[ $dir =~ ^[A-Za-z0-9/._+-]+$ ]] || die "DIR '$dir' may contain only letters, digits and / . _ + -"
  for tool in slurmctld slurmd munged mungekey sinfo ss flock setsid; do
    command -v "$tool" >/dev/null || die "$tool not found; run scripts/install-deps.sh"
  done
  if ((rest)); then
    command -v slurmrestd >/dev/null || die "slurmrestd not found; run scripts/install-deps.sh"
  fi
  if [[ -f $dir/run/pids ]] && [[ -n "$(recorded_pids "$dir" slurmctld)" ]]; then
    die "a cluster is already running in $dir (stop it with: $0 stop $dir)"
  fi

  local why
  if [[ $profile == production ]] && ! why=$(bash "$NODE_CGROUP" probe); then
    log "error: the production profile needs cgroups this host does not give: $why"
    log "(tests skip with this reason; --profile bare runs without cgroups)"
    exit 4
  fi
  mkdir -p "$dir"/{etc,munge,state,spool,log,run,tmp}
  # munged insists that everyone may traverse the directories above its socket.
  chmod 0711 "$dir" "$dir/munge"
  rm -f "$dir/run/pids" "$dir/run/pids.stopped" "$dir/run/stopping"
  end_owner_watch "$dir"
  [[ -z $owner ]] || watch_owner "$dir" "$owner"
  for ((i = 0; i < nodes; i++)); do mkdir -p "$dir/spool/gpu-$i"; done
  [[ -f $dir/munge/munge.key ]] || mungekey --create --keyfile "$dir/munge/munge.key" >/dev/null
  chmod 0600 "$dir/munge/munge.key"

  # Port selection and binding happen under a host-wide lock so parallel starts never pick the
  # same ports. fd 9 holds the lock and is closed for every daemon (spawn uses 9>&-).
  exec 9>>"$LOCK_FILE"
  flock -w 300 9 || die "could not take $LOCK_FILE within 300 s (another start hung?)"
  local base ctld_port node_port rest_port=0 last_port
  base=$(pick_ports $((nodes + 1 + rest))) ||
    die "no $((nodes + 1 + rest)) consecutive free TCP ports found"
  ctld_port=$base
  node_port=$((base + 1))
  last_port=$((node_port + nodes - 1))
  if ((rest)); then
    rest_port=$((node_port + nodes))
    last_port=$rest_port
  fi
  if [[ $profile == production ]]; then make_gpu_devices "$dir" "$nodes" "$gpus"; fi
  write_slurm_conf "$dir" "$nodes" "$ctld_port" "$node_port" "$rest" "$extra" "$addrs" "$profile" "$gpus"
  write_env "$dir" "$nodes" "$rest_port"
  cat >"$dir/cluster.info" <<EOF
nodes=$nodes
profile=$profile
gpus_per_node=$([[ $profile == production ]] && echo "$gpus" || echo 0)
slurmctld_port=$ctld_port
slurmd_ports=$node_port-$((node_port + nodes - 1))
slurmrestd_port=$rest_port
started_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOF
  log "starting munged, slurmctld (port $ctld_port) and $nodes slurmd (ports $node_port-$((node_port + nodes - 1))) in $dir"

  spawn "$dir" munged munged munged --foreground --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket.2" --pid-file="$dir/run/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log"
  local sockets=("$dir/munge/munge.socket.2")
  if ((addrs)); then
    for ((i = 0; i < nodes; i++)); do
      spawn "$dir" munged "munged-gpu-$i" munged --foreground --key-file="$dir/munge/munge.key" \
        --socket="$dir/munge/gpu-$i.socket" --pid-file="$dir/run/munged-gpu-$i.pid" \
        --seed-file="$dir/munge/munged-gpu-$i.seed" --log-file="$dir/log/munged-gpu-$i.log" \
        --origin="$(node_addr $i)"
      sockets+=("$dir/munge/gpu-$i.socket")
    done
  fi
  local deadline=$((SECONDS + timeout)) sock
  for sock in "${sockets[@]}"; do
    until [[ -S $sock ]]; do
      check_alive "$dir" || fail_start "$dir" "munged did not start"
      ((SECONDS < deadline)) || fail_start "$dir" "munged socket $sock did not appear within ${timeout}s"
      sleep 0.1
    done
  done

  spawn "$dir" slurmctld slurmctld slurmctld -D -f "$dir/etc/slurm.conf"
  for ((i = 0; i < nodes; i++)); do
    # shellcheck disable=SC2046 # the wrapper's words (none with the bare profile)
    spawn "$dir" slurmd "slurmd-gpu-$i" $(node_wrapper "$dir" "gpu-$i") slurmd -D -N "gpu-$i" -f "$dir/etc/slurm.conf"
  done
  if ((rest)); then
    spawn_slurmrestd "$dir" "$dir/etc/slurm.conf" "$rest_port" ||
      fail_start "$dir" "slurmrestd -s list named no OpenAPI plugin"
  fi
  local p
  for ((p = ctld_port; p <= last_port; p++)); do
    until port_listening "$p"; do
      check_alive "$dir" || fail_start "$dir" "a daemon exited during start"
      ((SECONDS < deadline)) || fail_start "$dir" "port $p not listening within ${timeout}s"
      sleep 0.2
    done
  done
  flock -u 9
  exec 9>&-

  local states idle
  while :; do
    states=$(node_states "$dir" || true)
    idle=$(grep -c ' idle$' <<<"$states" || true)
    [[ $idle -eq $nodes ]] && break
    check_alive "$dir" || fail_start "$dir" "a daemon exited before all nodes were idle"
    ((SECONDS < deadline)) ||
      fail_start "$dir" "only $idle of $nodes nodes idle after ${timeout}s; sinfo says: $(tr '\n' ';' <<<"$states")"
    sleep 0.5
  done
  if ((rest)); then
    write_jwt_token "$dir/etc/slurm.conf" "$dir/etc/jwt.token" ||
      fail_start "$dir" "scontrol token failed (auth/jwt not loaded by slurmctld?)"
  fi
  log "cluster up: $nodes nodes idle; run: source $dir/env"
}

# --- stop / status / env / run -------------------------------------------------------------------

cmd_stop() {
  local dir="" clean=0
  while [[ $# -gt 0 ]]; do
    case $1 in
      --clean) clean=1; shift ;;
      -*) die "unknown option $1" ;;
      *) [[ -z $dir ]] || die "only one DIR"; dir=$1; shift ;;
    esac
  done
  [[ -n $dir ]] || usage
  dir=$(abs_dir "$dir")
  end_owner_watch "$dir"

  if [[ -f $dir/run/pids ]]; then
    local ctld slurmds helpers munged
    # A local reboot in flight (scripts/lib/local-reboot.sh) starts no slurmd from now on.
    touch "$dir/run/stopping"
    ctld=$({ recorded_pids "$dir" slurmctld; conf_daemons "$dir" slurmctld; } | sort -u)
    # Cancel jobs first so slurmstepd tears down the job processes it tracks.
    if [[ -n $ctld ]]; then
      local jobs waited=0
      jobs=$(SLURM_CONF=$dir/etc/slurm.conf timeout 10 squeue -h -o %A 2>/dev/null || true)
      if [[ -n $jobs ]]; then
        # shellcheck disable=SC2086
        SLURM_CONF=$dir/etc/slurm.conf timeout 10 scancel $jobs 2>/dev/null || true
        while ((waited < 100)) && [[ -n "$(helper_pids "$dir" slurmstepd)" ]]; do
          sleep 0.1
          waited=$((waited + 1))
        done
      fi
    fi
    # slurmrestd first: it only talks to slurmctld.
    # shellcheck disable=SC2046
    terminate 5 $(recorded_pids "$dir" slurmrestd)
    slurmds=$({ recorded_pids "$dir" slurmd; conf_daemons "$dir" slurmd; } | sort -u)
    # shellcheck disable=SC2086
    terminate 10 $slurmds
    # shellcheck disable=SC2086
    terminate 15 $ctld
    # Whatever slurmstepd/slurmscriptd outlived their daemons.
    helpers=$(helper_pids "$dir")
    # shellcheck disable=SC2086
    terminate 5 $helpers
    munged=$(recorded_pids "$dir" munged)
    # shellcheck disable=SC2086
    terminate 5 $munged
    mv -f "$dir/run/pids" "$dir/run/pids.stopped"
    # One the reboot started just before the marker above, after the first look.
    # shellcheck disable=SC2046
    terminate 10 $(conf_daemons "$dir" slurmd)
    # The production profile's per-node cgroup trees, and any task still in them.
    bash "$NODE_CGROUP" clean "$dir"
    log "stopped cluster in $dir"
  else
    log "no cluster running in $dir"
  fi
  if ((clean)) && [[ -d $dir ]]; then
    # Only ever delete a directory this script set up.
    if [[ -f $dir/etc/slurm.conf ]] && head -n 1 "$dir/etc/slurm.conf" | grep -q "^$MARKER"; then
      rm -rf -- "$dir"
      log "removed $dir"
    else
      log "warning: $dir does not look like a local cluster dir; not removing it"
    fi
  fi
}

cmd_status() {
  local dir=${1:-}
  [[ -n $dir ]] || usage
  dir=$(abs_dir "$dir")
  if [[ ! -f $dir/run/pids ]]; then
    echo "not running ($dir)"
    return 3
  fi
  local pid name bad=0
  while read -r _ pid name; do
    if pid_is_ours "$pid" "$dir"; then
      printf '%-14s pid %-8s running\n' "$name" "$pid"
    else
      printf '%-14s pid %-8s DEAD (see %s)\n' "$name" "$pid" "$dir/log"
      bad=1
    fi
  done <"$dir/run/pids"
  cat "$dir/cluster.info"
  node_states "$dir" || echo "sinfo failed"
  return $bad
}

cmd_env() {
  local dir=${1:-}
  [[ -n $dir ]] || usage
  dir=$(abs_dir "$dir")
  [[ -f $dir/env ]] || die "no cluster set up in $dir"
  cat "$dir/env"
}

cmd_run() {
  local start_args=()
  RUN_DIR=""
  while [[ $# -gt 0 && $1 != -- ]]; do
    start_args+=("$1")
    [[ $1 == -* || -n $RUN_DIR ]] || RUN_DIR=$1
    case $1 in --nodes | --timeout | --extra-conf | --profile | --gpus) start_args+=("${2:?}"); shift ;; esac
    shift
  done
  [[ $# -gt 1 && -n $RUN_DIR ]] || usage
  shift
  # RUN_DIR is global: the EXIT trap runs after this function's locals are gone.
  trap 'cmd_stop "$RUN_DIR"' EXIT
  trap 'exit 130' INT TERM
  cmd_start "${start_args[@]}"
  # shellcheck disable=SC1091
  source "$(abs_dir "$RUN_DIR")/env"
  local rc=0
  "$@" || rc=$?
  return $rc
}

main() {
  [[ $# -ge 1 ]] || usage
  local cmd=$1
  shift
  case $cmd in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status "$@" ;;
    env) cmd_env "$@" ;;
    run) cmd_run "$@" ;;
    -h | --help | help) usage ;;
    *) log "unknown command '$cmd'"; usage ;;
  esac
}

main "$@"
