#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (clang, ASan + UBSan, CPU only) in build-fuzz/ and
# runs each from its seed corpus, one after the other on one core; fails on the first crash,
# leak, timeout or broken property (docs/building.md, "Fuzzing").
#   scripts/run_fuzz.sh                          every target for 20 s (what CI runs)
#   scripts/run_fuzz.sh --time 600 fuzz_idx      one target for 600 s
#   scripts/run_fuzz.sh --runs 10000000          every target for 10M executions, no time limit
#   scripts/run_fuzz.sh --runs 10000000 --time 1200   10M executions or 20 minutes, the first
#   scripts/run_fuzz.sh --seed 0 --time 3600     a seed of libFuzzer's choosing (default: 1)
#   FUZZ_ARGS='-max_len=8192' scripts/run_fuzz.sh   more libFuzzer flags
# New inputs that reach new code go to build-fuzz/corpus/<target>/ (kept between runs); a
# crashing input is written to build-fuzz/artifacts/<target>/ and named in the failure message.
set -euo pipefail
cd "$(dirname "$0")/.."

time_s=
runs=-1
# A fixed seed makes a run reproducible: the inputs CI tries in its 20 s are the first ones a
# longer local run with the same seed tries. --seed 0 lets libFuzzer pick one.
seed=1
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
# Without --time: 20 s, or no time limit when --runs bounds the run.
if [[ -z $time_s ]]; then
  if [[ $runs == -1 ]]; then time_s=20; else time_s=0; fi
fi
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(fuzz_safetensors fuzz_idx fuzz_load_state_dict)
fi

bash scripts/setup.sh
build_start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DAMPCPP_FUZZ=ON -DAMPCPP_CPU_SCALAR_ONLY=ON -DAMPCPP_CUDA=OFF -DAMPCPP_BUILD_TESTS=OFF \
  -DAMPCPP_BUILD_EXAMPLES=OFF -DAMPCPP_BUILD_BENCH=OFF -DAMPCPP_LIBTORCH=OFF > /dev/null
cmake --build build-fuzz --target ampcpp_fuzz -j "$(nproc)"
echo "run_fuzz: build done in $(( $(date +%s) - build_start )) s"

# One thread per fuzzer: the inputs are tiny, and the machine is shared.
export OMP_NUM_THREADS=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
for target in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$target
  artifacts=build-fuzz/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  echo "run_fuzz: $target (max_total_time=$time_s, runs=$runs, seed=$seed)"
  # -malloc_limit_mb: the readers allocate at most what an input holds (a few KiB; gzip may
  # expand it), so one allocation of 64 MiB is already a bug. -timeout: one input for 10 s is a
  # hang. Nothing else is printed per execution beyond libFuzzer's progress lines.
  # shellcheck disable=SC2086
  if ! "build-fuzz/tests/fuzz/$target" -max_total_time="$time_s" -runs="$runs" -seed="$seed" \
      -malloc_limit_mb=64 -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      ${FUZZ_ARGS:-} "$corpus" "tests/fuzz/corpus/$target"; then
    echo "run_fuzz: $target FAILED; the input is in $artifacts/ (rerun it:" \
      "build-fuzz/tests/fuzz/$target <file>)" >&2
    exit 1
  fi
done
echo "run_fuzz: ${targets[*]}: no crash"
