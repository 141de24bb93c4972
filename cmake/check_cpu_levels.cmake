# Checks that each CPU level keeps its own copies of the kernel headers' templates
# (AMP_CPU_LEVEL_NAMESPACE, csrc/core/macros.h): in the shared library, every instantiation of
# the elementwise loops, parallel_for, the row kernels and the functors carries a level_<name>
# namespace, and each level built has some. A template left outside the per-level namespace
# would be folded into one copy for all levels, and the avx2/avx512 kernels would run it scalar.
#
# With LEVEL_DIR (the build's cpu_levels/), it also checks each level's object
# (ampcpp_cpu_<level><SUFFIX>, SUFFIX .o by default; cmake/ampcpp_localize_level.cmake makes it),
# so that which copy of any code runs never depends on link order (ATen's rule for its
# per-capability kernels):
#   - every strong external symbol of ampcpp it defines carries the level's name
#     (amp::cpu::<level>:: or an AMP_CPU_LEVEL_NAMESPACE level_<level>::), so no two levels
#     define the same amp:: symbol;
#   - it defines no weak symbol that is not local (std:: inline code, the level's own templates):
#     the linker would keep one copy of it for the whole program, perhaps another level's;
#   - it defines no unique global (a static variable of an inline function), which would be one
#     variable for every level, or split per level if made local.
# The test cpu_levels_check_catches_a_weak_symbol runs the check on the partial link before
# localization (SUFFIX .partial.o), which has weak symbols, and expects it to fail.
# Without LIBRARY only the level objects are checked.
#   cmake [-DLIBRARY=<libampcpp.so>] -DNM=<nm> -DLEVELS="scalar;avx2;avx512"
#         [-DLEVEL_DIR=<dir> [-DSUFFIX=.partial.o]] -P cmake/check_cpu_levels.cmake
if(NOT DEFINED SUFFIX)
  set(SUFFIX .o)
endif()

# The shared library: every kernel template instantiation carries a level's namespace.
if(DEFINED LIBRARY)
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
endif()

if(NOT DEFINED LEVEL_DIR)
  return()
endif()
# The level objects: nm's type letters, upper case for global; W/V weak, u unique global.
foreach(level IN LISTS LEVELS)
  set(object ${LEVEL_DIR}/ampcpp_cpu_${level}${SUFFIX})
  if(NOT EXISTS ${object})
    message(FATAL_ERROR "check_cpu_levels: no object of level ${level}: ${object}")
  endif()
  execute_process(COMMAND ${NM} -C --defined-only ${object} OUTPUT_VARIABLE listing
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_cpu_levels: ${NM} failed on ${object}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [WVu] [^\n]*" shared_copies "${listing}")
  if(shared_copies)
    list(REMOVE_DUPLICATES shared_copies)
    list(LENGTH shared_copies n)
    list(SUBLIST shared_copies 0 5 shown)
    list(JOIN shown "\n  " text)
    message(FATAL_ERROR "check_cpu_levels: level ${level} defines ${n} weak or unique symbol(s) "
                        "that are not local, which the linker merges with other objects' copies "
                        "(cmake/ampcpp_localize_level.cmake), e.g.:\n  ${text}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [A-Z] [^\n]*" external "${listing}")
  set(unnamed "")
  foreach(symbol IN LISTS external)
    if(symbol MATCHES "amp::" AND NOT symbol MATCHES "(amp::cpu::${level}::|level_${level}::)")
      list(APPEND unnamed "${symbol}")
    endif()
  endforeach()
  if(unnamed)
    list(REMOVE_DUPLICATES unnamed)
    list(JOIN unnamed "\n  " text)
    message(FATAL_ERROR "check_cpu_levels: level ${level} defines amp:: symbols without its name, "
                        "which another level (or the baseline) defines too; put them in "
                        "amp::cpu::AMP_CPU_CAPABILITY or inline namespace AMP_CPU_LEVEL_NAMESPACE:\n  ${text}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [tdbr] [^\n]*" local "${listing}")
  list(LENGTH local local_count)
  list(LENGTH external external_count)
  message(STATUS "check_cpu_levels: level ${level}: ${external_count} global symbols, all named "
                 "after the level; ${local_count} local ones, no weak or unique symbol")
endforeach()
