# The fuzz build (AMPCPP_FUZZ; tests/fuzz/, docs/building.md "Fuzzing"): the library compiled
# with clang's coverage instrumentation for libFuzzer (-fsanitize=fuzzer-no-link), so the fuzzer
# is guided by the library's own branches, and with ASan and UBSan, so a memory error or any
# undefined behaviour stops it as a crash. The targets link libFuzzer's main themselves.
if(NOT AMPCPP_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "AMPCPP_FUZZ needs clang (libFuzzer ships with it): configure with "
                      "CXX=clang++ (scripts/run_fuzz.sh does), got ${CMAKE_CXX_COMPILER_ID}")
endif()
if(AMPCPP_WITH_CUDA)
  message(FATAL_ERROR "AMPCPP_FUZZ builds the CPU backend only: configure with -DAMPCPP_CUDA=OFF")
endif()
if(AMPCPP_SANITIZE)
  message(FATAL_ERROR "AMPCPP_FUZZ already builds with ASan and UBSan: leave AMPCPP_SANITIZE OFF")
endif()
# -O1 (after the build type's -O3, so it wins): a third less compile time, and what ASan
# recommends. -gline-tables-only: file and line in the sanitizers' stack traces at little cost.
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-O1;-fsanitize=fuzzer-no-link,address,undefined;-fno-sanitize-recover=undefined;-fno-omit-frame-pointer;-gline-tables-only>")
add_link_options(-fsanitize=address,undefined)
# As the sanitizer build: no allocator caching, so ASan sees every use after free.
add_compile_definitions(AMPCPP_SANITIZE=1)
# The kernels' scalar copy alone (csrc/cpu/capability.h): the avx2 and avx512 copies took over a
# third of this build's compile time, and the inputs under fuzz are too small to need them.
set(AMPCPP_CPU_SCALAR_ONLY ON)
add_compile_definitions(AMPCPP_CPU_SCALAR_ONLY=1)
