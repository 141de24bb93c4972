#!/usr/bin/env bash
# The kill-and-resume test of examples/checkpoint_resume.cpp: a run killed with SIGKILL between
# checkpoints and started again must end with the same bytes in final.safetensors as a run that
# was never interrupted.
#   checkpoint_resume_test.sh BINARY WORK_DIR [--skip-rng-state]
# With --skip-rng-state the resumed run does not restore the random generator; the test then
# passes only when the final states differ (the comparison can fail).
set -euo pipefail
binary=$1
work=$2
expect=same
extra=()
if [[ "${3:-}" == "--skip-rng-state" ]]; then
  expect=different
  extra=(--skip-rng-state)
fi
options=(--steps 80 --checkpoint-every 10)
fail() {
  echo "checkpoint_resume_test: FAIL: $*"
  for log in "$work"/*.log; do echo "--- $log"; cat "$log"; done
  exit 1
}

rm -rf "$work"
mkdir -p "$work"

# 1. The reference: one uninterrupted run.
"$binary" --dir "$work/reference" "${options[@]}" >"$work/reference.log" 2>&1 ||
  fail "the uninterrupted run failed"

# 2. The same run, slowed down so that it is still running when it is killed, and killed with
#    SIGKILL a few steps after its checkpoint at step 40 (epoch 1, batch 8 at 32 batches per
#    epoch), so that the resumed run starts inside an epoch and redoes the steps after it.
"$binary" --dir "$work/resumed" "${options[@]}" --step-delay-ms 30 >"$work/killed.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "^step 40 .*checkpoint written" "$work/killed.log" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
sleep 0.12
kill -KILL "$pid" 2>/dev/null || true
status=0
wait "$pid" || status=$?
[[ $status -eq 137 ]] || fail "expected the run to die of SIGKILL (status 137), got status $status"
[[ -e "$work/resumed/final.safetensors" ]] && fail "the killed run got to the end before the kill"
[[ -e "$work/resumed/checkpoint.safetensors" ]] || fail "the killed run wrote no checkpoint"

# 3. Started again, it resumes from the checkpoint and runs to the end.
"$binary" --dir "$work/resumed" "${options[@]}" "${extra[@]}" >"$work/resumed.log" 2>&1 ||
  fail "the resumed run failed"
grep -Eq "^resumed from step [1-7]0 " "$work/resumed.log" ||
  fail "the second start did not resume from a checkpoint before the end"

# 4. The final states: every tensor's bytes, in one file each.
if cmp -s "$work/reference/final.safetensors" "$work/resumed/final.safetensors"; then
  [[ $expect == same ]] || fail "resuming without the RNG state still gave identical final states"
  echo "checkpoint_resume_test: $(grep '^resumed' "$work/resumed.log");" \
    "final.safetensors is bit-identical to the uninterrupted run's"
else
  [[ $expect == different ]] || fail "the final states differ: $(cmp "$work/reference/final.safetensors" "$work/resumed/final.safetensors" || true)"
  echo "checkpoint_resume_test: $(grep '^resumed' "$work/resumed.log");" \
    "without the RNG state the final state differs from the uninterrupted run's, as expected"
fi
