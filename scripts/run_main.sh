#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what is missing, builds the library and
# amp_compare (not the tests and benchmarks: scripts/build.sh or scripts/run_tests.sh build
# those), and runs amp_compare with its defaults (an MLP trained on Fashion-MNIST under apex
# O0-O3 in fp16 and bf16, compared side by side; files in out/amp_compare). Extra arguments go to
# the program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
# Before building, how long it will take: the object files still missing, at about 4 s each per
# core. The whole tree (211 files) took 13m38s on a fresh 2-core machine, 7.8 s per file and
# core; in the development machine's build log (2026-11-28) the library's files took 1.8 s each
# against 3.9 s for the average file, which makes about 3.6 s there. ccache hits are faster.
objects=$(ninja -C build -t commands amp_compare |
  awk '/ -c /{for (i = 1; i < NF; i++) if ($i == "-o") print $(i + 1)}')
total=$(wc -l <<<"$objects")
missing=0
while read -r object; do
  [[ -e "build/$object" ]] || missing=$((missing + 1))
done <<<"$objects"
cores=$(nproc)
echo "run_main: building the library and amp_compare (not the tests): ${missing} of ${total}" \
  "files to compile on ${cores} core(s), about $(((missing * 4 / cores + 30) / 60)) minute(s)"
cmake --build build -j "${cores}" --target amp_compare
# Idle OpenMP threads sleep instead of spinning: on a 2-core machine where another process holds
# a core, a spinning 2-thread team trains several times slower (docs/amp_compare.md).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
./build/examples/amp_compare "$@"
