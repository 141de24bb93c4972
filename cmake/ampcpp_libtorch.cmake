# The LibTorch bridge (docs/libtorch.md): the library ampcpp_libtorch (target ampcpp::libtorch,
# header amp/libtorch.h, sources in libtorch/), built only when LibTorch is found, so the core
# never depends on it. AMPCPP_LIBTORCH: AUTO builds it when find_package(Torch) succeeds (Debian's
# libtorch-dev: scripts/setup.sh), ON requires it, OFF skips it. AUTO also skips it in sanitizer
# and fuzz builds: LibTorch itself is not instrumented, and each file including <torch/torch.h>
# takes ~25 s to compile.
#
# Sets AMPCPP_WITH_LIBTORCH, and for cmake/ampcpp_install.cmake AMPCPP_EXTRA_PUBLIC_HEADERS and
# AMPCPP_EXTRA_DEB_DEPENDS.
set(AMPCPP_LIBTORCH AUTO CACHE STRING "Build the LibTorch bridge ampcpp_libtorch: AUTO (when LibTorch is found), ON or OFF")
set_property(CACHE AMPCPP_LIBTORCH PROPERTY STRINGS AUTO ON OFF)

set(AMPCPP_WITH_LIBTORCH OFF)
set(AMPCPP_EXTRA_PUBLIC_HEADERS "")
set(AMPCPP_EXTRA_DEB_DEPENDS "")
if(AMPCPP_LIBTORCH STREQUAL "OFF")
  return()
endif()
if(AMPCPP_LIBTORCH STREQUAL "AUTO" AND (AMPCPP_SANITIZE OR AMPCPP_FUZZ))
  message(STATUS "ampcpp: sanitizer/fuzz build: skipping the LibTorch bridge (AMPCPP_LIBTORCH=ON forces it)")
  return()
endif()

if(AMPCPP_LIBTORCH STREQUAL "ON")
  find_package(Torch REQUIRED)
else()
  find_package(Torch QUIET)
endif()
if(NOT Torch_FOUND)
  message(STATUS "ampcpp: LibTorch not found; building without the LibTorch bridge "
                 "(install libtorch-dev: scripts/setup.sh)")
  return()
endif()
set(AMPCPP_WITH_LIBTORCH ON)
message(STATUS "ampcpp: LibTorch ${Torch_VERSION} found; building ampcpp_libtorch")

file(GLOB AMPCPP_LIBTORCH_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/libtorch/*.cpp)
add_library(ampcpp_libtorch SHARED ${AMPCPP_LIBTORCH_SOURCES})
add_library(ampcpp::libtorch ALIAS ampcpp_libtorch)
set_target_properties(ampcpp_libtorch PROPERTIES EXPORT_NAME libtorch)
# torch's interface carries -D_GLIBCXX_USE_CXX11_ABI (docs/libtorch.md, "ABI").
target_link_libraries(ampcpp_libtorch PUBLIC ampcpp torch)
target_include_directories(ampcpp_libtorch PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<INSTALL_INTERFACE:include/ampcpp>)
target_compile_features(ampcpp_libtorch PUBLIC cxx_std_20)

set(AMPCPP_EXTRA_PUBLIC_HEADERS amp/libtorch.h)
string(REGEX MATCH "^[0-9]+\\.[0-9]+" torch_major_minor "${Torch_VERSION}")
set(AMPCPP_EXTRA_DEB_DEPENDS ", libtorch${torch_major_minor}")

include(GNUInstallDirs)
install(TARGETS ampcpp_libtorch EXPORT ampcppLibtorchTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT ampcppLibtorchTargets NAMESPACE ampcpp::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ampcpp)
# pkg-config ampcpp-libtorch: ampcpp's flags plus LibTorch's (its headers, the ABI define and its
# three libraries, as a LibTorch program built by hand uses them).
set(AMPCPP_TORCH_INCLUDE_FLAGS "")
foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
  if(NOT dir STREQUAL "/usr/include")
    string(APPEND AMPCPP_TORCH_INCLUDE_FLAGS " -I${dir}")
  endif()
endforeach()
get_filename_component(AMPCPP_TORCH_LIBDIR "${TORCH_LIBRARY}" DIRECTORY)
file(RELATIVE_PATH AMPCPP_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/ampcpp-libtorch.pc.in
               ${PROJECT_BINARY_DIR}/ampcpp-libtorch.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ampcpp-libtorch.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
