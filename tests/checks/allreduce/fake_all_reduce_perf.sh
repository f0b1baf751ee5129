#!/bin/sh
# Test stand-in for a site's nccl-tests all_reduce_perf. FAKE_PERF_MODE:
#   log:FILE  print FILE (a genuine nccl-tests log) and exit 0
#   logs:A,B  print log A on the first call, B on the second, ... (the last one from then on);
#             calls are counted in the file FAKE_PERF_CALLS
#   hang      never finish (the check's deadline must end it)
#   sleep:S   wait S seconds, then print the log FAKE_PERF_LOG (a slow run; calls counted)
#   crash     print an NCCL failure to stderr, no table, exit 1
# FAKE_PERF_ARGS_FILE, when set, receives the arguments and the NCCL_* environment.
if [ -n "$FAKE_PERF_ARGS_FILE" ]; then
  { echo "$@"; env | grep '^NCCL_' | sort; } > "$FAKE_PERF_ARGS_FILE"
fi
case "$FAKE_PERF_MODE" in
  log:*) cat "${FAKE_PERF_MODE#log:}" ;;
  logs:*)
    calls=$(cat "$FAKE_PERF_CALLS" 2>/dev/null || echo 0)
    echo $((calls + 1)) > "$FAKE_PERF_CALLS"
    n=0 last=
    for f in $(echo "${FAKE_PERF_MODE#logs:}" | tr ',' ' '); do
      last=$f
      [ "$n" -eq "$calls" ] && break
      n=$((n + 1))
    done
    cat "$last" ;;
  hang) sleep 300 ;;
  sleep:*)
    [ -n "$FAKE_PERF_CALLS" ] && echo $(($(cat "$FAKE_PERF_CALLS" 2>/dev/null || echo 0) + 1)) > "$FAKE_PERF_CALLS"
    sleep "${FAKE_PERF_MODE#sleep:}"
    cat "$FAKE_PERF_LOG" ;;
  crash) echo "all_reduce_perf: Test NCCL failure common.cu:958 'unhandled system error'" >&2; exit 1 ;;
  *) echo "unknown FAKE_PERF_MODE" >&2; exit 2 ;;
esac
