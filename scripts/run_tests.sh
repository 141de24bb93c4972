#!/usr/bin/env bash
# Installs what is missing, builds and runs every test with ctest.
#   scripts/run_tests.sh             release build in build/, all tests (gpu ones skip without a GPU),
#                                    then the unit and golden tests at the lowest CPU level and a
#                                    sample under valgrind
#   scripts/run_tests.sh --sanitize  AddressSanitizer + UndefinedBehaviorSanitizer build in
#                                    build-asan/ (-O1, CPU backend), unit tests
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ "${1:-}" == "--sanitize" ]]; then
  # The unit label needs the test executable and the shared library (the export and CPU-level
  # checks), nothing else (scripts/asan_config.sh has the options).
  # shellcheck source=scripts/asan_config.sh
  source scripts/asan_config.sh
  AMPCPP_BUILD_TARGETS="ampcpp_tests ampcpp" bash scripts/build.sh build-asan "${AMPCPP_ASAN_CONFIG[@]}"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L unit
else
  bash scripts/build.sh build
  ctest --test-dir build --output-on-failure -j "$(nproc)"
  # The CPU kernels at the lowest dispatch level (docs/building.md, "One binary for every
  # x86-64 CPU"); the run above used the highest level this CPU supports.
  echo "run_tests: unit and golden tests again with AMPCPP_CPU_LEVEL=scalar"
  AMPCPP_CPU_LEVEL=scalar ctest --test-dir build --output-on-failure -j "$(nproc)" -L 'unit|golden'
  bash scripts/check_valgrind.sh build
fi
