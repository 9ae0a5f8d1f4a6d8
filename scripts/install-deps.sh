#!/usr/bin/env bash
# Installs everything the course needs to build and test, from Debian/Ubuntu packages.
# Run it as it is, as root or as a user who may use sudo:  scripts/install-deps.sh
# (it calls sudo only when it is not root, so it also works where there is no sudo, as root).
set -euo pipefail
packages=(
  cmake ninja-build g++ git                      # toolchain
  libxtensor-dev libxtensor-blas-dev libopenblas-dev  # tensors and BLAS
  libcli11-dev libfmt-dev                        # command line, formatting
  nlohmann-json3-dev libpcre2-dev pkg-config     # tokenizer files and GPT-2's pattern (ch. 13)
  doctest-dev libbenchmark-dev                   # tests, benchmarks
  clang libclang-rt-14-dev                       # fuzzing only (scripts/fuzz.sh, preset fuzz)
  clang-format                                   # the code's style (scripts/format.sh --check)
)
if [ "$(id -u)" -eq 0 ]; then
  SUDO=
elif command -v sudo > /dev/null 2>&1; then
  SUDO=sudo
else
  echo "install-deps.sh: error: installing packages needs root: run this as root, or install sudo" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends "${packages[@]}"
