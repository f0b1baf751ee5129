#!/usr/bin/env bash
# Builds the self-contained GPU acceptance bundle (docs/gpu-validation.md): everything
# `scripts/gpu-validate.sh --bundle DIR` needs on a GPU machine that has the NVIDIA driver, a
# CUDA 13 runtime, cuBLASLt and NCCL (a CUDA toolkit or PyTorch's wheels) and nothing of ours:
# no Debian packages of the project, no network, no compiler needed.
#
#   scripts/gpu-bundle.sh [--out DIR] [--build DIR] [--archs "90;100"] [--nccl-tests SRC] [--no-build]
#
#   --out DIR         the bundle (default: build-gpu/bundle; /build*/ is ignored by git)
#   --build DIR       the CUDA build of Vigil (default: build-gpu)
#   --archs LIST      CUDA architectures (default "90;100": H100/H200, B200)
#   --nccl-tests SRC  an NVIDIA/nccl-tests source tree; all_reduce_perf is built from it without
#                     MPI (one process drives the GPUs: -g N). Never committed; default
#                     BUILD/nccl-tests-src. Without one the bundle has no all_reduce_perf and the
#                     run says so.
#   --no-build        take vigil-check and vigil-allreduce as they are in --build (a CUDA build
#                     made elsewhere, e.g. scripts/test.sh's; the bundle test in CI does this)
#
# What goes in (MANIFEST.tsv lists every file with its size and why):
#   bin/     vigil-check, vigil-allreduce, all_reduce_perf (stripped)
#   lib/     every shared library those load (ldd, i.e. the loader itself) that is not the C
#            runtime (glibc, libstdc++, libgcc_s: part of every base system), the NVIDIA driver
#            (libcuda, libnvidia-ml) or what the run finds on the GPU machine (libnccl,
#            libcublasLt): Debian's yaml-cpp, libslurm, munge, httplib, OpenSSL, OpenMPI ...
#   mpi/     OpenMPI's runtime pieces for a one-process (singleton) vigil-allreduce: the MCA
#            components of one node (no network transports) and the help texts
#   thresholds/, scripts: gpu-validate.sh, lib/gpu_validate_summary.py, lib/gpu_reference.py
# The bundle is proven self-contained by tests/checks/cuda/gpu_bundle_test.sh, which unpacks it
# into a bare Debian root and runs every binary there (ctest gpu_bundle_bare_root).
set -euo pipefail

readonly PROG=gpu-bundle.sh
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly REPO
readonly LIMIT_MIB=60
out="$REPO/build-gpu/bundle" build="$REPO/build-gpu" archs="90;100" nccl_tests="" no_build=0

die() {
  echo "$PROG: error: $*" >&2
  exit 2
}
usage() { sed -n '6,17p' "$0" | sed 's/^# \{0,1\}//'; }
need_value() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --out) need_value "$@"; out=$2; shift 2 ;;
    --build) need_value "$@"; build=$2; shift 2 ;;
    --archs) need_value "$@"; archs=$2; shift 2 ;;
    --nccl-tests) need_value "$@"; nccl_tests=$2; shift 2 ;;
    --no-build) no_build=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $archs =~ ^[0-9]+(;[0-9]+)*$ ]] || die "--archs must look like \"90;100\", not '$archs'"
[[ -x /usr/local/cuda/bin/nvcc ]] || die "no /usr/local/cuda/bin/nvcc: the bundle needs the CUDA toolkit"
build=$(mkdir -p "$build" && cd "$build" && pwd)  # absolute: make -C below changes directory
nccl_tests=${nccl_tests:-$build/nccl-tests-src}

if [[ $no_build == 1 ]]; then
  for b in checks/vigil-check nccl-bench/vigil-allreduce; do
    [[ -x $build/$b ]] || die "--no-build: no $build/$b"
  done
  # A build without CUDA has no nccl backend (nccl-bench/CMakeLists.txt).
  [[ $("$build/nccl-bench/vigil-allreduce" --help 2>&1) == *"{nccl,host}"* ]] ||
    die "--no-build: $build was built without CUDA (vigil-allreduce has no nccl backend)"
  archs=$(sed -n 's/^VIGIL_CUDA_ARCHS:STRING=//p' "$build/CMakeCache.txt")
  # Empty in the cache ("by toolkit", cmake/VigilCuda.cmake): what the probes were compiled for.
  if [[ -z $archs ]]; then
    archs=$(grep -o 'arch=compute_[0-9]*' "$build/checks/CMakeFiles/vigil_checks.dir/flags.make" |
      sed 's/.*_//' | sort -nu | paste -sd';')
  fi
  [[ $archs =~ ^[0-9]+(;[0-9]+)*$ ]] || die "--no-build: cannot tell which CUDA architectures $build has"
else
  echo "== build vigil-check and vigil-allreduce with CUDA for sm ${archs//;/, sm } in $build"
  mkdir -p "$build"
  cmake -S "$REPO" -B "$build" -DVIGIL_WITH_CUDA=ON -DVIGIL_CUDA_ARCHS="$archs" \
    -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
    die "configure failed: see $build/configure.log"
  cmake --build "$build" -j"${VIGIL_JOBS:-2}" --target vigil-check vigil-allreduce
fi

arp=""
if [[ -f $nccl_tests/src/all_reduce.cu ]]; then
  echo "== build all_reduce_perf (no MPI) from $nccl_tests"
  gencode=""
  for a in ${archs//;/ }; do gencode+=" -gencode=arch=compute_$a,code=sm_$a"; done
  # CUDARTLIB=cudart_static: like Vigil's own binaries it needs only the driver and libnccl.
  make -C "$nccl_tests/src" -j"${VIGIL_JOBS:-2}" MPI=0 CUDA_HOME=/usr/local/cuda \
    NCCL_HOME=/usr/local/cuda CUDARTLIB=cudart_static NVCC_GENCODE="$gencode" \
    BUILDDIR="$build/nccl-tests" "$build/nccl-tests/all_reduce_perf" >"$build/nccl-tests.log" 2>&1 ||
    die "building all_reduce_perf failed: see $build/nccl-tests.log"
  arp=$build/nccl-tests/all_reduce_perf
else
  echo "== no nccl-tests source at $nccl_tests: the bundle has no all_reduce_perf"
fi

# Only ever replace an earlier bundle (or an empty folder): --out . must not wipe a tree.
if [[ -e $out && ! -f $out/MANIFEST.tsv && -n $(ls -A "$out" 2>/dev/null) ]]; then
  die "--out $out exists and is not a bundle (no MANIFEST.tsv): choose a new or empty folder"
fi
rm -rf -- "$out"
mkdir -p "$out/bin" "$out/lib" "$out/mpi/lib/openmpi3" "$out/mpi/share" "$out/lib/scripts"
manifest=$out/MANIFEST.tsv
printf 'file\tbytes\twhy\n' >"$manifest"
declare -A why=()
note() { why[$1]=$2; }

# Libraries every GPU machine has: the C runtime of any Linux base system, the NVIDIA driver's,
# and the CUDA libraries the run finds there (gpu-validate.sh says which it used).
provided() {
  case ${1##*/} in
    ld-linux* | linux-vdso* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
      libresolv.so* | libutil.so* | libstdc++.so* | libgcc_s.so*) return 0 ;;
    libcuda.so* | libnvidia-ml.so* | libnccl.so* | libcublasLt.so* | libcublas.so* | libcudart.so*) return 0 ;;
  esac
  return 1
}
# The Debian package that holds a library (dpkg knows merged-/usr files by their /usr path).
package_of() {
  local p
  p=$(dpkg -S "$1" 2>/dev/null || dpkg -S "/usr$1" 2>/dev/null || dpkg -S "$(readlink -f "$1")" 2>/dev/null)
  echo "${p%%:*}"
}
# The loader's own answer: every library a file resolves to here, transitively (ldd prints
# the whole closure); a "not found" here is an error, not something to skip.
take_libs() {
  local file=$1 who=$2 line lib
  while IFS= read -r line; do
    [[ $line == *"not found"* ]] && die "$file: the loader finds no ${line%% *} here"
    lib=$(awk '$2 == "=>" && $3 ~ /^\// {print $3}' <<<"$line")
    [[ -n $lib ]] || continue
    provided "$lib" && continue
    local base=${lib##*/}
    if [[ ! -e $out/lib/$base ]]; then
      cp -L "$lib" "$out/lib/$base"
      note "lib/$base" "needed by $who (Debian package $(package_of "$lib"))"
    fi
  done < <(ldd "$file")
}

for b in "$build/checks/vigil-check" "$build/nccl-bench/vigil-allreduce" ${arp:+"$arp"}; do
  name=${b##*/}
  strip --strip-unneeded -o "$out/bin/$name" "$b"
  take_libs "$b" "$name"
done
note bin/vigil-check "the check runner and the Slurm hook (CUDA runtime linked statically)"
note bin/vigil-allreduce "the NCCL all_reduce benchmark (MPI: one process, singleton mode)"
# Which nccl-tests: SOURCE in the tree if whoever unpacked it wrote one, else its version macro.
if [[ -n $arp ]]; then
  src=$(head -n1 "$nccl_tests/SOURCE" 2>/dev/null ||
    sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/nccl-tests \1/p' "$nccl_tests/src/common.h")
  note bin/all_reduce_perf "the reference all_reduce ($src), built with MPI=0"
fi

# OpenMPI: MPI_Init without mpirun (singleton, isolated: no orted) still opens MCA components
# from a directory; take those of one node. Network transports (UCX, libfabric, PSM, verbs) and
# their large libraries are left out: a one-process run never opens a network.
ompi_components=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[[ -d $ompi_components ]] || ompi_components=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
for c in "$ompi_components"/*.so; do
  # (ldd's output is read whole first: grep -q would end the pipe early and, under pipefail,
  # turn a match into a miss.)
  needs=$(ldd "$c")
  [[ $needs =~ libuc[pstm]|libfabric|libpsm|libibverbs|librdmacm|libefa|libinfinipath ]] && continue
  cp "$c" "$out/mpi/lib/openmpi3/"
  take_libs "$c" "OpenMPI component ${c##*/}"
done
note mpi/lib/openmpi3 "OpenMPI $(ompi_info --version 2>/dev/null | head -n1 | awk '{print $NF}') MCA components of one node, opened by vigil-allreduce's MPI_Init"
ompi_data=$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p')
[[ -d $ompi_data ]] || ompi_data=/usr/share/openmpi
cp -r "$ompi_data" "$out/mpi/share/openmpi"
note mpi/share/openmpi "OpenMPI's help texts (its error messages)"

cp -r "$REPO/checks/thresholds" "$out/thresholds"
note thresholds "the SKU threshold files (checks/thresholds)"
cp "$REPO/scripts/gpu-validate.sh" "$out/gpu-validate.sh"
cp "$REPO/scripts/lib/gpu_validate_summary.py" "$REPO/scripts/lib/gpu_reference.py" "$out/lib/scripts/"
note gpu-validate.sh "the acceptance run (scripts/gpu-validate.sh --bundle DIR --out OUT)"
note lib/scripts "the run's summary writer and PyTorch reference (scripts/lib)"
{
  echo "vigil $(git -C "$REPO" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "cuda $(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "archs $archs"
} >"$out/VERSION"
note VERSION "what was built, from which commit, with which toolkit"
note MANIFEST.tsv "this list"

# One row per file or folder named above, with its size.
for path in $(printf '%s\n' "${!why[@]}" | sort); do
  bytes=$(du -sb "$out/$path" | cut -f1)
  printf '%s\t%s\t%s\n' "$path" "$bytes" "${why[$path]}" >>"$manifest"
done
total=$(du -sb "$out" | cut -f1)
printf 'TOTAL\t%s\t%s files\n' "$total" "$(find "$out" -type f | wc -l)" >>"$manifest"
column -t -s $'\t' "$manifest" | cut -c1-160
((total <= LIMIT_MIB * 1024 * 1024)) || die "the bundle is $((total / 1048576)) MiB, over $LIMIT_MIB MiB"
echo "== bundle: $out ($((total / 1048576)) MiB)"
