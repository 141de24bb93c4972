# Checks the public header list (cmake/ampcpp_public_headers.cmake): every listed header exists,
# and every header of the repository that a listed header includes is listed too. So a public
# header that starts including a private one (a kernel, a backend) fails here instead of
# installing a header set that does not compile.
#   cmake -DROOT=<source dir> -P cmake/check_public_headers.cmake
cmake_policy(SET CMP0057 NEW)  # if(... IN_LIST ...)
include(${ROOT}/cmake/ampcpp_public_headers.cmake)
set(problems "")
foreach(header IN LISTS AMPCPP_PUBLIC_HEADERS)
  if(NOT EXISTS ${ROOT}/${header})
    list(APPEND problems "${header}: listed but missing")
    continue()
  endif()
  file(STRINGS ${ROOT}/${header} lines REGEX "^#include \"[^\"]+\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(EXISTS ${ROOT}/${included} AND NOT included IN_LIST AMPCPP_PUBLIC_HEADERS)
      list(APPEND problems "${header} includes the private header ${included}")
    endif()
  endforeach()
endforeach()
if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "check_public_headers: a public header needs a header that is not public "
                      "(list it in cmake/ampcpp_public_headers.cmake, or include it from the "
                      ".cpp):\n  ${text}")
endif()
list(LENGTH AMPCPP_PUBLIC_HEADERS count)
message(STATUS "check_public_headers: ${count} public headers, each including public headers only")
