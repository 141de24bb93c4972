# Every CUDA kernel launch names its stream (docs/cuda.md, "Streams"): a launch written
# `kernel<<<grid, block>>>(...)` runs on the legacy default stream whatever stream the caller
# made current, which breaks the order of work on other streams and the allocator's
# record_stream promise. So each `<<<...>>>` of a .cu or .cuh file under csrc/ must have four
# arguments, the fourth naming a stream (an expression containing `stream`, such as
# current_cuda_stream(); a literal 0, nullptr or cudaStreamLegacy does not).
# Run as
#   cmake -DROOT=<source dir> -P cmake/check_cuda_launches.cmake
# and it fails listing every launch that breaks the rule. The ctest test `cuda_launches_name_a_stream`
# runs it on the tree; `cuda_launch_check_catches_a_launch_without_a_stream` on
# tests/launch_fixture (one plain launch, one on stream 0, one good) proves that it can fail.
cmake_minimum_required(VERSION 3.20)  # script mode: today's policies (while(TRUE), if(MATCHES))
if(NOT ROOT)
  message(FATAL_ERROR "check_cuda_launches: expected -DROOT=<source dir>")
endif()

file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/csrc/*.cu" "${ROOT}/csrc/*.cuh")
list(SORT sources)
set(problems "")
set(count 0)
set(launches 0)
foreach(source IN LISTS sources)
  file(READ "${ROOT}/${source}" text)
  set(rest "${text}")
  set(offset 0)
  while(TRUE)
    string(FIND "${rest}" "<<<" open)
    if(open EQUAL -1)
      break()
    endif()
    math(EXPR after_open "${open} + 3")
    string(SUBSTRING "${rest}" ${after_open} -1 tail)
    string(FIND "${tail}" ">>>" close)
    if(close EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${tail}" 0 ${close} config)
    # The line of the launch, for the message.
    math(EXPR absolute "${offset} + ${open}")
    string(SUBSTRING "${text}" 0 ${absolute} before)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines line)
    math(EXPR line "${line} + 1")
    math(EXPR launches "${launches} + 1")
    # Commas inside calls, braces or template arguments do not separate launch arguments.
    string(REGEX REPLACE "[ \t\r\n]+" " " flat "${config}")
    set(previous "")
    while(NOT flat STREQUAL previous)
      set(previous "${flat}")
      string(REGEX REPLACE "\\([^()]*\\)" "_" flat "${flat}")
      string(REGEX REPLACE "{[^{}]*}" "_" flat "${flat}")
      string(REGEX REPLACE "<[^<>]*>" "_" flat "${flat}")
    endwhile()
    string(REPLACE ";" "_" flat "${flat}")
    string(REPLACE "," ";" arguments "${flat}")
    list(LENGTH arguments n)
    set(stream_argument "")
    if(n EQUAL 4)
      list(GET arguments 3 stream_argument)
    endif()
    if(NOT n EQUAL 4 OR NOT stream_argument MATCHES "stream")
      string(STRIP "${config}" shown)
      string(REGEX REPLACE "[ \t\r\n]+" " " shown "${shown}")
      string(APPEND problems "\n  ${source}:${line}: <<<${shown}>>> (expected <<<grid, block, "
                             "shared_bytes, stream>>> with the current stream)")
      math(EXPR count "${count} + 1")
    endif()
    math(EXPR consumed "${after_open} + ${close} + 3")
    string(SUBSTRING "${rest}" ${consumed} -1 rest)
    math(EXPR offset "${offset} + ${consumed}")
  endwhile()
endforeach()

if(count GREATER 0)
  message(FATAL_ERROR "${count} kernel launch(es) without a stream:${problems}")
endif()
message(STATUS "check_cuda_launches: all ${launches} kernel launches name a stream")
