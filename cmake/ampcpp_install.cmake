# Install rules and packages: the library, its public headers (under include/ampcpp, included as
# "amp/amp.h"), an ampcppConfig.cmake for find_package(ampcpp), an ampcpp.pc for pkg-config, and
# `cpack -G DEB` for an installable .deb (scripts/check_install.sh builds an outside project
# against that package, both ways).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The public headers, listed by hand; everything else in the tree is private to the library and
# not installed. Plus the optional components' headers (cmake/ampcpp_libtorch.cmake).
include(${PROJECT_SOURCE_DIR}/cmake/ampcpp_public_headers.cmake)
list(APPEND AMPCPP_PUBLIC_HEADERS ${AMPCPP_EXTRA_PUBLIC_HEADERS})
# The list, for scripts/check_install.sh to compare with what an install holds.
string(REPLACE ";" "\n" header_lines "${AMPCPP_PUBLIC_HEADERS}")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/ampcpp_public_headers.txt "${header_lines}\n")

install(TARGETS ampcpp EXPORT ampcppTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(header IN LISTS AMPCPP_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ampcpp/${dir})
endforeach()
install(EXPORT ampcppTargets NAMESPACE ampcpp::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ampcpp)
configure_package_config_file(cmake/ampcppConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ampcppConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ampcpp)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ampcppConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ampcppConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ampcppConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ampcpp)

# pkg-config: the headers need C++20 and, through the library's OpenMP use, -fopenmp at link.
file(RELATIVE_PATH AMPCPP_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/ampcpp.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ampcpp.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ampcpp.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB (run in the build directory): libampcpp-dev_<version>_<arch>.deb installing under
# /usr. The runtime libraries it links come from Debian packages; a CUDA build also needs the
# CUDA toolkit's libraries, which are not Debian packages and so are not listed.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME libampcpp-dev)
set(CPACK_PACKAGE_VENDOR ampcpp)
set(CPACK_PACKAGE_CONTACT "ampcpp developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Mixed-precision training in C++: apex amp and torch.amp workflows")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libdnnl2, libgomp1, zlib1g, libstdc++6 (>= 12), libc6")
if(AMPCPP_WITH_MPI)  # libampcpp.so links Open MPI's libmpi.so.40 (amp::distributed)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libopenmpi3")
endif()
string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS "${AMPCPP_EXTRA_DEB_DEPENDS}")  # libampcpp_libtorch.so
include(CPack)
