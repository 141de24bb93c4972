# shellcheck shell=bash
# Sourced by scripts/run_tests.sh --sanitize and scripts/run_fuzz.sh: the CMake options of
# build-asan/, the one clang build both use (cmake/ampcpp_sanitize.cmake): ASan + UBSan at -O1 with
# libFuzzer's coverage instrumentation, so that the library is compiled once for the sanitizer
# unit tests and the fuzz targets. CPU backend only: CUDA's runtime and ASan's shadow memory do
# not mix, and LibTorch is not instrumented; both compile and run in the main build.
# shellcheck disable=SC2034
AMPCPP_ASAN_CONFIG=(-DAMPCPP_SANITIZE=ON -DAMPCPP_FUZZ=ON -DAMPCPP_CUDA=OFF
  -DAMPCPP_BUILD_EXAMPLES=OFF -DAMPCPP_BUILD_BENCH=OFF -DAMPCPP_LIBTORCH=OFF)
