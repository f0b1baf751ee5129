#!/bin/sh
# mpirun inside the fabric's head namespace, starting ranks in the node namespaces through
# netns_rsh.sh, over TCP on eth0 only (VIGIL_NETNS_HEAD, VIGIL_NETNS_MAP set by the test).
# Every namespace shares this machine's few cores: a round runs up to k ranks at once, and an
# Open MPI rank that spins while it waits would take the CPU from the rank whose data it waits
# for, so the figures measure the scheduler instead of the shaped links (CI: 2 cores, 6 ranks).
# mpi_yield_when_idle makes a waiting rank give its core up.
# The head namespace has its own TMPDIR too, like every node namespace (netns_rsh.sh says why).
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(dirname "$VIGIL_NETNS_MAP")/tmp-$VIGIL_NETNS_HEAD
mkdir -p "$tmp"
exec ip netns exec "$VIGIL_NETNS_HEAD" env TMPDIR="$tmp" mpirun \
  --mca plm_rsh_agent "$here/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
  --mca pml ob1 --mca mpi_yield_when_idle 1 "$@"
