#!/bin/sh
# mpirun inside the fabric's head namespace, starting ranks in the node namespaces through
# netns_rsh.sh, over TCP on eth0 only (VIGIL_NETNS_HEAD, VIGIL_NETNS_MAP set by the test).
here=$(cd "$(dirname "$0")" && pwd)
exec ip netns exec "$VIGIL_NETNS_HEAD" mpirun \
  --mca plm_rsh_agent "$here/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
  --mca pml ob1 "$@"
