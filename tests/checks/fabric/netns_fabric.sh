#!/usr/bin/env bash
# A small two-level fabric made of network namespaces, for the fabric tests (docs/fabric.md):
#   netns_fabric.sh up PREFIX LEAVES NODES_PER_LEAF RATE   build it; prints "node <ip> <leaf>" lines
#   netns_fabric.sh shape-node PREFIX NODE RATE             slow one node's link (both directions)
#   netns_fabric.sh shape-leaf PREFIX LEAF RATE             slow one leaf's uplink (both directions)
#   netns_fabric.sh down PREFIX                             remove everything it made
# Each node is a namespace ${PREFIX}n<i> with eth0 = 10.<net>.0.<i+1>/24, cabled by a veth pair to
# its leaf's bridge ${PREFIX}l<j>; every leaf bridge has an uplink veth pair to the spine bridge
# ${PREFIX}s, non-blocking (NODES_PER_LEAF x RATE). The head namespace ${PREFIX}hd (10.<net>.0.254, on the spine) runs mpirun. Every
# link is shaped to RATE (tc tbf), so the CPU is not the bottleneck on a small machine; a slow node
# or leaf gets a lower rate. Bridges and uplinks live in the caller's namespace but carry no
# address: every address exists only inside the namespaces made here.
set -euo pipefail
cmd=$1 prefix=$2
net=$(( ($(printf '%d' "'${prefix: -1}") + ${#prefix}) % 50 + 150 ))  # 10.150-199.0.0/24

shape() {  # shape DEV RATE [NETNS]   (RATE in mbit)
  local dev=$1 rate=$2 ns=${3:-}
  local run=(); [ -n "$ns" ] && run=(ip netns exec "$ns")
  # tbf refills its bucket once per timer tick, so a burst below rate/HZ caps the link under its
  # rate (64 KB at HZ 250 is ~130 mbit whatever the rate): two ticks' worth at HZ 250, >= 64 KB.
  local burst=$(( ${rate%mbit} * 1000 ))
  (( burst < 65536 )) && burst=65536
  "${run[@]}" tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 200ms
}

case "$cmd" in
  up)
    leaves=$3 per=$4 rate=$5  # RATE in mbit, e.g. 400mbit
    ip link add "${prefix}s" type bridge && ip link set "${prefix}s" up
    ip netns add "${prefix}hd"
    ip link add "${prefix}H" type veth peer name eth0 netns "${prefix}hd"
    ip link set "${prefix}H" master "${prefix}s" up
    ip netns exec "${prefix}hd" ip addr add "10.$net.0.254/24" dev eth0
    ip netns exec "${prefix}hd" ip link set eth0 up
    ip netns exec "${prefix}hd" ip link set lo up
    for ((j = 0; j < leaves; j++)); do
      ip link add "${prefix}l$j" type bridge && ip link set "${prefix}l$j" up
      ip link add "${prefix}u$j" type veth peer name "${prefix}U$j"
      ip link set "${prefix}u$j" master "${prefix}l$j" up
      ip link set "${prefix}U$j" master "${prefix}s" up
      up_rate=$((${rate%mbit} * per))mbit
      shape "${prefix}u$j" "$up_rate"; shape "${prefix}U$j" "$up_rate"
      for ((k = 0; k < per; k++)); do
        i=$((j * per + k))
        ip netns add "${prefix}n$i"
        ip link add "${prefix}h$i" type veth peer name eth0 netns "${prefix}n$i"
        ip link set "${prefix}h$i" master "${prefix}l$j" up
        ip netns exec "${prefix}n$i" ip addr add "10.$net.0.$((i + 1))/24" dev eth0
        ip netns exec "${prefix}n$i" ip link set eth0 up
        ip netns exec "${prefix}n$i" ip link set lo up
        shape "${prefix}h$i" "$rate"; shape eth0 "$rate" "${prefix}n$i"
        echo "node 10.$net.0.$((i + 1)) leaf$j ${prefix}n$i"
      done
    done
    echo "head 10.$net.0.254 ${prefix}hd"
    ;;
  shape-node)
    i=$3 rate=$4
    shape "${prefix}h$i" "$rate"; shape eth0 "$rate" "${prefix}n$i"
    ;;
  shape-leaf)
    j=$3 rate=$4
    shape "${prefix}u$j" "$rate"; shape "${prefix}U$j" "$rate"
    ;;
  down)
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^${prefix}(n[0-9]+|hd)$" || true); do
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns"
    done
    for dev in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 |
                 grep -E "^${prefix}(s|H|l[0-9]+|u[0-9]+|U[0-9]+|h[0-9]+)$" || true); do
      ip link del "$dev" 2>/dev/null || true
    done
    ;;
  *) echo "usage: $0 up|shape-node|shape-leaf|down PREFIX ..." >&2; exit 2 ;;
esac
