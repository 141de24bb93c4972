# Runtime CPU dispatch (csrc/cpu/capability.h, docs/architecture.md): the hot CPU kernels are
# compiled once per instruction-set level, each copy in namespace amp::cpu::<level>, and linked
# into the library after every other object. The rest of the library is built for the
# architecture's baseline, so the binary runs on any x86-64 CPU.
#
# Why last in the link: the per-level objects also instantiate inline functions of shared
# headers (std::, amp::Half, ...). The linker keeps the first copy of each such function it
# sees, so the baseline copies from the other objects win and no avx2/avx512 code can be reached
# from a baseline path. The kernels' own code lives in the per-level namespaces and is not shared.
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

# AMPCPP_CPU_SCALAR_ONLY (set by the fuzz build, cmake/ampcpp_fuzz.cmake): the scalar copy alone.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND NOT AMPCPP_CPU_SCALAR_ONLY)
  set(AMPCPP_CPU_LEVELS scalar avx2 avx512)
else()
  set(AMPCPP_CPU_LEVELS scalar)  # one copy, for the architecture's baseline
endif()
set(AMPCPP_CPU_FLAGS_scalar "")
set(AMPCPP_CPU_FLAGS_avx2 -march=x86-64-v3)
set(AMPCPP_CPU_FLAGS_avx512 -march=x86-64-v4)

# Makes one object library per level (ampcpp_cpu_<level>) and lists their objects in
# AMPCPP_CPU_LEVEL_OBJECTS, for ampcpp_link_objects to put after every other object.
function(ampcpp_add_cpu_levels)
  set(objects_of_levels "")
  foreach(level IN LISTS AMPCPP_CPU_LEVELS)
    set(objects ampcpp_cpu_${level})
    add_library(${objects} OBJECT ${AMPCPP_DISPATCHED_SOURCES})
    target_compile_definitions(${objects} PRIVATE AMP_CPU_CAPABILITY=${level})
    target_compile_options(${objects} PRIVATE ${AMPCPP_CPU_FLAGS_${level}})
    target_include_directories(${objects} PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${objects} PRIVATE OpenMP::OpenMP_CXX)
    set_target_properties(${objects} PROPERTIES CXX_VISIBILITY_PRESET hidden
                          VISIBILITY_INLINES_HIDDEN ON)
    list(APPEND objects_of_levels $<TARGET_OBJECTS:${objects}>)
  endforeach()
  set(AMPCPP_CPU_LEVEL_OBJECTS ${objects_of_levels} PARENT_SCOPE)
endfunction()
