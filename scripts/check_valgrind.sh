#!/usr/bin/env bash
# Runs a sample of the test suites under valgrind's memcheck on an already built tree:
#   scripts/check_valgrind.sh [BUILD_DIR]
# Valgrind's virtual CPU has no AVX-512, so the run also shows that the default build works on a
# CPU without it: the CPU kernels pick their avx2 copies, and an instruction the CPU lacks anywhere
# else would stop the run with SIGILL. The sample covers every dispatched kernel family (the
# cpu_dispatch suite calls each level's tables directly) and a training loop through the fused
# kernels and oneDNN.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
suites=${AMPCPP_VALGRIND_SUITES:-cpu_dispatch,three_line_upgrade}
echo "check_valgrind: $suites under valgrind $(valgrind --version | sed 's/valgrind-//')"
start=$(date +%s)
valgrind --quiet --error-exitcode=99 --suppressions=tests/valgrind.supp \
  "$build_dir/tests/ampcpp_tests" --run_test="$suites" --log_level=message
echo "check_valgrind: passed in $(( $(date +%s) - start )) s"
