#!/usr/bin/env bash
# Installs every Debian package Vigil needs to build, test and run its demo.
# Idempotent: packages already present are skipped; safe to run as root on a fresh machine.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git ca-certificates curl
  # Slurm (real daemons for the local test cluster) and munge
  slurmctld slurmd slurm-client munge libmunge-dev libslurm-dev
  # MPI
  libopenmpi-dev openmpi-bin
  # C++ libraries
  prometheus-cpp-dev libcpp-httplib-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libssl-dev zlib1g-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  # Prometheus server + promtool for metric/rule/dashboard tests
  prometheus
  # misc tools used by scripts and tests
  procps iproute2 python3 jq
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
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
echo "install-deps: done"
