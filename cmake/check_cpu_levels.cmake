# Checks that each CPU level keeps its own copies of the kernel headers' templates
# (AMP_CPU_LEVEL_NAMESPACE, csrc/core/macros.h): in the shared library, every instantiation of
# the elementwise loops, parallel_for, the row kernels and the functors carries a level_<name>
# namespace, and each level built has some. A template left outside the per-level namespace
# would be folded into one copy for all levels, and the avx2/avx512 kernels would run it scalar.
#   cmake -DLIBRARY=<libampcpp.so> -DNM=<nm> -DLEVELS="scalar;avx2;avx512" -P cmake/check_cpu_levels.cmake
execute_process(COMMAND ${NM} -C ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_cpu_levels: ${NM} failed on ${LIBRARY}")
endif()
string(REGEX MATCHALL "[^\n]*amp::(cpu::(parallel_for|elementwise|detail::run_)|rows::|functors::)[^\n]*"
       kernel_symbols "${symbols}")
set(unleveled "")
foreach(symbol IN LISTS kernel_symbols)
  if(NOT symbol MATCHES "level_")
    list(APPEND unleveled "${symbol}")
  endif()
endforeach()
if(unleveled)
  list(LENGTH unleveled n)
  list(SUBLIST unleveled 0 5 shown)
  list(JOIN shown "\n  " text)
  message(FATAL_ERROR "check_cpu_levels: ${n} kernel template instantiation(s) shared by all "
                      "levels (no level_ namespace), e.g.:\n  ${text}")
endif()
foreach(level IN LISTS LEVELS)
  string(REGEX MATCHALL "level_${level}::" found "${kernel_symbols}")
  list(LENGTH found count)
  if(count EQUAL 0)
    message(FATAL_ERROR "check_cpu_levels: no kernel instantiation of level ${level}")
  endif()
  message(STATUS "check_cpu_levels: level ${level}: ${count} kernel instantiations of its own")
endforeach()
