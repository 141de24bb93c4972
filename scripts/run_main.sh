#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what is missing, builds, and runs
# amp_compare with its defaults (an MLP trained on Fashion-MNIST under apex O0-O3 in fp16 and
# bf16, compared side by side; files in out/amp_compare). Extra arguments go to the program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh build
./build/examples/amp_compare "$@"
