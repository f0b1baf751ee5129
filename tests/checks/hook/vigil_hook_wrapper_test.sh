#!/usr/bin/env bash
# checks/hook/vigil-hook: only vigil-check's verdicts (0, 1) reach Slurm; a binary the loader
# cannot start (a missing library: exit 127), a crash and any other exit become 0 with a log line.
#   vigil_hook_wrapper_test.sh WRAPPER VIGIL_CHECK FAKE_NVML_LIB SOURCE_DIR
set -euo pipefail
wrapper=$1 real_check=$2 nvml=$3 src=$4
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
expect() {  # expect NAME WANT_RC LOG_PATTERN CHECK [args...]
  local name=$1 want=$2 pattern=$3 check=$4
  shift 4
  : >"$t/log"
  local rc=0
  VIGIL_CHECK=$check VIGIL_HOOK_LOG=$t/log SLURMD_NODENAME=gpu-0 "$wrapper" epilog "$@" || rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -q -- "$pattern" "$t/log"; then
    echo "FAIL $name: exit $rc (want $want), log:"; cat "$t/log"; fail=1
  else
    echo "ok   $name: exit $rc; $(tail -n 1 "$t/log")"
  fi
}
# A real ELF whose library is gone: the loader exits 127 before main.
printf 'int f(void){return 0;}\n' >"$t/libgone.c"
printf 'int f(void); int main(void){return f();}\n' >"$t/main.c"
cc -shared -fPIC -o "$t/libgone.so" "$t/libgone.c"
cc -o "$t/needs-gone" "$t/main.c" -L"$t" -lgone
rm "$t/libgone.so"
expect missing-library 0 "could not be started (exit 127" "$t/needs-gone"
expect not-found 0 "could not be started (exit 127" "$t/no-such-binary"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$t/crash" && chmod +x "$t/crash"
expect crash 0 "killed by signal 11" "$t/crash"
printf '#!/bin/sh\necho usage >&2\nexit 106\n' >"$t/usage" && chmod +x "$t/usage"
expect other-exit 0 "exited 106" "$t/usage"
printf '#!/bin/sh\necho "drained by vigil-drainer" >&2\nexit 1\n' >"$t/drained" && chmod +x "$t/drained"
expect drained 1 "drained by vigil-drainer" "$t/drained"
# The real vigil-check, a healthy node, --no-post: its verdict and its stderr pass through.
VIGIL_FAKE_NVML_FIXTURE=$src/tests/fixtures/nodes/gpu-0/nvml.json \
  expect real-check 0 "vigil-check hook epilog: node gpu-0" "$real_check" --no-post \
  --nvml-library "$nvml" --sysfs-root "$src/tests/fixtures/nodes/gpu-0/sysfs" \
  --kmsg /dev/null --state-dir "$t/state"
exit $fail
