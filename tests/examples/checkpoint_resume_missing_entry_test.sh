#!/usr/bin/env bash
# examples/checkpoint_resume.cpp on a checkpoint that lacks an entry it reads itself: the run
# must end with exit status 1 and one message naming the entry, not abort on an uncaught
# exception (status 134), and must not resume.
#   checkpoint_resume_missing_entry_test.sh BINARY WORK_DIR
set -uo pipefail
binary=$1
work=$2
fail() {
  echo "checkpoint_resume_missing_entry_test: FAIL: $*"
  exit 1
}

rm -rf "$work"
mkdir -p "$work/complete"
"$binary" --dir "$work/complete" --steps 10 --checkpoint-every 5 >"$work/complete.log" 2>&1 ||
  fail "the run that writes the checkpoint failed: $(cat "$work/complete.log")"

for entry in rng.state progress.step progress.epoch; do
  dir="$work/without_$entry"
  mkdir -p "$dir"
  # The safetensors header is JSON: renaming the entry (same length, so the header's size and the
  # data offsets stay valid) removes it without touching the rest of the file.
  renamed="${entry%?}_"
  LC_ALL=C sed "s/\"$entry\"/\"$renamed\"/" "$work/complete/checkpoint.safetensors" \
    >"$dir/checkpoint.safetensors"
  cmp -s "$work/complete/checkpoint.safetensors" "$dir/checkpoint.safetensors" &&
    fail "the checkpoint has no entry named $entry to remove"
  output=$("$binary" --dir "$dir" --steps 20 --checkpoint-every 5 2>&1)
  status=$?
  printf '%s\n' "$output"
  [[ $status -eq 1 ]] || fail "without $entry: expected exit status 1, got $status"
  grep -q "^checkpoint_resume: the checkpoint has no '$entry' entry" <<<"$output" ||
    fail "without $entry: no line names the missing entry"
  grep -q "^resumed" <<<"$output" && fail "without $entry: the run resumed"
done
echo "checkpoint_resume_missing_entry_test: each missing entry is named, exit status 1"
