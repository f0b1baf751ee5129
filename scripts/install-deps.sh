#!/usr/bin/env bash
# Installs every Debian package Vigil needs to build, test and run its demo.
# Idempotent: packages already present are skipped; safe to run as root on a fresh machine.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ca-certificates curl
  # Slurm (real daemons for the local test cluster) and munge
  slurmctld slurmd slurm-client munge libmunge-dev libslurm-dev
  # slurmrestd + the JWT auth plugin: the REST backend's tests (docs/slurm-compat.md)
  slurmrestd slurm-wlm-jwt-plugin
  # mmdebstrap (debootstrap as fallback): scripts/slurm-root.sh and scripts/build-image.sh
  # (Debian roots with another Slurm release; the image's runtime root)
  mmdebstrap debootstrap
  # umoci: scripts/build-image.sh packs the runtime root as an OCI image (deb_packages_image_trixie)
  umoci
  # MPI
  libopenmpi-dev openmpi-bin
  # C++ libraries
  prometheus-cpp-dev libcpp-httplib-dev libmicrohttpd-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libssl-dev zlib1g-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  # Prometheus server + promtool for metric/rule/dashboard tests
  prometheus
  # misc tools used by scripts and tests; ccache: repeated builds (scripts/test.sh) reuse objects
  procps iproute2 python3 jq shellcheck ccache
  # clang-format and universal-ctags: the formatting and function-length tests
  # (tests/architecture/check_hygiene.sh)
  clang-format universal-ctags
  # cpack's DEB generator (packages, the image): dpkg-shlibdeps computes Depends, `file` finds ELFs
  dpkg-dev file
  # openssl CLI: test CAs and server certificates made at test time (tests/support/test_pki.h)
  openssl
  # Node.js: validates cronjobs/ against the upstream Kubernetes schemas (tests/k8s-validate)
  nodejs
)

# npm packages of tests/k8s-validate (kubernetes-models), pinned by its package-lock.json.
# Debian ships npm as its own package; a Node.js from elsewhere bundles it.
install_npm_deps() {
  local dir
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/k8s-validate"
  # Test-only; VIGIL_SKIP_NPM=1 (image builds) or a tree without it skips this step.
  if [ -n "${VIGIL_SKIP_NPM:-}" ] || [ ! -f "$dir/package.json" ]; then return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends npm
  fi
  if [ ! -d "$dir/node_modules/kubernetes-models" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    echo "install-deps: npm ci in tests/k8s-validate"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  install_npm_deps
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# policy-rc.d keeps Debian's postinst scripts from starting system slurmctld/slurmd/munge/prometheus:
# Vigil runs its own daemons in private state dirs and must not touch system services.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_npm_deps
echo "install-deps: done"
