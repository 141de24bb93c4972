#!/usr/bin/env bash
# The GPU benchmark (docs/PERFORMANCE.md, "GPU kernels against the device's limits"), apart from
# the device check (scripts/gpu_check.sh) and prepared the same way: GPU minutes are few, so the
# development machine builds and packs, and the machine with the GPU only runs and reports:
#
#   scripts/gpu_bench.sh [--pack] [PACK_DIR]   # here: build (build-gpu) and pack PACK_DIR
#   scripts/gpu_bench.sh --run [PACK_DIR]      # there: unpack, run, print the report
#
# PACK_DIR defaults to gpu_bench_pack (ignored by git; the device tool carries it:
# carry=["gpu_bench_pack"]). --pack builds bench_gpu and amp_compare in Release with CUDA images
# for sm_80 and sm_90 plus PTX (gpu_check.sh's configuration and build directory) and packs them
# with libampcpp, the shared libraries the device image lacks and a Fashion-MNIST subset into
# PACK_DIR/pack.tar.xz. --run needs no compiler or CMake: within about 8 minutes it runs
# bench_gpu (copy bandwidth and GEMM peak, elementwise, casts, reductions, softmax, layer_norm,
# fused optimizers, GEMM and convolution; medians timed with CUDA events) and amp_compare's
# apex workflow, O0-O3 in fp16 and bf16, for the MLP at widths 1024 and 4096, the CNN at width 64
# and the transformer at width 512, each at batch 256 and 1024 (ms/step: the median step), and
# prints one markdown report, also written to $OUT/gpu_bench_report.md (else
# PACK_DIR/gpu_bench_report.md). Without a GPU --run says so and exits 77 (skipped).
# Exit status: 0 all ran, 1 a program failed or ran out of time, 2 bad usage or a broken pack,
# 77 no GPU.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
mode=pack
args=()
for a in "$@"; do
  case "$a" in
    --pack) mode=pack ;;
    --run) mode=run ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "gpu_bench.sh: unknown option $a (--pack, --run, --help)" >&2
      exit 2
      ;;
    *) args+=("$a") ;;
  esac
done
pack_dir=${args[0]:-$repo/gpu_bench_pack}
[[ "$pack_dir" = /* ]] || pack_dir=$PWD/$pack_dir

readonly kTrainSubset=8192  # Fashion-MNIST training images in the pack
readonly kTestSubset=1000   # and test images

# ---- pack (development machine) -----------------------------------------------------------------

# The first N records of a gzipped IDX file, with the count rewritten (as gpu_check.sh does).
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
header = struct.pack(">I", magic) + struct.pack(">" + "I" * rank, n, *dims[1:])
start = 4 + 4 * rank
with gzip.open(target, "wb", compresslevel=9) as f:
    f.write(header + data[start:start + n * record])
EOF
}

pack() {
  local build=${AMPCPP_GPU_BUILD_DIR:-$repo/build-gpu}
  cd "$repo" || exit 2
  command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || {
    echo "gpu_bench.sh --pack: no nvcc on PATH or under /usr/local/cuda: cannot build the CUDA backend" >&2
    exit 2
  }
  local data=${AMPCPP_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
  [[ -f $data/train-images-idx3-ubyte.gz ]] || {
    echo "gpu_bench.sh --pack: no Fashion-MNIST in $data (scripts/setup.sh installs it)" >&2
    exit 2
  }
  mkdir -p "$build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMPCPP_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="80;90" -DAMPCPP_LIBTORCH=OFF -DAMPCPP_MPI=OFF -DAMPCPP_NCCL=OFF \
    -DAMPCPP_BUILD_TESTS=ON -DAMPCPP_BUILD_EXAMPLES=ON > "$build/gpu_bench.configure.log" 2>&1 || {
    cat "$build/gpu_bench.configure.log"
    exit 2
  }
  echo "gpu_bench.sh: building bench_gpu and amp_compare (log: $build/gpu_bench.build.log)"
  cmake --build "$build" -j "$(nproc)" --target bench_gpu amp_compare > "$build/gpu_bench.build.log" 2>&1 || {
    tail -40 "$build/gpu_bench.build.log"
    exit 2
  }
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
  cp "$build/bench/bench_gpu" "$build/examples/amp_compare" "$stage/bin/"
  cp -P "$build"/libampcpp.so* "$stage/lib/"
  # Every shared library but the C/C++ runtime and CUDA's own (the device's toolkit has them).
  ldd "$stage/bin/bench_gpu" "$stage/bin/amp_compare" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    sort -u | while read -r name path; do
    case "$name" in
      libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libgcc_s.so* | \
        libstdc++.so* | libcuda.so* | libcudart.so* | libcublas*.so* | libnccl.so* | \
        libnvidia* | libampcpp.so*) ;;
      *) cp -L "$path" "$stage/lib/$name" ;;
    esac
  done
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* 2> /dev/null
  for prefix in train:$kTrainSubset t10k:$kTestSubset; do
    for kind in images-idx3 labels-idx1; do
      write_idx_subset "$data/${prefix%%:*}-$kind-ubyte.gz" "$stage/data/${prefix%%:*}-$kind-ubyte.gz" \
        "${prefix##*:}" || exit 2
    done
  done
  {
    echo "commit: $(git rev-parse HEAD 2> /dev/null)$(git diff --quiet HEAD 2> /dev/null || echo ' (with uncommitted changes)')"
    echo "packed: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
    echo "nvcc: $( (nvcc --version 2> /dev/null || /usr/local/cuda/bin/nvcc --version) | tail -1)"
  } > "$stage/MANIFEST.txt"
  mkdir -p "$pack_dir"
  rm -f "$pack_dir/pack.tar.xz" "$pack_dir/MANIFEST.txt"
  tar -C "$stage" -cf - . | xz -T0 -6 > "$pack_dir/pack.tar.xz" || exit 2
  cp "$stage/MANIFEST.txt" "$pack_dir/"
  cat "$pack_dir/MANIFEST.txt"
  echo "pack: $pack_dir ($(($(du -cb "$pack_dir" | tail -1 | cut -f1) / 1048576)) MiB)"
  echo "run it on the device: scripts/gpu_bench.sh --run $(realpath --relative-to="$repo" "$pack_dir")  (carry: $(realpath --relative-to="$repo" "$pack_dir"))"
}

# ---- run (the machine with the GPU) -------------------------------------------------------------

readonly kBudgetSeconds=470  # the whole run, under the 8 minutes the benchmark is sized for
failures=0
report=""

say() { echo "$*" | tee -a "$report"; }

# Runs a command with a time limit of min($1, what is left of the budget), its output to the
# file $1 names; returns its status (124: the limit ended it, 125: no time was left to start it).
run_limited() {
  local cap=$1 out=$2 left
  shift 2
  left=$((kBudgetSeconds - SECONDS))
  ((left < cap)) && cap=$left
  ((cap < 5)) && return 125
  timeout --kill-after=5 "$cap" "$@" > "$out" 2>&1
}

# amp_compare's apex workflow at one model, width and batch: its table of opt levels, dtypes and
# ms/step (the median step) into the report. Batch 1024 runs 3 epochs of the subset (24 steps).
run_amp_compare() {
  local bin=$1 model=$2 width=$3 batch=$4 epochs=1 status
  ((batch >= 1024)) && epochs=3
  local out=$work/amp_compare_${model}_${width}_$batch
  mkdir -p "$out"
  run_limited 60 "$out/log" "$bin/amp_compare" --model "$model" --width "$width" \
    --batch-size "$batch" --epochs "$epochs" --opt-levels O0,O1,O2,O3 --dtype both \
    --data-dir "$unpacked/data" --train-limit "$kTrainSubset" --test-limit "$kTestSubset" \
    --device cuda --quiet --out "$out/results"
  status=$?
  say ""
  say "#### $model, width $width, batch $batch ($epochs epoch(s) of $kTrainSubset images)"
  say ""
  if ((status != 0)); then
    say "FAILED (exit $status$( ((status == 124)) && echo ', out of time')$( ((status == 125)) && echo ', not started: out of time')):"
    say '```'
    tail -5 "$out/log" | tee -a "$report"
    say '```'
    failures=$((failures + 1))
    return
  fi
  say '```'
  tee -a "$report" < "$out/log"
  say '```'
}

run() {
  local pack_file=$pack_dir/pack.tar.xz
  report=${OUT:+$OUT/gpu_bench_report.md}
  report=${report:-$pack_dir/gpu_bench_report.md}
  mkdir -p "$(dirname "$report")"
  : > "$report"
  SECONDS=0
  say "# ampcpp GPU benchmark, $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
  say ""
  local gpus
  gpus=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null)
  if [[ -z $gpus ]]; then
    say "no GPU: nvidia-smi lists none; nothing measured."
    say "RESULT: SKIPPED (no GPU)"
    exit 77
  fi
  if [[ ! -f $pack_file ]]; then
    say "BROKEN: no $pack_file (make it on the development machine: scripts/gpu_bench.sh --pack)"
    exit 2
  fi
  say "device (nvidia-smi): $gpus"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  unpacked=$work/pack
  mkdir -p "$unpacked"
  xz -dc "$pack_file" | tar -C "$unpacked" -xf - || { say "BROKEN: cannot unpack $pack_file"; exit 2; }
  sed 's/^/pack /' "$unpacked/MANIFEST.txt" | tee -a "$report"
  local bin=$unpacked/bin
  export LD_LIBRARY_PATH=$unpacked/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OMP_WAIT_POLICY=passive
  say ""
  run_limited 240 "$work/bench_gpu.md" "$bin/bench_gpu"
  local status=$?
  tee -a "$report" < "$work/bench_gpu.md"
  if ((status != 0)); then
    say ""
    say "bench_gpu FAILED (exit $status$( ((status == 124)) && echo ', out of time'))"
    failures=$((failures + 1))
  fi
  say ""
  say "### amp_compare step times (apex workflow, TF32 off; ms/step is the median step)"
  for batch in 256 1024; do
    for width in 1024 4096; do run_amp_compare "$bin" mlp "$width" "$batch"; done
    run_amp_compare "$bin" cnn 64 "$batch"
    run_amp_compare "$bin" transformer 512 "$batch"
  done
  say ""
  say "time: ${SECONDS} s of the ${kBudgetSeconds} s budget"
  if ((failures == 0)); then
    say "RESULT: DONE"
    exit 0
  fi
  say "RESULT: $failures program(s) failed"
  exit 1
}

if [[ $mode == pack ]]; then pack; else run; fi
