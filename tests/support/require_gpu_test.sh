#!/usr/bin/env bash
# The skip rules of tests/main.cpp for CUDA: without a device a gpu suite is Skipped (exit 77),
# and with AMPCPP_REQUIRE_GPU=1 the same skip is a failure (exit 4) that names the suite.
#   require_gpu_test.sh AMPCPP_TESTS SUITE
# Where a device is present the suite runs instead, and there is nothing to check: exit 77.
set -uo pipefail
tests=$1
suite=$2
output=$("$tests" --run_test="$suite" 2>&1)
status=$?
if [[ $status -eq 0 ]]; then
  echo "require_gpu_test: $suite ran (a CUDA device is present): nothing to check here"
  exit 77
fi
[[ $status -eq 77 ]] || { printf '%s\n' "$output"; echo "require_gpu_test: FAIL: expected 77 without a device, got $status"; exit 1; }
output=$(AMPCPP_REQUIRE_GPU=1 "$tests" --run_test="$suite" 2>&1)
status=$?
printf '%s\n' "$output"
[[ $status -eq 4 ]] || { echo "require_gpu_test: FAIL: expected 4 with AMPCPP_REQUIRE_GPU=1, got $status"; exit 1; }
grep -q "$suite was skipped for want of a CUDA device, and AMPCPP_REQUIRE_GPU=1" <<<"$output" ||
  { echo "require_gpu_test: FAIL: the failure does not name $suite"; exit 1; }
echo "require_gpu_test: Skipped without a device, a failure naming $suite with AMPCPP_REQUIRE_GPU=1"
