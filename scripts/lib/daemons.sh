# shellcheck shell=bash
# Shell helpers shared by the scripts that start private Slurm daemons: scripts/local-cluster.sh
# and tests/bench/drainer_fleet/fleet-cluster.sh. Source it; the caller defines log().
# A cluster directory DIR keeps run/pids ("ROLE PID [NAME]" per line) and log/.

# True when PID is alive and its command line mentions DIR (guards against recycled PIDs).
pid_is_ours() {
  local pid=$1 dir=$2 cmdline
  [[ -r /proc/$pid/cmdline ]] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmdline == *"$dir/"* ]]
}

port_listening() { [[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]]; }

# Local TCP ports in use (any state), one per line.
used_ports() { ss -Htan 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}' | sort -un; }

# Picks COUNT consecutive ports that no socket on this host uses, below the ephemeral range (so
# outgoing connections cannot grab them between our check and the daemons' bind).
pick_ports() {
  local count=$1 eph_lo lo hi used base i ok tries
  read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range
  hi=$((eph_lo < 32000 ? eph_lo : 32000))
  lo=$((hi - 12000 > 1024 ? hi - 12000 : 1024))
  used=" $(used_ports | tr '\n' ' ') "
  for ((tries = 0; tries < 200; tries++)); do
    base=$((lo + RANDOM % (hi - lo - count)))
    ok=1
    for ((i = 0; i < count; i++)); do
      if [[ $used == *" $((base + i)) "* ]]; then
        ok=0
        break
      fi
    done
    if ((ok)); then
      echo "$base"
      return 0
    fi
  done
  return 1
}

# True while PID exists and is not a zombie. kill -0 is not enough: a stopped daemon is an
# orphan, and its zombie lingers until PID 1 reaps it (slowly, in some containers).
pid_alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && ${state:0:1} != Z ]]
}

# Sends TERM to the given PIDs, waits up to GRACE seconds, then KILLs what is left.
terminate() {
  local grace=$1 pid waited=0 alive
  shift
  [[ $# -gt 0 ]] || return 0
  kill -TERM "$@" 2>/dev/null || true
  while ((waited < grace * 10)); do
    alive=0
    for pid in "$@"; do
      if pid_alive "$pid"; then alive=1; fi
    done
    ((alive)) || return 0
    sleep 0.1
    waited=$((waited + 1))
  done
  for pid in "$@"; do
    if pid_alive "$pid"; then
      log "pid $pid did not exit on TERM within ${grace}s, sending KILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
}

# PIDs recorded for ROLE (munged, slurmctld, slurmd) that are still ours.
recorded_pids() {
  local dir=$1 role=$2 r pid
  [[ -f $dir/run/pids ]] || return 0
  while read -r r pid _; do
    [[ $r == "$role" ]] || continue
    pid_is_ours "$pid" "$dir" && echo "$pid"
  done <"$dir/run/pids"
  return 0
}

# Starts a daemon in its own session (so a terminal's Ctrl-C reaches the caller's trap, which
# then stops the cluster in order) with no inherited descriptors but its log.
spawn() {
  local dir=$1 role=$2 name=$3
  shift 3
  setsid "$@" </dev/null >>"$dir/log/$name.out" 2>&1 9>&- &
  echo "$role $! $name" >>"$dir/run/pids"
}

# JWT authentication for slurmrestd (docs/slurm-compat.md). The slurm.conf lines that turn it on,
# with the HS256 key at KEYFILE (created here: random bytes, readable by root only).
jwt_conf_lines() {
  local key=$1
  [[ -f $key ]] || (umask 077 && head -c 32 /dev/urandom >"$key")
  printf 'AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key=%s\n' "$key"
}

# Starts slurmrestd for CONF on 127.0.0.1:PORT with JWT auth, recorded as role slurmrestd.
# It refuses to run as root or SlurmUser, so it runs as nobody; SLURM_JWT=daemon makes it pass
# each client's token on to slurmctld. Only the slurmctld APIs are loaded (no slurmdbd here):
# the plugin names differ by release (openapi/v0.0.38 on 22.05, openapi/slurmctld on 24.11).
# nobody is passed by number: 26.05's slurmrestd refuses the name ("Unable to resolve user:
# nobody") while every release takes the uid.
spawn_slurmrestd() {
  local dir=$1 conf=$2 port=$3 plugins uid gid
  uid=$(id -u nobody) && gid=$(getent group nogroup | cut -d: -f3) || return 1
  plugins=$(setpriv --reuid="$uid" --regid="$gid" --clear-groups slurmrestd -f "$conf" -s list 2>&1 |
    sed -n 's/^\(slurmrestd: \)\{0,1\}\(openapi\/[^ ]*\)$/\2/p' | grep -v 'db' | sort | paste -sd, -)
  [[ -n $plugins ]] || return 1
  spawn "$dir" slurmrestd slurmrestd env SLURM_JWT=daemon slurmrestd -f "$conf" \
    -a rest_auth/jwt -s "$plugins" -u "$uid" -g "$gid" "127.0.0.1:$port"
}

# Writes a JWT for root (a day long), as an operator gets it from `scontrol token`, to OUT.
write_jwt_token() {
  local conf=$1 out=$2 token
  token=$(SLURM_CONF=$conf timeout 20 scontrol token username=root lifespan=86400) || return 1
  (umask 077 && echo "${token#SLURM_JWT=}" >"$out")
}

# The words that start a simulated node's slurmd: the production profile's node-cgroup.sh (its
# own cgroup tree, docs/local-cluster.md "Profiles"), nothing with the bare one. The profile is
# the one DIR/cluster.info records, so a local reboot restarts the node as it was started.
node_wrapper() {
  local dir=$1 node=$2
  if grep -qx 'profile=production' "$dir/cluster.info" 2>/dev/null; then
    echo bash "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/node-cgroup.sh" exec "$dir" "$node" --
  fi
}
