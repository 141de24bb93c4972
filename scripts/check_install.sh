#!/usr/bin/env bash
# Installs an already built ampcpp into a temporary prefix and builds and runs a small outside
# project against it with find_package(ampcpp): scripts/check_install.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
prefix=$(mktemp -d)
consumer_build=$(mktemp -d)
trap 'rm -rf "$prefix" "$consumer_build"' EXIT
cmake --install "$build_dir" --prefix "$prefix" > /dev/null
cmake -S tests/install_consumer -B "$consumer_build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$consumer_build" > /dev/null
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" "$consumer_build/consumer"
