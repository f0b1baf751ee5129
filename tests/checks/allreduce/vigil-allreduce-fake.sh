#!/bin/sh
# Test stand-in for vigil-allreduce (its name starts with "vigil-allreduce", so the checks treat
# it as Vigil's own and read --json): writes a one-row result at FAKE_BUSBW GB/s with the NCCL
# configuration-file settings in FAKE_CONF_TUNING ("NAME=value (file)", one) and the removed
# inherited ones in FAKE_ENV_REMOVED, NCCL's choice at 1 GiB in FAKE_ALGO ("NVLS/Simple"), and
# what NCCL connected over in FAKE_TRANSPORT (the nccl_transport JSON object).
json=
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json=$2; shift 2 ;;
    *) shift ;;
  esac
done
[ -n "$json" ] || { echo "no --json" >&2; exit 2; }
conf=; [ -n "${FAKE_CONF_TUNING:-}" ] && conf=", \"nccl_conf_tuning\": [\"$FAKE_CONF_TUNING\"]"
removed=; [ -n "${FAKE_ENV_REMOVED:-}" ] && removed=", \"nccl_env_removed\": [\"$FAKE_ENV_REMOVED\"]"
algos=; [ -n "${FAKE_ALGO:-}" ] && algos=", \"nccl_algorithms\": [{\"size_bytes\": 1073741824, \"algorithm\": \"${FAKE_ALGO%/*}\", \"protocol\": \"${FAKE_ALGO#*/}\"}]"
transport=; [ -n "${FAKE_TRANSPORT:-}" ] && transport=", \"nccl_transport\": $FAKE_TRANSPORT"
cat >"$json" <<JSON
{"schema_version": 1, "tool": "vigil-allreduce", "result": "ok", "backend": "nccl",
 "transport": "nvlink", "ranks": 8, "nccl_env": {}$conf$removed$algos$transport,
 "rows": [{"size_bytes": 1073741824, "count": 268435456, "type": "float", "redop": "sum",
   "out_of_place": {"time_us": 1, "algbw_gb_s": 1, "busbw_gb_s": ${FAKE_BUSBW}, "wrong": 0},
   "in_place": {"time_us": 1, "algbw_gb_s": 1, "busbw_gb_s": ${FAKE_BUSBW}, "wrong": 0}}]}
JSON
