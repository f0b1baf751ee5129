#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, one per parser of outside input) in their own clang
# build with ASan + UBSan, replays the saved regressions, then fuzzes each target for SECONDS
# from seeds (tests/fuzz/seeds/<name> and the matching fixtures) and prints executions and
# coverage per target. A crash fails the run and leaves its input under
# $BUILD_DIR/artifacts/<target>/: add it to tests/fuzz/regressions/<target>/ with the fix.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default 60 s each, every target
#   VIGIL_FUZZ_BUILD_DIR=/tmp/bf scripts/fuzz.sh 20 fuzz_node_report
#   VIGIL_FUZZ_BUILD_ONLY=1 scripts/fuzz.sh # build the targets, run nothing (scripts/test.sh
#                                          # builds them while the cluster tests run)
#   VIGIL_FUZZ_SEED=1 scripts/fuzz.sh 15   # fixed libFuzzer seed (scripts/test.sh, CI): the same
#                                          # inputs in the same order every run, so a CI run
#                                          # fails only for a change, never by luck; campaigns
#                                          # leave it unset (a fresh random seed each run)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
BUILD_DIR=${VIGIL_FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${VIGIL_JOBS:-2}
ALL=(fuzz_node_report fuzz_drainer_config fuzz_thresholds fuzz_nccl_tests fuzz_kubeconfig
     fuzz_hostlist fuzz_ib_sysfs fuzz_http_route fuzz_xid_lines)
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=("${ALL[@]}")

command -v clang++ >/dev/null || bash scripts/install-deps.sh
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 and line tables only: quick to build, still fast to run, stacks name file and line.
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -DVIGIL_FUZZ=ON -DVIGIL_BUILD_TESTS=OFF \
  -DVIGIL_BUILD_BENCH=OFF -DVIGIL_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DCMAKE_C_FLAGS="-O1 -gline-tables-only" \
  "${launcher[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${TARGETS[@]}"
[ -z "${VIGIL_FUZZ_BUILD_ONLY:-}" ] || exit 0

# Seeds per target: its own seed dir plus the repository's fixtures of that format.
seeds_of() {
  case "$1" in
    fuzz_thresholds) echo checks/thresholds ;;
    fuzz_nccl_tests) echo tests/fixtures/nccl-tests-logs ;;
    fuzz_ib_sysfs) echo tests/fixtures/sysfs ;;
    fuzz_xid_lines) echo tests/fixtures/kmsg ;;
    fuzz_drainer_config) echo cronjobs/config ;;
  esac
  local own="tests/fuzz/seeds/${1#fuzz_}"
  [ -d "$own" ] && echo "$own"
  return 0
}

work=$(mktemp -d /tmp/vigil-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
printf '%-22s %10s %8s %8s %8s  %s\n' target execs exec/s cov ft result
for t in "${TARGETS[@]}"; do
  bin="$BUILD_DIR/tests/fuzz/$t"
  corpus="$work/$t"
  mkdir -p "$corpus" "$BUILD_DIR/artifacts/$t"
  while read -r d; do
    find "$d" -type f ! -name '*.md' -size -64k -exec cp --backup=numbered -t "$corpus" {} + 2>/dev/null || true
  done < <(seeds_of "$t")
  # Every saved crash input must now pass.
  reg="tests/fuzz/regressions/$t"
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
    if ! "$bin" "$reg"/* >"$work/$t.reg.log" 2>&1; then
      echo "$t: a saved regression input fails again:"; tail -20 "$work/$t.reg.log"; failed=1
      continue
    fi
  fi
  rc=0
  seed=()
  [ -z "${VIGIL_FUZZ_SEED:-}" ] || seed=(-seed="$VIGIL_FUZZ_SEED")
  "$bin" "${seed[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$BUILD_DIR/artifacts/$t/" "$corpus" >"$work/$t.log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/$t.log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'exec/s: [0-9]*' "$work/$t.log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$work/$t.log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  ft=$(grep -o 'ft: [0-9]*' "$work/$t.log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="CRASH (inputs in $BUILD_DIR/artifacts/$t/)"
    failed=1
  fi
  printf '%-22s %10s %8s %8s %8s  %s\n' "$t" "${execs:-0}" "${rate:-0}" "${cov:-0}" "${ft:-0}" "$result"
  [ "$rc" -eq 0 ] || grep -B2 -A25 'ERROR: \|fuzz property broken' "$work/$t.log" | head -60
done
exit "$failed"
