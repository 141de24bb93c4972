#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what is missing, builds, and runs
# amp_compare with its defaults (an MLP trained on Fashion-MNIST under apex O0-O3 in fp16 and
# bf16, compared side by side; files in out/amp_compare). Extra arguments go to the program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
# Idle OpenMP threads sleep instead of spinning: on a 2-core machine where another process holds
# a core, a spinning 2-thread team trains several times slower (docs/amp_compare.md).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
./build/examples/amp_compare "$@"
