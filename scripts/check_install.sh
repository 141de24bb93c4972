#!/usr/bin/env bash
# Packages an already built ampcpp as a .deb (cpack -G DEB), unpacks it into a temporary root,
# checks that it holds exactly the public headers (the list of cmake/ampcpp_public_headers.cmake,
# which the build writes to ampcpp_public_headers.txt), that every header it holds includes only
# headers it holds, and that its libampcpp.so exports no testing hook and only the listed detail
# symbols (cmake/check_exports.cmake), then builds and runs a small outside project against it
# twice: with find_package(ampcpp) and with pkg-config.
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

# An installed header that includes one of ours that is not installed would not compile.
missing=""
while read -r header; do
  while read -r included; do
    if [[ -f "$included" && ! -f "$prefix/include/ampcpp/$included" ]]; then
      missing+="  $header includes $included, which is not installed"$'\n'
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$prefix/include/ampcpp/$header")
done <<< "$installed"
if [[ -n "$missing" ]]; then
  echo "check_install: installed headers need headers that are not installed:"
  echo -n "$missing"
  exit 1
fi
echo "check_install: every installed header includes installed headers only"

libdir=$(dirname "$(find "$prefix" -name 'libampcpp.so' | head -n 1)")
cmake -DLIBRARY="$libdir/libampcpp.so" -DNM=nm -DDOC=docs/architecture.md \
  -P cmake/check_exports.cmake
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
