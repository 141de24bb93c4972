#!/usr/bin/env bash
# The prepared device check (docs/building.md, "Device check"). GPU minutes are few, so the
# development machine builds and packs everything, and the machine with the GPU only runs it:
#
#   scripts/gpu_check.sh [--pack] [PACK_DIR]        # here: build (build-gpu) and pack PACK_DIR
#   scripts/gpu_check.sh --run [PACK_DIR] [REPORT]  # there: unpack, run, write REPORT
#
# PACK_DIR defaults to gpu_pack (ignored by git; the device tool carries it: carry=["gpu_pack"]).
# --pack builds ampcpp_tests and amp_compare in Release with CUDA images for sm_80 and sm_90 plus
# PTX (compute_80, compute_90), LibTorch, MPI and NCCL off (one GPU runs no NCCL test, and the
# device has no Open MPI), and packs into PACK_DIR/pack.tar.xz (at most 64 MiB with the working
# tree): the two programs, libampcpp, the shared libraries the device image lacks (the CUDA
# libraries and the driver are the device's), the list of gpu suites from tests/suites.cmake and
# a Fashion-MNIST subset. --run needs no compiler or CMake: within 4 minutes it runs every gpu
# suite with AMPCPP_REQUIRE_GPU=1 (a skip is a failure), compute-sanitizer memcheck over a few
# small gpu suites where the tool is there, and amp_compare --device cuda, 2 epochs on the subset,
# for each model amp_compare accepts on cuda (and the same run on the CPU to compare), and writes
# one report (REPORT, default $OUT/gpu_check_report.txt, else PACK_DIR/gpu_check_report.txt).
# Without a GPU --run writes a report saying so and exits 77 (skipped); --run --force runs anyway
# (to try the run path on a machine without one: every gpu suite then fails).
# Exit status: 0 all passed, 1 a check failed, 2 bad usage or a broken pack, 77 no GPU.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
mode=pack
force=0
args=()
for a in "$@"; do
  case "$a" in
    --pack) mode=pack ;;
    --run) mode=run ;;
    --force) force=1 ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "gpu_check.sh: unknown option $a (--pack, --run, --force, --help)" >&2
      exit 2
      ;;
    *) args+=("$a") ;;
  esac
done
pack_dir=${args[0]:-$repo/gpu_pack}
[[ "$pack_dir" = /* ]] || pack_dir=$PWD/$pack_dir

readonly kLimitBytes=$((64 * 1024 * 1024))  # what the device tool carries, working tree included
readonly kTrainSubset=8192                   # Fashion-MNIST training images in the pack
readonly kTestSubset=2000                    # and test images

# ---- pack (development machine) -----------------------------------------------------------------

# The first N records of a gzipped IDX file (header: magic, then the dimensions as big-endian
# int32, the first being the count), with the count rewritten.
write_idx_subset() {
  python3 - "$1" "$2" "$3" <<'EOF'
import gzip, struct, sys
source, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with gzip.open(source, "rb") as f:
    data = f.read()
magic = struct.unpack(">I", data[:4])[0]
rank = magic & 0xFF
dims = list(struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank]))
record = 1
for d in dims[1:]:
    record *= d
if n > dims[0]:
    sys.exit(f"{source} holds {dims[0]} records, fewer than {n}")
header = struct.pack(">I", magic) + struct.pack(">" + "I" * rank, n, *dims[1:])
start = 4 + 4 * rank
with gzip.open(target, "wb", compresslevel=9) as f:
    f.write(header + data[start:start + n * record])
EOF
}

# Shared libraries of the binaries that the device's image is not relied on to have: everything
# but the C/C++ runtime (the device's is newer) and CUDA's own libraries (the device's toolkit and
# driver provide them, and cuBLAS alone is larger than the carry limit).
copy_libraries() {
  local lib_dir=$1
  shift
  ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      case "$name" in
        libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libgcc_s.so* | \
          libstdc++.so* | libcuda.so* | libcudart.so* | libcublas*.so* | libnccl.so* | \
          libnvidia* | libampcpp.so*) ;;
        *) cp -L "$path" "$lib_dir/$name" ;;
      esac
    done
}

pack() {
  local build=${AMPCPP_GPU_BUILD_DIR:-$repo/build-gpu}
  cd "$repo" || exit 2
  command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || {
    echo "gpu_check.sh --pack: no nvcc on PATH or under /usr/local/cuda: cannot build the CUDA backend" >&2
    exit 2
  }
  local data=${AMPCPP_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
  [[ -f $data/train-images-idx3-ubyte.gz ]] || {
    echo "gpu_check.sh --pack: no Fashion-MNIST in $data (scripts/setup.sh installs it; AMPCPP_FASHION_MNIST_DIR points elsewhere)" >&2
    exit 2
  }
  mkdir -p "$build"
  echo "gpu_check.sh: configuring $build"
  # Architectures "80;90" are sm_80 and sm_90 machine code each with its PTX (CMake's plain
  # numbers mean real + virtual), the same flags as the default build so ccache serves it.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMPCPP_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="80;90" -DAMPCPP_LIBTORCH=OFF -DAMPCPP_MPI=OFF -DAMPCPP_NCCL=OFF \
    -DAMPCPP_BUILD_TESTS=ON -DAMPCPP_BUILD_EXAMPLES=ON > "$build/gpu_check.configure.log" 2>&1 || {
    cat "$build/gpu_check.configure.log"
    exit 2
  }
  echo "gpu_check.sh: building ampcpp_tests and amp_compare (log: $build/gpu_check.build.log)"
  cmake --build "$build" -j "$(nproc)" --target ampcpp_tests amp_compare > "$build/gpu_check.build.log" 2>&1 || {
    tail -40 "$build/gpu_check.build.log"
    exit 2
  }
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
  cp "$build/tests/ampcpp_tests" "$build/examples/amp_compare" "$stage/bin/"
  cp -P "$build"/libampcpp.so* "$stage/lib/"
  copy_libraries "$stage/lib" "$stage/bin/ampcpp_tests" "$stage/bin/amp_compare"
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* 2> /dev/null
  # The gpu suites as ctest knows them (label gpu), run one by one on the device.
  sed -n 's/^ampcpp_add_suite(\([A-Za-z0-9_]*\) gpu)$/\1/p' tests/suites.cmake > "$stage/gpu_suites.txt"
  [[ -s $stage/gpu_suites.txt ]] || { echo "gpu_check.sh --pack: no gpu suite in tests/suites.cmake" >&2; exit 2; }
  for prefix in train:$kTrainSubset t10k:$kTestSubset; do
    for kind in images-idx3 labels-idx1; do
      write_idx_subset "$data/${prefix%%:*}-$kind-ubyte.gz" "$stage/data/${prefix%%:*}-$kind-ubyte.gz" \
        "${prefix##*:}" || exit 2
    done
  done
  # The images the library carries: the device needs sm_90 (H100/H200) machine code or PTX to
  # compile from. cuobjdump reads them from the library where the toolkit has it; otherwise the
  # nvcc flags of the build say what was asked for.
  local images
  if command -v cuobjdump > /dev/null; then
    images="elf $(cuobjdump --list-elf "$stage/lib/libampcpp.so" | grep -o 'sm_[0-9]*' | sort -u | tr '\n' ' ')"
    images+="ptx $(cuobjdump --list-ptx "$stage/lib/libampcpp.so" | grep -o 'sm_[0-9]*' | sort -u | tr '\n' ' ')"
    [[ $images == *"elf "*sm_80*sm_90*"ptx "*sm_* ]]
  else
    images="nvcc $(grep -o 'generate-code=arch=compute_[0-9]*,code=\[[^]]*\]' "$build/build.ninja" | sort -u | tr '\n' ' ')"
    [[ $images == *"code=[compute_80,sm_80]"* && $images == *"code=[compute_90,sm_90]"* ]]
  fi || {
    echo "gpu_check.sh --pack: libampcpp.so lacks sm_80 or sm_90 machine code or PTX ($images)" >&2
    exit 2
  }
  {
    echo "commit: $(git rev-parse HEAD 2> /dev/null)$(git diff --quiet HEAD 2> /dev/null || echo ' (with uncommitted changes)')"
    echo "packed: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
    echo "nvcc: $(nvcc --version 2> /dev/null | tail -1 || /usr/local/cuda/bin/nvcc --version | tail -1)"
    echo "cuda images: $images"
    echo "gpu suites: $(tr '\n' ' ' < "$stage/gpu_suites.txt")"
    echo "data: Fashion-MNIST first $kTrainSubset training and $kTestSubset test images"
    echo "libraries carried: $(cd "$stage/lib" && ls | tr '\n' ' ')"
  } > "$stage/MANIFEST.txt"
  mkdir -p "$pack_dir"
  rm -f "$pack_dir/pack.tar.xz" "$pack_dir/MANIFEST.txt"
  echo "gpu_check.sh: compressing"
  tar -C "$stage" -cf - . | xz -T0 -6 > "$pack_dir/pack.tar.xz" || exit 2
  cp "$stage/MANIFEST.txt" "$pack_dir/"
  local pack_bytes tree_bytes
  pack_bytes=$(du -cb "$pack_dir" | tail -1 | cut -f1)
  tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2> /dev/null |
    awk '$2 == "total" {s += $1} END {print s + 0}')
  cat "$pack_dir/MANIFEST.txt"
  echo "pack: $pack_dir ($((pack_bytes / 1048576)) MiB; with the working tree $(((pack_bytes + tree_bytes) / 1048576)) of 64 MiB)"
  if ((pack_bytes + tree_bytes > kLimitBytes)); then
    echo "gpu_check.sh --pack: FAIL: the pack and the working tree exceed the 64 MiB the device tool carries" >&2
    exit 1
  fi
  echo "run it on the device: scripts/gpu_check.sh --run $(realpath --relative-to="$repo" "$pack_dir")  (carry: $(realpath --relative-to="$repo" "$pack_dir"))"
}

# ---- run (the machine with the GPU) -------------------------------------------------------------

readonly kBudgetSeconds=230  # the whole run, under the 4 minutes the check is sized for
failures=0
report=""
log=""

say() { echo "$*" | tee -a "$report"; }
seconds_left() { echo $((kBudgetSeconds - SECONDS)); }

# Runs a command with a time limit of min($1, what is left), appending its output to the report
# (or to the file $log names, when set); returns its status (124 when the limit ended it, 125
# when no time was left to start it).
run_limited() {
  local cap=$1 left
  shift
  left=$(seconds_left)
  ((left < cap)) && cap=$left
  if ((cap < 5)); then
    say "  (not run: out of time)"
    return 125
  fi
  timeout --kill-after=5 "$cap" "$@" >> "${log:-$report}" 2>&1
}

# Directories holding the libraries ldd cannot find yet (the device's CUDA libraries may sit in
# the toolkit or in Python's nvidia-* packages).
find_library_dirs() {
  local missing name dir
  missing=$(ldd "$@" 2> /dev/null | awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u)
  for name in $missing; do
    dir=$(find /usr/local /usr/lib /usr/lib64 /opt -name "$name" -print -quit 2> /dev/null)
    [[ -n $dir ]] && dirname "$dir"
  done | sort -u | tr '\n' ':'
}

run_suites() {
  local bin=$1 suite status
  say ""
  say "== gpu suites (AMPCPP_REQUIRE_GPU=1: a skip is a failure) =="
  while read -r suite; do
    [[ -n $suite ]] || continue
    echo "-- $suite" >> "$report"
    AMPCPP_REQUIRE_GPU=1 OMP_WAIT_POLICY=passive run_limited 90 "$bin/ampcpp_tests" \
      --run_test="$suite" --log_level=message --report_level=short
    status=$?
    if ((status == 0)); then
      say "PASS $suite"
    else
      say "FAIL $suite (exit $status$( ((status == 124)) && echo ', timed out'))"
      failures=$((failures + 1))
    fi
  done < "$unpacked/gpu_suites.txt"
}

run_memcheck() {
  local bin=$1 sanitizer suite status
  say ""
  say "== compute-sanitizer memcheck =="
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -1)
  if [[ -z $sanitizer ]]; then
    say "SKIP memcheck: no compute-sanitizer on this machine"
    return
  fi
  # Small suites that launch many kinds of kernel: memcheck slows kernels 10-100 times, so the
  # three share 75 s and leave the rest of the budget to amp_compare.
  local memcheck_end=$((SECONDS + 75))
  for suite in gpu_multi_tensor gpu_grad_scaler gpu_ops; do
    grep -qx "$suite" "$unpacked/gpu_suites.txt" || continue
    echo "-- memcheck $suite" >> "$report"
    AMPCPP_REQUIRE_GPU=1 run_limited $((memcheck_end - SECONDS)) "$sanitizer" --tool memcheck --error-exitcode 99 \
      --print-limit 20 "$bin/ampcpp_tests" --run_test="$suite" --log_level=nothing --report_level=short
    status=$?
    case $status in
      0) say "PASS memcheck $suite: 0 errors" ;;
      99) say "FAIL memcheck $suite: errors reported (above in the log)"; failures=$((failures + 1)) ;;
      124 | 125) say "INCOMPLETE memcheck $suite: out of time (exit $status)" ;;
      *) say "FAIL memcheck $suite: exit $status"; failures=$((failures + 1)) ;;
    esac
  done
}

# Final test accuracy per run from amp_compare's results.json, "opt_level/dtype=accuracy" a line.
accuracies() {
  python3 - "$1" <<'EOF' 2> /dev/null
import json, sys
for run in json.load(open(sys.argv[1]))["runs"]:
    print(f"{run['workflow']}:{run['opt_level']}/{run['dtype']}={run['test_accuracy']}")
EOF
}

run_amp_compare() {
  local bin=$1 model status
  say ""
  say "== amp_compare, 2 epochs, Fashion-MNIST subset ($kTrainSubset/$kTestSubset): cuda, then cpu =="
  for model in mlp cnn transformer; do
    local out=$work/amp_compare_$model
    mkdir -p "$out"
    local common=(--model "$model" --epochs 2 --data-dir "$unpacked/data" --train-limit "$kTrainSubset"
      --test-limit "$kTestSubset" --threads "$(nproc)" --quiet)
    log=$out/cuda.log
    run_limited 45 "$bin/amp_compare" "${common[@]}" --device cuda --out "$out/cuda"
    status=$?
    log=""
    sed "s/^/  [$model cuda] /" "$out/cuda.log" >> "$report"
    # Exit 2 is a usage error: the build may not run this model on cuda yet, and says so.
    if ((status == 2)) && grep -q "cpu only\|no CUDA kernel" "$out/cuda.log"; then
      say "NOT ACCEPTED on cuda by this build: $model ($(tail -1 "$out/cuda.log"))"
      continue
    fi
    if ((status != 0)); then
      say "FAIL amp_compare $model on cuda (exit $status)"
      failures=$((failures + 1))
      continue
    fi
    say "PASS amp_compare $model on cuda"
    log=$out/cpu.log
    run_limited 45 "$bin/amp_compare" "${common[@]}" --device cpu --out "$out/cpu"
    status=$?
    log=""
    if ((status != 0)); then
      say "  (no CPU reference for $model: exit $status)"
      continue
    fi
    say "  test accuracy, cuda against cpu (issue 27: within 1 point; DIFFERS counts as a failure):"
    local table
    table=$(paste -d' ' <(accuracies "$out/cuda/results.json") <(accuracies "$out/cpu/results.json") |
      awk '{split($1, c, "="); split($2, p, "="); d = (c[2] - p[2]) * 100; if (d < 0) d = -d;
            printf "  %-14s cuda %.4f cpu %.4f %s\n", c[1], c[2], p[2], (d <= 1 ? "ok" : "DIFFERS")}')
    say "$table"
    if [[ -z $table || $table == *DIFFERS* ]]; then
      say "FAIL amp_compare $model: cuda and cpu accuracies differ by more than 1 point (or unreadable)"
      failures=$((failures + 1))
    fi
  done
}

run() {
  local pack_file=$pack_dir/pack.tar.xz
  report=${args[1]:-${OUT:+$OUT/gpu_check_report.txt}}
  report=${report:-$pack_dir/gpu_check_report.txt}
  mkdir -p "$(dirname "$report")"
  : > "$report"
  SECONDS=0
  say "ampcpp device check, $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
  if [[ ! -f $pack_file ]]; then
    say "BROKEN: no $pack_file (make it on the development machine: scripts/gpu_check.sh --pack)"
    exit 2
  fi
  local gpus
  gpus=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null)
  if [[ -z $gpus ]]; then
    say "no NVIDIA GPU: nvidia-smi lists none$( ((force)) && echo ' (--force: running anyway)')"
    if ((!force)); then
      say "RESULT: SKIPPED (no GPU)"
      exit 77
    fi
  else
    say "device: $gpus"
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  unpacked=$work/pack
  mkdir -p "$unpacked"
  xz -dc "$pack_file" | tar -C "$unpacked" -xf - || { say "BROKEN: cannot unpack $pack_file"; exit 2; }
  sed 's/^/pack /' "$unpacked/MANIFEST.txt" | tee -a "$report"
  local bin=$unpacked/bin
  export LD_LIBRARY_PATH=$unpacked/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(find_library_dirs "$bin/ampcpp_tests" "$bin/amp_compare")
  local missing
  missing=$(ldd "$bin/ampcpp_tests" "$bin/amp_compare" 2>&1 | grep "not found" | sort -u)
  if [[ -n $missing ]]; then
    say "BROKEN: libraries not found on this machine:"
    say "$missing"
    say "RESULT: FAIL"
    exit 2
  fi
  # What the device runs: machine code for its architecture, or PTX the driver compiles.
  if command -v cuobjdump > /dev/null; then
    say "library images: $(cuobjdump --list-elf "$unpacked/lib/libampcpp.so" 2> /dev/null |
      grep -o 'sm_[0-9]*' | sort | uniq -c | tr -s ' \n' ' ')"
  fi
  run_suites "$bin"
  run_memcheck "$bin"
  run_amp_compare "$bin"
  say ""
  say "time: ${SECONDS} s of the ${kBudgetSeconds} s budget"
  if ((failures == 0)); then
    say "RESULT: PASS"
    exit 0
  fi
  say "RESULT: FAIL ($failures failed)"
  exit 1
}

if [[ $mode == pack ]]; then pack; else run; fi
