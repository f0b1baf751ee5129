#!/bin/sh
# mpirun's remote shell for the namespace fabric (plm_rsh_agent): "host command..." runs the
# command inside the namespace whose eth0 has that address (VIGIL_NETNS_MAP: "ip ns" lines).
# Each namespace gets its own TMPDIR, as each real node has its own /tmp. Every namespace shares
# this machine's hostname, so without it the Open MPI daemons of all pairs share one session
# tree, /tmp/ompi.<hostname>.<uid>, which a daemon removes when it finds it empty as it exits.
# The CI failure ("round 3 ...: mpirun: timed out") reproduced here (1 hang in 12 runs of the
# leaf test): one pair's second daemon had never reported to its mpirun and was gone, its mpirun
# waiting; the daemons of the previous round were exiting as it started. A daemon that cannot
# create its session directory exits (the race of the Open MPI users list thread
# "opal_os_dirpath_create: Error: Unable to create the sub-directory", 2014-02), and a daemonized
# one does so silently. With a TMPDIR per namespace: no hang in 10 runs (docs/fabric.md).
host=$1
shift
ns=$(awk -v h="$host" '$1 == h {print $2}' "$VIGIL_NETNS_MAP")
[ -n "$ns" ] || { echo "netns_rsh.sh: no namespace for $host" >&2; exit 255; }
tmp=$(dirname "$VIGIL_NETNS_MAP")/tmp-$ns
mkdir -p "$tmp"
exec ip netns exec "$ns" env TMPDIR="$tmp" /bin/sh -c "$*"
