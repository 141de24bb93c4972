# The sanitizer build (AMPCPP_SANITIZE; scripts/run_tests.sh --sanitize, build-asan/, GCC) and the
# fuzz build (AMPCPP_FUZZ; tests/fuzz/, scripts/run_fuzz.sh, build-fuzz/, clang; docs/building.md
# "Fuzzing").
#
# Both: ASan and UBSan, any undefined behaviour fatal, no allocator caching (AMPCPP_SANITIZE=1,
# so ASan sees every use after free), at -O1 (after the build type's -O3, so it wins): what ASan
# recommends, and about half the compile time of -O3 (docs/building.md, "CI"). With clang,
# -gline-tables-only gives file and line in the sanitizers' stack traces at little cost.
#
# AMPCPP_FUZZ adds clang's coverage instrumentation for libFuzzer (-fsanitize=fuzzer-no-link) to
# every object, so the fuzzer is guided by the library's own branches; the fuzz targets link
# libFuzzer's main themselves (tests/fuzz/CMakeLists.txt), and any other program of the build
# links without it: the instrumentation's hooks are no-ops in the sanitizers' runtime.
if(NOT AMPCPP_SANITIZE AND NOT AMPCPP_FUZZ)
  return()
endif()
if(AMPCPP_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "AMPCPP_FUZZ needs clang (libFuzzer ships with it): configure with "
                        "CXX=clang++ (scripts/run_fuzz.sh does), got ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(AMPCPP_WITH_CUDA)
    message(FATAL_ERROR "AMPCPP_FUZZ builds the CPU backend only: configure with -DAMPCPP_CUDA=OFF")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>")
endif()
add_compile_options(
  "$<$<COMPILE_LANGUAGE:CXX>:-O1;-fsanitize=address,undefined;-fno-sanitize-recover=undefined;-fno-omit-frame-pointer>")
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-gline-tables-only>")
endif()
add_link_options(-fsanitize=address,undefined)
add_compile_definitions(AMPCPP_SANITIZE=1)
