# shellcheck shell=bash
# Sourced by scripts/run_tests.sh --sanitize: the CMake options of build-asan/, the sanitizer build
# of the unit tests (GCC, ASan + UBSan at -O1; cmake/ampcpp_sanitize.cmake). CPU backend only:
# CUDA's runtime and ASan's shadow memory do not mix, and LibTorch is not instrumented; both
# compile and run in the main build.
# shellcheck disable=SC2034
AMPCPP_ASAN_CONFIG=(-DAMPCPP_SANITIZE=ON -DAMPCPP_CUDA=OFF
  -DAMPCPP_BUILD_EXAMPLES=OFF -DAMPCPP_BUILD_BENCH=OFF -DAMPCPP_LIBTORCH=OFF)
