# Runtime CPU dispatch (csrc/cpu/capability.h, docs/architecture.md): the hot CPU kernels are
# compiled once per instruction-set level, each copy in namespace amp::cpu::<level>. The rest of
# the library is built for the architecture's baseline, so the binary runs on any x86-64 CPU.
#
# Each level's objects become one object whose weak definitions are local
# (cmake/ampcpp_localize_level.cmake): the inline functions of shared headers that a level
# instantiates (std::, amp::Half, ...) keep the level's own copy, so no avx2/avx512 code can be
# reached from a baseline path or another level, whatever the link order. The kernels' own code
# lives in the per-level namespaces, and cmake/check_cpu_levels.cmake checks both.
set(AMPCPP_DISPATCHED_SOURCES
    ${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/kernels.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/multi_tensor_kernels.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/half_runs.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/pool_kernels.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/layout_kernels.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/attention_kernels.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/normalization_kernels.cpp)
list(REMOVE_ITEM AMPCPP_SOURCES ${AMPCPP_DISPATCHED_SOURCES})

# The master-weight SGD loop (a 16-bit copy written in the same pass) is longer than GCC's
# default limit for unswitching its flags out of a loop (50 insns); with the flags left in, GCC
# does not vectorise it (fp16 12x slower; csrc/kernels/multi_tensor_functors.h, SgdOp).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/csrc/cpu/multi_tensor_kernels.cpp
                              PROPERTIES COMPILE_OPTIONS --param=max-unswitch-insns=100)
endif()

# AMPCPP_CPU_SCALAR_ONLY (an option): the scalar copy alone, which csrc/cpu/capability.h hears of
# through the macro of the same name.
if(AMPCPP_CPU_SCALAR_ONLY)
  add_compile_definitions(AMPCPP_CPU_SCALAR_ONLY=1)
endif()
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND NOT AMPCPP_CPU_SCALAR_ONLY)
  set(AMPCPP_CPU_LEVELS scalar avx2 avx512)
else()
  set(AMPCPP_CPU_LEVELS scalar)  # one copy, for the architecture's baseline
endif()
set(AMPCPP_CPU_FLAGS_scalar "")
set(AMPCPP_CPU_FLAGS_avx2 -march=x86-64-v3)
set(AMPCPP_CPU_FLAGS_avx512 -march=x86-64-v4)

# Makes one object library per level (ampcpp_cpu_<level>), partially links and localizes each
# into cpu_levels/ampcpp_cpu_<level>.o of the build tree, and lists those in
# AMPCPP_CPU_LEVEL_OBJECTS, for ampcpp_link_objects, which also depends on the target
# ampcpp_cpu_levels that makes them.
function(ampcpp_add_cpu_levels)
  # GNU ld's partial link, whichever compiler: lld (CMAKE_LINKER in a clang build) has no
  # --force-group-allocation before LLVM 17. objcopy and nm may be either project's.
  find_program(AMPCPP_GNU_LD NAMES ld.bfd ld REQUIRED)
  set(level_objects "")
  foreach(level IN LISTS AMPCPP_CPU_LEVELS)
    set(objects ampcpp_cpu_${level})
    add_library(${objects} OBJECT ${AMPCPP_DISPATCHED_SOURCES})
    target_compile_definitions(${objects} PRIVATE AMP_CPU_CAPABILITY=${level})
    target_compile_options(${objects} PRIVATE ${AMPCPP_CPU_FLAGS_${level}})
    target_include_directories(${objects} PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${objects} PRIVATE OpenMP::OpenMP_CXX)
    set_target_properties(${objects} PROPERTIES CXX_VISIBILITY_PRESET hidden
                          VISIBILITY_INLINES_HIDDEN ON)
    set(output ${PROJECT_BINARY_DIR}/cpu_levels/${objects}.o)
    set(partial ${PROJECT_BINARY_DIR}/cpu_levels/${objects}.partial.o)
    add_custom_command(OUTPUT ${output} ${partial}
      COMMAND ${CMAKE_COMMAND} -DLD=${AMPCPP_GNU_LD} -DOBJCOPY=${CMAKE_OBJCOPY} -DNM=${CMAKE_NM}
              "-DOBJECTS=$<TARGET_OBJECTS:${objects}>" -DPARTIAL=${partial} -DOUTPUT=${output}
              -P ${PROJECT_SOURCE_DIR}/cmake/ampcpp_localize_level.cmake
      DEPENDS ${objects} $<TARGET_OBJECTS:${objects}>
              ${PROJECT_SOURCE_DIR}/cmake/ampcpp_localize_level.cmake
      COMMENT "Localizing the weak symbols of CPU level ${level}" VERBATIM)
    list(APPEND level_objects ${output})
  endforeach()
  add_custom_target(ampcpp_cpu_levels DEPENDS ${level_objects})
  set(AMPCPP_CPU_LEVEL_OBJECTS ${level_objects} PARENT_SCOPE)
endfunction()
