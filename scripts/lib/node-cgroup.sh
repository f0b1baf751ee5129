#!/usr/bin/env bash
# The production profile's "node" for one simulated slurmd of the local test cluster
# (docs/local-cluster.md "Profiles"); never for a real node.
#
#   node-cgroup.sh probe                      # exit 0 if this host can give a slurmd its own
#                                             # cgroup tree, else print why and exit 1
#   node-cgroup.sh exec DIR NODE -- CMD...    # run CMD (slurmd) as NODE's own machine
#   node-cgroup.sh clean DIR                  # kill what is left in DIR's cgroups, remove them
#
# A real GPU node runs one slurmd, and Slurm's cgroup plugin builds its tree (slurm/uid_U/job_J/
# step_S) at the root of each cgroup hierarchy. Several slurmd on one host would share that tree:
# two steps of one job on two simulated nodes would land in one freezer cgroup, and the first to
# end would kill the other's tasks. So `exec` gives each slurmd what a node has, its own root:
#  1. it creates DIR's group under the caller's own cgroup in every cgroup v1 hierarchy
#     (vigil-<DIR's name>/<NODE>; cpuset.cpus and .mems copied down, as the kernel requires) and
#     moves itself there;
#  2. it enters a new cgroup namespace (unshare --cgroup), so /proc/self/cgroup starts at that
#     group, and a private mount namespace in which each hierarchy is mounted again at its usual
#     place: a cgroup mount inside a cgroup namespace is rooted at the namespace's root
#     (cgroup_namespaces(7)). Slurm then creates slurm/... inside NODE's group.
#  3. it execs CMD, so CMD keeps the pid spawn recorded.
# Nothing else of the host changes: devices, /proc, the file system and the network are shared.
# cgroup v2 hosts (no v1 hierarchy with controllers) are not handled yet: `probe` says so.
set -euo pipefail

# "TARGET OPTIONS" of every mounted cgroup v1 hierarchy.
v1_mounts() { findmnt -n -l -t cgroup -o TARGET,OPTIONS 2>/dev/null || true; }

# The hierarchy's names (controllers, or name=...) from its mount options.
names_of() {
  local opt out=()
  IFS=, read -ra opts <<<"$1"
  for opt in "${opts[@]}"; do
    case $opt in
      rw | ro | relatime | noatime | nosuid | nodev | noexec | clone_children | xattr) ;;
      release_agent=*) ;;
      *) out+=("$opt") ;;
    esac
  done
  (IFS=,; echo "${out[*]}")
}

# This process's cgroup in the hierarchy named NAMES (field 2 of /proc/self/cgroup).
own_cgroup() {
  local names=$1 ctl path
  while IFS=: read -r _ ctl path; do
    [[ $ctl == "$names" ]] && { echo "${path%/}"; return 0; }
  done </proc/self/cgroup
  return 1
}

# The group of DIR's cluster (NODE empty) or of NODE in the hierarchy mounted at TARGET.
group_path() {
  local target=$1 names=$2 dir=$3 node=${4:-} own
  own=$(own_cgroup "$names") || return 1
  echo "$target$own/vigil-$(basename "$dir")${node:+/$node}"
}

cmd_probe() {
  local found=0 target opts names own test
  [[ $(id -u) == 0 ]] || { echo "not root"; return 1; }
  command -v unshare >/dev/null || { echo "unshare (util-linux) not found"; return 1; }
  while read -r target opts; do
    [[ -n $target ]] || continue
    names=$(names_of "$opts")
    own=$(own_cgroup "$names") || { echo "no entry for $names in /proc/self/cgroup"; return 1; }
    test="$target$own/vigil-probe-$$"
    mkdir "$test" 2>/dev/null || { echo "cannot create a cgroup under $target$own (read-only or not delegated)"; return 1; }
    rmdir "$test"
    [[ $names == *devices* ]] && found=1
  done < <(v1_mounts)
  if ((!found)); then
    echo "no cgroup v1 devices hierarchy (a cgroup v2-only host: the per-node trees are not implemented there yet)"
    return 1
  fi
  unshare --cgroup --mount --propagation unchanged true 2>/dev/null || { echo "cannot create cgroup and mount namespaces (unshare --cgroup --mount)"; return 1; }
  # Slurm's cgroup v1 plugin, where distributions install Slurm's plugins (Debian:
  # /usr/lib/<triplet>/slurm-wlm; upstream builds: <prefix>/lib/slurm).
  if ! compgen -G "/usr/lib/*/slurm-wlm/cgroup_v1.so" >/dev/null &&
    ! compgen -G "/usr/lib*/slurm/cgroup_v1.so" >/dev/null &&
    ! compgen -G "/usr/local/lib*/slurm/cgroup_v1.so" >/dev/null; then
    echo "this Slurm has no cgroup/v1 plugin (cgroup_v1.so), and the host offers only cgroup v1"
    return 1
  fi
  echo "cgroup v1 with devices: per-node cgroup trees available"
}

cmd_exec() {
  local dir=$1 node=$2 target opts names group parent mounts=()
  shift 2
  [[ ${1:-} == -- ]] && shift
  [[ $# -gt 0 ]] || { echo "node-cgroup.sh exec: no command" >&2; exit 2; }
  # Already inside this node's namespaces: a local reboot (scripts/lib/local-reboot.sh) is run by
  # the node's slurmd and starts the new slurmd from there, which is where it belongs. The node's
  # cgroup namespace is the one recorded when it was made (PID 1's cannot always be read).
  local ns_file=$dir/run/cgroupns-$node
  if [[ -s $ns_file && $(readlink /proc/self/ns/cgroup) == "$(<"$ns_file")" ]]; then exec "$@"; fi
  while read -r target opts; do
    [[ -n $target ]] || continue
    names=$(names_of "$opts")
    group=$(group_path "$target" "$names" "$dir" "$node")
    parent=$(dirname "$group")
    mkdir -p "$group"
    if [[ $names == *cpuset* ]]; then
      # A new cpuset group starts empty, and a task cannot join an empty one.
      for f in cpuset.cpus cpuset.mems; do
        [[ -s $parent/$f && -n $(<"$parent/$f") ]] || cat "$(dirname "$parent")/$f" >"$parent/$f"
        [[ -n $(<"$group/$f") ]] || cat "$parent/$f" >"$group/$f"
      done
    fi
    echo $$ >"$group/cgroup.procs"
    # What `clean` removes, whatever cgroup it runs from.
    grep -qxF "$(dirname "$group")" "$dir/run/cgroups" 2>/dev/null || dirname "$group" >>"$dir/run/cgroups"
    mounts+=("$target" "$names")
  done < <(v1_mounts)
  # In the new namespaces: mount each hierarchy again (now rooted at NODE's group), then CMD.
  # Propagation is made private for the cgroup mounts only: unshare's default makes "/" private,
  # which fails inside a chroot whose "/" is no mount point (scripts/slurm-root.sh).
  # shellcheck disable=SC2016 # expanded by the inner bash
  exec unshare --cgroup --mount --propagation unchanged bash -c '
    set -e
    readlink /proc/self/ns/cgroup >"$1"
    shift
    while [[ $1 != -- ]]; do
      # Private first: the mount that holds it (whatever it is) and, with it, the hierarchy, so
      # that neither the umount nor the new mount reaches the host through a shared peer.
      mount --make-rprivate "$(findmnt -n -o TARGET -T "$(dirname "$1")")"
      umount "$1"
      mount -t cgroup -o "$2" cgroup "$1"
      shift 2
    done
    shift
    exec "$@"' node-cgroup "$ns_file" "${mounts[@]}" -- "$@"
}

cmd_clean() {
  local dir=$1 group pids
  [[ -f $dir/run/cgroups ]] || return 0
  while read -r group; do
    [[ -n $group && $group == */vigil-"$(basename "$dir")" && -d $group ]] || continue
    # Whatever still runs in the cluster's groups belongs to it (a job's task that outlived its
    # slurmstepd): KILL, then remove the groups deepest first.
    for _ in 1 2 3 4 5; do
      pids=$(find "$group" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
      [[ -z $pids ]] && break
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 0.2
    done
    find "$group" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [[ ! -d $group ]] || echo "node-cgroup.sh: could not remove $group" >&2
  done <"$dir/run/cgroups"
  rm -f "$dir/run/cgroups"
}

case ${1:-} in
  probe) cmd_probe ;;
  exec) shift; cmd_exec "$@" ;;
  clean) cmd_clean "${2:?clean needs DIR}" ;;
  *) sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
