# The dependency rules of docs/architecture.md ("Layers"):
#  1. a folder includes only from its own layer's folder and from lower layers, so the folders
#     form no circle;
#  2. the backends and the kernel math (csrc/cpu, csrc/cuda, csrc/kernels) are included only by
#     the op layers that call the kernel tables (csrc/ops, csrc/multi_tensor) and by the backends
#     themselves, so every op reaches a kernel through a table; csrc/cuda/cuda.h, the public
#     device API, is the one exception. tests/ and bench/ are not checked.
# Run as
#   cmake -DROOT=<source dir> -P cmake/check_layers.cmake
# and it fails listing every include that breaks either rule. The ctest test `layering` runs it on
# the tree; `layering_check_catches_an_upward_include` on tests/layering_fixture (one upward
# include) and `layering_check_catches_a_backend_include` on tests/layering_fixture/backend (one
# nn/ file including csrc/cpu/) prove that each rule can fail.
if(NOT ROOT)
  message(FATAL_ERROR "check_layers: expected -DROOT=<source dir>")
endif()
cmake_policy(SET CMP0057 NEW)  # if(... IN_LIST ...)

# Lowest first; folders on one line form one layer and must not include each other.
set(layer_0 core)
set(layer_1 fp8)
set(layer_2 kernels)
set(layer_3 cpu cuda)
set(layer_4 graph)
set(layer_5 autocast)
set(layer_6 ops)
set(layer_7 autograd)
set(layer_8 io data distributed)
set(layer_9 multi_tensor)
set(layer_10 nn optimizers)
set(layer_11 amp)
set(layer_12 libtorch)  # the optional LibTorch bridge (cmake/ampcpp_libtorch.cmake)
# Rule 2: the folders below the op layers that only these folders may include.
set(backend_folders cpu cuda kernels)
set(backend_clients ops multi_tensor cpu cuda kernels)
set(backend_public_headers csrc/cuda/cuda.h)
list(JOIN backend_clients ", " backend_client_text)

foreach(rank RANGE 12)
  foreach(folder IN LISTS layer_${rank})
    set(rank_of_${folder} ${rank})
  endforeach()
endforeach()

# "csrc/ops/x.h" -> ops; "nn/x.h" -> nn; anything else (a system or third-party header) -> "".
function(layer_folder path out)
  if(path MATCHES "^csrc/([a-z0-9_]+)/")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  elseif(path MATCHES "^(nn|optimizers|amp|libtorch)/")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

file(GLOB_RECURSE sources RELATIVE ${ROOT}
     ${ROOT}/csrc/*.h ${ROOT}/csrc/*.cpp ${ROOT}/csrc/*.cu ${ROOT}/csrc/*.cuh
     ${ROOT}/nn/*.h ${ROOT}/nn/*.cpp ${ROOT}/optimizers/*.h ${ROOT}/optimizers/*.cpp
     ${ROOT}/amp/*.h ${ROOT}/amp/*.cpp ${ROOT}/libtorch/*.h ${ROOT}/libtorch/*.cpp)
set(violations "")
set(checked 0)
foreach(source IN LISTS sources)
  layer_folder(${source} from)
  if(NOT DEFINED rank_of_${from})
    list(APPEND violations "${source}: folder '${from}' has no layer in cmake/check_layers.cmake")
    continue()
  endif()
  file(STRINGS ${ROOT}/${source} includes REGEX "^#include \"[^\"]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" target "${line}")
    layer_folder(${target} to)
    if(to STREQUAL "" OR to STREQUAL from)
      continue()
    endif()
    math(EXPR checked "${checked} + 1")
    if(to IN_LIST backend_folders AND NOT from IN_LIST backend_clients
       AND NOT target IN_LIST backend_public_headers)
      list(APPEND violations
           "${source}: includes ${target} (only csrc/{${backend_client_text}} may include csrc/${to}/: call an op or a multi_tensor function instead)")
    endif()
    if(NOT DEFINED rank_of_${to})
      list(APPEND violations "${source}: includes ${target}, whose folder has no layer")
    elseif(rank_of_${to} GREATER rank_of_${from})
      list(APPEND violations
           "${source}: includes ${target} (${from} is layer ${rank_of_${from}}, ${to} is higher: ${rank_of_${to}})")
    elseif(rank_of_${to} EQUAL rank_of_${from})
      list(APPEND violations
           "${source}: includes ${target} (${from} and ${to} share layer ${rank_of_${from}} and must not include each other)")
    endif()
  endforeach()
endforeach()

list(LENGTH sources nsources)
if(violations)
  list(LENGTH violations n)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "check_layers: ${n} include(s) break the layer order "
                      "(docs/architecture.md):\n  ${text}")
endif()
message(STATUS "check_layers: ${nsources} files, ${checked} includes across folders, all downward, "
               "backends included only by the op layers")
