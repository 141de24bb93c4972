#!/usr/bin/env bash
# Configures and builds ampcpp into a build directory: scripts/build.sh [BUILD_DIR] [CMAKE ARGS...]
# The CUDA backend is built when nvcc is on PATH or under /usr/local/cuda (AMPCPP_CUDA=AUTO).
# AMPCPP_BUILD_TARGETS="a b ..." builds those targets only (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
targets=()
for target in ${AMPCPP_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
