#!/usr/bin/env bash
# Installs every Debian package ampcpp needs to build, test and run its examples, and to fuzz it
# (clang, its libFuzzer and sanitizer runtimes in libclang-rt-14-dev, its OpenMP in libomp-dev).
# Idempotent: packages already present are left alone, and apt is not touched at all when
# nothing is missing. Pass --reference to also install python3-torch, which the golden-file
# generators under tests/reference/ and PyTorch's side of the benchmarks (bench/torch_*.py) use,
# with OpenBLAS as the system BLAS (Debian's torch calls whatever libblas.so.3 is; the reference
# BLAS it gets otherwise is about 100x slower for the benchmarks' matmuls).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libeigen3-dev libdnnl-dev ccache
  libboost-test-dev libboost-program-options-dev
  zlib1g-dev nlohmann-json3-dev valgrind doxygen
  libopenmpi-dev openmpi-bin
  dataset-fashion-mnist
  clang libclang-rt-14-dev libomp-dev
  libtorch-dev
)
if [[ "${1:-}" == "--reference" ]]; then
  packages+=(python3-torch python3-numpy libopenblas0-openmp)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} Debian packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
