# Install rules: the library, its headers (under include/ampcpp, included as "amp/amp.h") and an
# ampcppConfig.cmake so that an outside project can find_package(ampcpp).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ampcpp EXPORT ampcppTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir csrc nn optimizers amp)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ampcpp
          FILES_MATCHING PATTERN "*.h")
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
