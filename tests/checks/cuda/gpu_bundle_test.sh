#!/usr/bin/env bash
# The GPU acceptance bundle is self-contained (issue 24, docs/gpu-validation.md): made from this
# build by scripts/gpu-bundle.sh --no-build, unpacked into a bare Debian root that has none of the
# project's packages (minbase + python3, made by scripts/slurm-root.sh bootstrap and cached), and
# run there by its own gpu-validate.sh in no-GPU mode. The root gets the CUDA toolkit's library
# folder bound in, as the GPU machine has cuBLASLt and NCCL; nothing else of this machine.
# Passes when the loader finds every library of every bundled binary (no "not found"), every
# binary starts, no GPU check fails without a GPU, the hooks exit 0, the bundled MPI runtime runs
# one process and the run script exits 0 (its documented status for "every item passed").
#   gpu_bundle_test.sh BUILD_DIR
set -euo pipefail

build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)

fail() {
  echo "gpu_bundle_test: FAIL: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "needs root (chroot, unshare, mmdebstrap), as scripts/test.sh runs"
[[ -d /usr/local/cuda/lib64 ]] || fail "no /usr/local/cuda/lib64 (this test runs only in CUDA builds)"

tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

bash "$repo/scripts/gpu-bundle.sh" --no-build --build "$build" --out "$tmp/bundle" >"$tmp/bundle.log" 2>&1 ||
  { cat "$tmp/bundle.log"; fail "gpu-bundle.sh --no-build failed"; }
size=$(du -sb "$tmp/bundle" | cut -f1)
echo "bundle: $((size / 1048576)) MiB, $(find "$tmp/bundle" -type f | wc -l) files"
[[ -f $tmp/bundle/MANIFEST.tsv ]] || fail "no MANIFEST.tsv"

# The bare root, made once and kept (tests/support/bare_root.sh).
root=$(bash "$repo/tests/support/bare_root.sh" "$repo") || fail "could not make the bare root"
for pkg in libyaml-cpp0.7 libslurm38 libmunge2 libopenmpi3 libcpp-httplib0.11; do
  if chroot "$root" dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok"; then
    fail "the bare root has $pkg: it would hide a library missing from the bundle"
  fi
done

mkdir -p "$tmp/out"
in_root() { # runs a command in the root with the bundle at /bundle (read-only) and /out
  unshare --mount --pid --fork --propagation private -- bash -euc '
    r=$1 b=$2 o=$3; shift 3
    for d in bundle out usr/local/cuda; do mkdir -p "$r/$d"; done
    mount --bind "$b" "$r/bundle"; mount -o remount,bind,ro "$r/bundle"
    mount --bind "$o" "$r/out"
    mount --bind /usr/local/cuda "$r/usr/local/cuda"
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"
  ' in-root "$root" "$tmp/bundle" "$tmp/out" "$@"
}

# The loader, inside the root, for every bundled binary and MPI component.
in_root bash -c 'export LD_LIBRARY_PATH=/bundle/lib:/usr/local/cuda/lib64
  for f in /bundle/bin/* /bundle/mpi/lib/openmpi3/*.so; do echo "## $f"; ldd "$f"; done' >"$tmp/ldd.txt" 2>&1 ||
  { cat "$tmp/ldd.txt"; fail "ldd failed in the bare root"; }
if grep -q "not found" "$tmp/ldd.txt"; then
  grep -B30 "not found" "$tmp/ldd.txt" | grep -E "^##|not found" >&2
  fail "the loader finds no library above in the bare root"
fi
echo "ldd in the bare root: $(grep -c '^##' "$tmp/ldd.txt") files, every library found"

rc=0
in_root bash /bundle/gpu-validate.sh --bundle /bundle --out /out/run >"$tmp/run.log" 2>&1 || rc=$?
cat "$tmp/run.log"
[[ -f $tmp/out/run/raw.tar.gz && -f $tmp/out/run/summary.md ]] || fail "the run left no raw.tar.gz and summary.md"
[[ $(find "$tmp/out/run" -type f | wc -l) -le 8 ]] || fail "more than 8 result files"
grep -q "rehearsal without a GPU" "$tmp/out/run/summary.md" || fail "the run did not choose the no-GPU mode"
[[ $rc -eq 0 ]] || fail "gpu-validate.sh exited $rc in the bare root (0: every item passed)"
echo "gpu_bundle_test: ok"
