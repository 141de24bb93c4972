# The dependency rule of docs/architecture.md: a folder includes only from its own layer's folder
# and from lower layers, so the folders form no circle. Run as
#   cmake -DROOT=<source dir> -P cmake/check_layers.cmake
# and it fails listing every include that points upward or sideways (between two folders of the
# same layer). The ctest test `layering` runs it on the tree, and `layering_detects_violation` on
# tests/layering_fixture, whose one upward include it must reject.
if(NOT ROOT)
  message(FATAL_ERROR "check_layers: expected -DROOT=<source dir>")
endif()

# Lowest first; folders on one line form one layer and must not include each other.
set(layer_0 core)
set(layer_1 kernels)
set(layer_2 cpu cuda)
set(layer_3 graph)
set(layer_4 autocast)
set(layer_5 ops)
set(layer_6 autograd)
set(layer_7 io data distributed)
set(layer_8 multi_tensor)
set(layer_9 nn optimizers)
set(layer_10 amp)
set(layer_11 libtorch)  # the optional LibTorch bridge (cmake/ampcpp_libtorch.cmake)
foreach(rank RANGE 11)
  foreach(folder IN LISTS layer_${rank})
    set(rank_of_${folder} ${rank})
  endforeach()
endforeach()

# "csrc/ops/x.h" -> ops; "nn/x.h" -> nn; anything else (a system or third-party header) -> "".
function(layer_folder path out)
  if(path MATCHES "^csrc/([a-z_]+)/")
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
message(STATUS "check_layers: ${nsources} files, ${checked} includes across folders, all downward")
