#!/usr/bin/env bash
# The smoke test of one example program: runs it and checks its exit status and its output.
#   run_example.sh [--status N] [--expect REGEX]... -- COMMAND [ARGS...]
# Passes when COMMAND exits with N (default 0) and every REGEX (grep -E) matches a line of its
# output (stdout and stderr). An exit status of 77 where 0 was expected is passed on, so ctest
# reports the test as Skipped (an example whose data is not installed).
set -uo pipefail
status=0
expects=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --status) status=$2; shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    *) echo "run_example: unknown option '$1'"; exit 2 ;;
  esac
done
[[ "${1:-}" == "--" && $# -ge 2 ]] || { echo "run_example: expected -- COMMAND [ARGS...]"; exit 2; }
shift
output=$("$@" 2>&1)
got=$?
printf '%s\n' "$output"
if [[ $got -eq 77 && $status -eq 0 ]]; then
  echo "run_example: skipped ($1 exited with 77)"
  exit 77
fi
failed=0
if [[ $got -ne $status ]]; then
  echo "run_example: FAIL: expected exit status $status, got $got"
  failed=1
fi
for regex in "${expects[@]}"; do
  if ! grep -Eq -- "$regex" <<<"$output"; then
    echo "run_example: FAIL: no line of the output matches '$regex'"
    failed=1
  fi
done
exit $failed
