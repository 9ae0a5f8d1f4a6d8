#!/usr/bin/env bash
# Installs everything the course needs to build and test, from Debian/Ubuntu packages.
# Run as root or with sudo:  sudo scripts/install-deps.sh
set -euo pipefail
packages=(
  cmake ninja-build g++ git                      # toolchain
  libxtensor-dev libxtensor-blas-dev libopenblas-dev  # tensors and BLAS
  libcli11-dev libfmt-dev                        # command line, formatting
  doctest-dev libbenchmark-dev                   # tests, benchmarks
  clang libclang-rt-14-dev                       # fuzzing only (scripts/fuzz.sh, preset fuzz)
  clang-format                                   # the code's style (scripts/format.sh --check)
)
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends "${packages[@]}"
