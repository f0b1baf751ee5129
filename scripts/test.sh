#!/usr/bin/env bash
# The one command that installs what is missing, builds everything and runs every test
# (unit + integration). .ci/run calls exactly this. Benchmarks are separate: scripts/bench.sh.
#   scripts/test.sh                 # install deps, build in ./build, run all tests
#   VIGIL_BUILD_DIR=/tmp/b scripts/test.sh
#   VIGIL_FUZZ_SECONDS=0 scripts/test.sh   # skip the short fuzzing pass (default 15 s a target)
#   Then the Slurm parts are built and tested against Slurm 24.11 in a Debian trixie root
#   (scripts/slurm-root.sh; made on first use, reused from then on; docs/slurm-compat.md):
#   VIGIL_SLURM_2411=1 (default) the lean set: Slurm client on both backends, drainer drain /
#                      resume / ownership. =full: every Slurm test. =0: skip (the only way to;
#                      a machine that cannot build the root fails here instead of skipping).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${VIGIL_BUILD_DIR:-build}
JOBS=${VIGIL_JOBS:-2}
# Each phase's wall time, printed as it ends and again at the end (docs/benchmarks.md, "CI time").
t_phase=$SECONDS
timings=()
phase() {
  timings+=("$(printf '%-34s %5d s' "$1" $((SECONDS - t_phase)))")
  echo "scripts/test.sh: $1 took $((SECONDS - t_phase)) s" >&2
  t_phase=$SECONDS
}

case ${VIGIL_SLURM_2411:-1} in
  1 | lean) slurm_set=lean ;;
  full) slurm_set=full ;;
  0) slurm_set="" ;;
  *) echo "scripts/test.sh: VIGIL_SLURM_2411 must be 1 (lean, the default), full or 0" >&2; exit 2 ;;
esac

bash scripts/install-deps.sh
phase "install-deps"
# The 24.11 root is made (or checked) while the host build runs: it is mostly downloads and dpkg
# (339 s on a fresh machine, docs/benchmarks.md), which the compiler's two cores barely notice.
# Its log is kept; the Slurm 24.11 phase below waits for it and reports its failure there.
root_pid=""
root_log=$(mktemp /tmp/vigil-test-root.XXXXXX.log)
if [[ -n $slurm_set ]]; then
  setsid bash scripts/slurm-root.sh ensure >"$root_log" 2>&1 &
  root_pid=$!
fi
trap '[[ -z $root_pid ]] || kill -- -"$root_pid" 2>/dev/null || true; rm -f "$root_log"' EXIT
# ccache (when installed) lets a second clone's build reuse the first one's objects. Paths under
# the clone are hashed relative to it (CCACHE_BASEDIR), and the build directory is not hashed
# (CCACHE_NOHASHDIR; the debug info then names the first clone's paths): without both, a clone at
# another path missed almost every object (0.6 % hits measured, 2026-12-01).
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" ${VIGIL_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$JOBS"
phase "build"
# Unit tests in parallel.
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE "integration|bench" -j"$JOBS" --timeout 300
phase "unit tests"

# The integration tests on the local cluster (real Slurm, MPI, Prometheus) run one at a time and
# mostly wait: for slurmctld's scheduling passes, credential lifetimes, health-check intervals.
# Meanwhile, in the background at the lowest CPU and I/O priority (so the cluster tests' timing
# is theirs): the packaging tests (Debian roots, the trixie image build; label packaging), the
# fuzz targets' build and the Slurm 24.11 build. One after the other: the image build and the
# 24.11 build both use the trixie root. docs/benchmarks.md "CI time".
bg_log=$(mktemp /tmp/vigil-test-bg.XXXXXX.log)
bg_status=$(mktemp /tmp/vigil-test-bg.XXXXXX.status)
trap '[[ -z $root_pid ]] || kill -- -"$root_pid" 2>/dev/null || true
      [[ -z ${bg_pid:-} ]] || kill -- -"$bg_pid" 2>/dev/null || true
      rm -f "$root_log" "$bg_log" "$bg_status"' EXIT
background() {
  local step rc
  for step in "$@"; do
    rc=0
    nice -n 19 ionice -c 3 bash -c "$step" || rc=$?
    echo "$rc $step" >>"$bg_status"
  done
}
bg_steps=("ctest --test-dir $(printf %q "$BUILD_DIR") --output-on-failure -L packaging --timeout 1800")
[ "${VIGIL_FUZZ_SECONDS:-15}" == 0 ] || bg_steps+=("VIGIL_FUZZ_BUILD_ONLY=1 bash scripts/fuzz.sh")
# The root began during the host build (long done by now); its build waits for it.
root_rc=0
if [[ -n $slurm_set ]]; then
  wait "$root_pid" || root_rc=$?
  root_pid=""
  cat "$root_log" >&2
  [[ $root_rc -ne 0 ]] || bg_steps+=("bash scripts/slurm-root.sh build --set $slurm_set")
fi
setsid bash -c "$(declare -f background); bg_status='$bg_status'; background \"\$@\"" \
  background "${bg_steps[@]}" >"$bg_log" 2>&1 &
bg_pid=$!
ctest --test-dir "$BUILD_DIR" --output-on-failure -L integration -LE packaging --timeout 900
phase "integration tests (cluster)"
bg_rc=0
wait "$bg_pid" || bg_rc=$?
bg_pid=""
cat "$bg_log" >&2
phase "waited for the background builds"
# Every step must have said 0: a step that never ran (the background shell killed) fails too.
if [[ $bg_rc -ne 0 || $(grep -c '^0 ' "$bg_status") -ne ${#bg_steps[@]} ]]; then
  echo "scripts/test.sh: a background step failed or did not run (output above; exit $bg_rc):" >&2
  grep -v '^0 ' "$bg_status" >&2 || true
  exit 1
fi

# Every parser of outside input, fuzzed briefly (own clang + ASan/UBSan build; docs/fuzzing.md).
if [ "${VIGIL_FUZZ_SECONDS:-15}" != 0 ]; then
  VIGIL_FUZZ_SEED=${VIGIL_FUZZ_SEED:-1} bash scripts/fuzz.sh "${VIGIL_FUZZ_SECONDS:-15}"
  phase "fuzz runs"
fi
if [[ -n $slurm_set ]]; then
  if [[ $root_rc -ne 0 ]] || ! bash scripts/slurm-root.sh test --set "$slurm_set"; then
    echo "scripts/test.sh: the Slurm 24.11 tests failed (above). They need root, mmdebstrap or" \
      "debootstrap and the Debian mirror on the first run; on a machine that cannot have them," \
      "skip them explicitly with VIGIL_SLURM_2411=0." >&2
    exit 1
  fi
  phase "Slurm 24.11 tests"
fi
printf '%s\n' "scripts/test.sh: time per phase" "${timings[@]}" >&2
echo "scripts/test.sh: all tests passed"
