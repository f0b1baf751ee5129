#!/usr/bin/env bash
# The one command that installs what is missing, builds everything and runs every test
# (unit + integration). .ci/run calls exactly this. Benchmarks are separate: scripts/bench.sh.
#   scripts/test.sh                 # install deps, build in ./build, run all tests
#   VIGIL_BUILD_DIR=/tmp/b scripts/test.sh
#   VIGIL_FUZZ_SECONDS=0 scripts/test.sh   # skip the short fuzzing pass (default 15 s a target)
#   VIGIL_SLURM_2411=1 scripts/test.sh   # then also build and test the Slurm parts against Slurm
#                                        # 24.11 in a Debian trixie root (scripts/slurm-root.sh;
#                                        # builds the root on first use: ~8 min, more on a busy
#                                        # machine). =auto: only when that root already exists.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${VIGIL_BUILD_DIR:-build}
JOBS=${VIGIL_JOBS:-2}

bash scripts/install-deps.sh
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${VIGIL_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$JOBS"
# Unit tests in parallel, then integration tests (real Slurm, MPI, Prometheus) one at a time.
ctest --test-dir "$BUILD_DIR" --output-on-failure -LE "integration|bench" -j"$JOBS" --timeout 300
ctest --test-dir "$BUILD_DIR" --output-on-failure -L integration --timeout 900
# Every parser of outside input, fuzzed briefly (own clang + ASan/UBSan build; docs/fuzzing.md).
if [ "${VIGIL_FUZZ_SECONDS:-15}" != 0 ]; then
  VIGIL_FUZZ_SEED=${VIGIL_FUZZ_SEED:-1} bash scripts/fuzz.sh "${VIGIL_FUZZ_SECONDS:-15}"
fi
case ${VIGIL_SLURM_2411:-0} in
  1) bash scripts/slurm-root.sh test ;;
  auto)
    if [[ -d "$(bash scripts/slurm-root.sh path)" ]]; then
      bash scripts/slurm-root.sh test
    else
      echo "scripts/test.sh: no Slurm 24.11 root yet; VIGIL_SLURM_2411=1 builds one"
    fi
    ;;
  0) ;;
  *) echo "scripts/test.sh: VIGIL_SLURM_2411 must be 0, 1 or auto" >&2; exit 2 ;;
esac
echo "scripts/test.sh: all tests passed"
