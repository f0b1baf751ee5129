#!/bin/sh
# Regenerates the InfiniBand sysfs fixture trees used by tests/checks/ib and the local-cluster
# demo. The output is committed; run this only to change the fixtures, then review the diff.
#
#   scripts/make-ib-fixtures.sh            # from the repository root
#
# Layout mirrors Linux sysfs (Documentation/ABI/stable/sysfs-class-infiniband):
#   <root>/sys/class/infiniband/<hca>/ports/<n>/{state,phys_state,rate,link_layer,counters/*}
# Real sysfs has symlinks and many more files; the checks read only these.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
sysfs_fixtures="$repo/tests/fixtures/sysfs"
node_fixtures="$repo/tests/fixtures/nodes"

COUNTERS="symbol_error link_error_recovery link_downed port_rcv_errors
port_rcv_remote_physical_errors local_link_integrity_errors excessive_buffer_overrun_errors
port_xmit_discards"

# port ROOT HCA PORT STATE PHYS_STATE RATE LINK_LAYER [COUNTER=VALUE ...]
# Counters default to 0; extra COUNTER=VALUE arguments override single counters.
port() {
  root=$1 hca=$2 num=$3 state=$4 phys=$5 rate=$6 layer=$7
  shift 7
  dir="$root/sys/class/infiniband/$hca/ports/$num"
  mkdir -p "$dir/counters"
  printf '%s\n' "$state" >"$dir/state"
  printf '%s\n' "$phys" >"$dir/phys_state"
  printf '%s\n' "$rate" >"$dir/rate"
  printf '%s\n' "$layer" >"$dir/link_layer"
  for c in $COUNTERS; do printf '0\n' >"$dir/counters/$c"; done
  for kv in "$@"; do printf '%s\n' "${kv#*=}" >"$dir/counters/${kv%%=*}"; done
}

# RoCE port counters (mlx5 hw_counters/, drivers/infiniband/hw/mlx5/counters.c), the ones
# ib_counters reads on a SKU whose fabric is Ethernet.
HW_COUNTERS="out_of_sequence packet_seq_err local_ack_timeout_err rnr_nak_retry_err np_cnp_sent
rp_cnp_handled"

# roce_port ROOT HCA PORT STATE PHYS_STATE RATE [HW_COUNTER=VALUE ...]: an Ethernet (RoCE) port
# with the IB counters at 0 and hw_counters/ besides.
roce_port() {
  root=$1 hca=$2 num=$3 state=$4 phys=$5 rate=$6
  shift 6
  port "$root" "$hca" "$num" "$state" "$phys" "$rate" Ethernet
  dir="$root/sys/class/infiniband/$hca/ports/$num"
  mkdir -p "$dir/hw_counters"
  for c in $HW_COUNTERS; do printf '0\n' >"$dir/hw_counters/$c"; done
  for kv in "$@"; do printf '%s\n' "${kv#*=}" >"$dir/hw_counters/${kv%%=*}"; done
}

ACTIVE="4: ACTIVE"
DOWN="1: DOWN"
LINK_UP="5: LinkUp"
POLLING="2: Polling"
NDR="400 Gb/sec (4X NDR)"

# healthy_ndr ROOT [HCA COUNTER=VALUE]: 8 single-port NDR HCAs mlx5_0..mlx5_7, all ACTIVE.
healthy_ndr() {
  root=$1
  special_hca=${2:-}
  special_counter=${3:-}
  for i in 0 1 2 3 4 5 6 7; do
    if [ "mlx5_$i" = "$special_hca" ]; then
      port "$root" "mlx5_$i" 1 "$ACTIVE" "$LINK_UP" "$NDR" InfiniBand "$special_counter"
    else
      port "$root" "mlx5_$i" 1 "$ACTIVE" "$LINK_UP" "$NDR" InfiniBand
    fi
  done
}

rm -rf "$sysfs_fixtures"
mkdir -p "$sysfs_fixtures"

# Healthy 8x NDR plus a front-end Ethernet (RoCE) port that is down and has errors: the checks
# must ignore it because its link_layer is Ethernet.
healthy_ndr "$sysfs_fixtures/healthy_8x_ndr"
port "$sysfs_fixtures/healthy_8x_ndr" mlx5_8 1 "$DOWN" "3: Disabled" "100 Gb/sec (4X EDR)" \
  Ethernet symbol_error=999 link_downed=7

# mlx5_3 port 1 lost its link (cable pulled: physical state Polling) and counted one link-down.
root="$sysfs_fixtures/one_port_down"
for i in 0 1 2 4 5 6 7; do port "$root" "mlx5_$i" 1 "$ACTIVE" "$LINK_UP" "$NDR" InfiniBand; done
port "$root" mlx5_3 1 "$DOWN" "$POLLING" "10 Gb/sec (4X SDR)" InfiniBand link_downed=1

# mlx5_1 port 1 trained at 2X instead of 4X width: 200 instead of 400 Gb/s.
root="$sysfs_fixtures/reduced_rate"
for i in 0 2 3 4 5 6 7; do port "$root" "mlx5_$i" 1 "$ACTIVE" "$LINK_UP" "$NDR" InfiniBand; done
port "$root" mlx5_1 1 "$ACTIVE" "$LINK_UP" "200 Gb/sec (2X NDR)" InfiniBand

# Climbing symbol errors on mlx5_0 port 1: 5 at the first reading, 125 at the second (+120).
healthy_ndr "$sysfs_fixtures/symbol_errors_before" mlx5_0 symbol_error=5
healthy_ndr "$sysfs_fixtures/symbol_errors_after" mlx5_0 symbol_error=125

# A RoCE compute fabric (8x 400GbE ConnectX-7, e.g. Spectrum-X): healthy with some congestion
# notifications, then mlx5_2 counts out-of-sequence packets and ACK timeouts and mlx5_5 lost its
# link. An InfiniBand port beside them must be ignored on such a SKU.
for t in roce_before roce_after; do
  root="$sysfs_fixtures/$t"
  for i in 0 1 3 4 6 7; do roce_port "$root" "mlx5_$i" 1 "$ACTIVE" "$LINK_UP" "$NDR" np_cnp_sent=40; done
  port "$root" mlx5_8 1 "$DOWN" "$POLLING" "10 Gb/sec (4X SDR)" InfiniBand
done
roce_port "$sysfs_fixtures/roce_before" mlx5_2 1 "$ACTIVE" "$LINK_UP" "$NDR" out_of_sequence=10
roce_port "$sysfs_fixtures/roce_before" mlx5_5 1 "$ACTIVE" "$LINK_UP" "$NDR"
roce_port "$sysfs_fixtures/roce_after" mlx5_2 1 "$ACTIVE" "$LINK_UP" "$NDR" out_of_sequence=5010 \
  local_ack_timeout_err=3
roce_port "$sysfs_fixtures/roce_after" mlx5_5 1 "$DOWN" "$POLLING" "10 Gb/sec (4X SDR)"

# Per-node demo roots for the local cluster gpu-[0-3]: all healthy 8x NDR (gpu-2's fault is an
# NVML one). Only the sysfs/ subtree is ours; nvml.json next to it belongs to the NVML fixtures.
for n in 0 1 2 3; do
  rm -rf "$node_fixtures/gpu-$n/sysfs"
  healthy_ndr "$node_fixtures/gpu-$n/sysfs"
done

echo "wrote $sysfs_fixtures and $node_fixtures/gpu-[0-3]/sysfs"
