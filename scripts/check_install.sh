#!/usr/bin/env bash
# Packages an already built ampcpp as a .deb (cpack -G DEB), unpacks it into a temporary root,
# checks that it holds exactly the public headers (what amp/amp.h reaches), and builds and runs a
# small outside project against it twice: with find_package(ampcpp) and with pkg-config.
#   scripts/check_install.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath "${1:-build}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! (cd "$build_dir" && cpack -G DEB -B "$work/package" > "$work/cpack.log" 2>&1); then
  cat "$work/cpack.log"
  exit 1
fi
deb=$(ls "$work"/package/*.deb)
echo "check_install: built $(basename "$deb")"
dpkg-deb -x "$deb" "$work/root"
prefix="$work/root/usr"

expected=$(LC_ALL=C sort "$build_dir/ampcpp_public_headers.txt")
installed=$(cd "$prefix/include/ampcpp" && find . -name '*.h' | sed 's|^\./||' | LC_ALL=C sort)
if [[ "$expected" != "$installed" ]]; then
  echo "check_install: the package's headers differ from the public set (< expected, > packaged):"
  diff <(echo "$expected") <(echo "$installed") || true
  exit 1
fi
echo "check_install: $(echo "$installed" | wc -l) public headers, no others"

libdir=$(dirname "$(find "$prefix" -name 'libampcpp.so' | head -n 1)")
export LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}"

cmake -S tests/install_consumer -B "$work/cmake_consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$work/cmake_consumer" > /dev/null
echo -n "check_install: find_package consumer: "
"$work/cmake_consumer/consumer"

pc_dir=$(dirname "$(find "$prefix" -name ampcpp.pc | head -n 1)")
read -r -a pc_flags <<< "$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs ampcpp)"
g++ tests/install_consumer/main.cpp "${pc_flags[@]}" -o "$work/pkgconfig_consumer"
echo -n "check_install: pkg-config consumer: "
"$work/pkgconfig_consumer"

# The LibTorch bridge, when the build had LibTorch (docs/libtorch.md): the same two ways.
if [[ -n "$(find "$prefix" -name ampcpp-libtorch.pc)" ]]; then
  cmake -S tests/libtorch/install_consumer -B "$work/cmake_libtorch_consumer" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
  cmake --build "$work/cmake_libtorch_consumer" > /dev/null
  echo -n "check_install: find_package(ampcpp COMPONENTS libtorch) consumer: "
  "$work/cmake_libtorch_consumer/libtorch_consumer"
  read -r -a pc_flags <<< "$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs ampcpp-libtorch)"
  g++ -std=c++20 tests/libtorch/install_consumer/main.cpp "${pc_flags[@]}" \
    -o "$work/pkgconfig_libtorch_consumer"
  echo -n "check_install: pkg-config ampcpp-libtorch consumer: "
  "$work/pkgconfig_libtorch_consumer"
fi
