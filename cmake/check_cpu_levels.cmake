# Checks that each CPU level keeps its own copies of the kernel headers' templates
# (AMP_CPU_LEVEL_NAMESPACE, csrc/core/macros.h): in the shared library, every instantiation of
# the elementwise loops, parallel_for, the row kernels and the functors carries a level_<name>
# namespace, and each level built has some. A template left outside the per-level namespace
# would be folded into one copy for all levels, and the avx2/avx512 kernels would run it scalar.
#
# With OBJECT_DIR (the build's CMakeFiles), it also checks each level's objects
# (ampcpp_cpu_<level>.dir): every external symbol of ampcpp they define carries the level's name
# (amp::cpu::<level>:: or an AMP_CPU_LEVEL_NAMESPACE level_<level>::), so no two levels define
# the same amp:: symbol and which copy runs never depends on link order (ATen's rule for its
# per-capability kernels). The std:: inline code the levels instantiate cannot be renamed; the
# per-level objects link last (cmake/ampcpp_cpu_dispatch.cmake) so that the baseline copies win,
# and the check prints those.
#   cmake -DLIBRARY=<libampcpp.so> -DNM=<nm> -DLEVELS="scalar;avx2;avx512" [-DOBJECT_DIR=<dir>]
#         -P cmake/check_cpu_levels.cmake
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

if(NOT DEFINED OBJECT_DIR)
  return()
endif()
foreach(level IN LISTS LEVELS)
  file(GLOB_RECURSE objects ${OBJECT_DIR}/ampcpp_cpu_${level}.dir/*.o)
  if(NOT objects)
    message(FATAL_ERROR "check_cpu_levels: no objects of level ${level} under ${OBJECT_DIR}")
  endif()
  execute_process(COMMAND ${NM} -C --defined-only ${objects} OUTPUT_VARIABLE listing
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_cpu_levels: ${NM} failed on the objects of level ${level}")
  endif()
  # External definitions only: global (upper-case type letter) or unique (u) symbols.
  string(REGEX MATCHALL "[0-9a-f]+ [A-Zu] [^\n]*" external "${listing}")
  set(shared "")
  set(std_count 0)
  foreach(symbol IN LISTS external)
    if(symbol MATCHES "amp::" AND NOT symbol MATCHES "(amp::cpu::${level}::|level_${level}::)")
      list(APPEND shared "${symbol}")
    elseif(NOT symbol MATCHES "amp::")
      math(EXPR std_count "${std_count} + 1")
    endif()
  endforeach()
  if(shared)
    list(REMOVE_DUPLICATES shared)
    list(JOIN shared "\n  " text)
    message(FATAL_ERROR "check_cpu_levels: level ${level} defines amp:: symbols without its name, "
                        "which another level (or the baseline) defines too; put them in "
                        "amp::cpu::AMP_CPU_CAPABILITY or inline namespace AMP_CPU_LEVEL_NAMESPACE:\n  ${text}")
  endif()
  message(STATUS "check_cpu_levels: level ${level}: its objects define no amp:: symbol of another "
                 "level (${std_count} std:: and runtime symbols, resolved by link order)")
endforeach()
