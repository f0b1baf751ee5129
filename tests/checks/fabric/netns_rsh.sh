#!/bin/sh
# mpirun's remote shell for the namespace fabric (plm_rsh_agent): "host command..." runs the
# command inside the namespace whose eth0 has that address (VIGIL_NETNS_MAP: "ip ns" lines).
host=$1
shift
ns=$(awk -v h="$host" '$1 == h {print $2}' "$VIGIL_NETNS_MAP")
[ -n "$ns" ] || { echo "netns_rsh.sh: no namespace for $host" >&2; exit 255; }
exec ip netns exec "$ns" /bin/sh -c "$*"
