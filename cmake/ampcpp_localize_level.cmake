# Makes one CPU level's objects (cmake/ampcpp_cpu_dispatch.cmake) a single object that keeps its
# own copy of every inline function it instantiates: std:: code (vector growth, std::function
# thunks, ...) and the level's own templates alike.
#
# A weak or COMDAT definition is merged across objects at link time, and the linker keeps one
# copy, chosen by link order, for every caller: an avx512 copy of std::vector's growth could then
# run on a CPU without AVX-512. So the level's objects are
#   1. partially linked into one object (ld -r), which merges the copies inside the level, with
#      --force-group-allocation, which dissolves the COMDAT groups (a group is deduplicated by its
#      signature's name, even when the symbol is local, so it must not survive), and
#   2. every weak symbol it defines is made local (objcopy --localize-symbols).
# What the rest of the library calls (the level's kernel tables) are strong symbols named after
# the level, and stay global. A unique global (u: a static variable of an inline function) is
# left alone: made local, it would become one variable per level; cmake/check_cpu_levels.cmake
# fails on it, as on any weak symbol left global.
#   cmake -DLD=<ld> -DOBJCOPY=<objcopy> -DNM=<nm> -DOBJECTS="<a.o;b.o;...>"
#         -DPARTIAL=<level.partial.o> -DOUTPUT=<level.o> -P cmake/ampcpp_localize_level.cmake
execute_process(COMMAND ${LD} -r --force-group-allocation -o ${PARTIAL} ${OBJECTS}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ampcpp_localize_level: ${LD} -r failed for ${OUTPUT}")
endif()
execute_process(COMMAND ${NM} --defined-only ${PARTIAL} OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ampcpp_localize_level: ${NM} failed on ${PARTIAL}")
endif()
# nm's types W and V: a weak function or object.
string(REGEX MATCHALL "[0-9a-f]+ [WV] [^\n]+" weak "${listing}")
list(TRANSFORM weak REPLACE "^[0-9a-f]+ [WV] " "")
list(REMOVE_DUPLICATES weak)
list(JOIN weak "\n" text)
file(WRITE ${OUTPUT}.localize "${text}\n")
execute_process(COMMAND ${OBJCOPY} --localize-symbols=${OUTPUT}.localize ${PARTIAL} ${OUTPUT}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ampcpp_localize_level: ${OBJCOPY} failed on ${PARTIAL}")
endif()
