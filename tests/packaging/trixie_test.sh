#!/usr/bin/env bash
# Debian 13: the image built from the project's packages, and those packages on a bare root.
# scripts/build-image.sh --suite trixie builds Vigil inside an overlay of scripts/slurm-root.sh's
# trixie root (Slurm 24.11, trixie's compiler and libraries), packs the four .debs with cpack,
# installs them with apt-get into a minbase trixie runtime root, packs that as an OCI image with
# umoci and runs the programs inside the unpacked image. deb_test.sh then installs the same
# .debs into a bare trixie root (minbase + python3) and runs the hook there.
#   trixie_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$build/image-packages
bash "$repo/scripts/build-image.sh" --suite trixie --out "$out"
bash "$repo/tests/packaging/deb_test.sh" --debs "$out/trixie/debs" --suite trixie
