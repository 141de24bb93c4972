# The API reference: Doxygen over the public headers (AMPCPP_PUBLIC_HEADERS, listed in
# cmake/ampcpp_public_headers.cmake), HTML in <build>/docs/api/html. `cmake --build build --target docs`
# builds it; the ctest test api_docs (label docs) fails on any Doxygen warning, an undocumented
# public declaration included. Both exist only when doxygen is installed (scripts/setup.sh).
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "doxygen not found: no `docs` target and no api_docs test (scripts/setup.sh installs it)")
  return()
endif()

set(AMPCPP_DOCS_INPUT "")
foreach(header IN LISTS AMPCPP_PUBLIC_HEADERS)
  string(APPEND AMPCPP_DOCS_INPUT " \\\n    \"${PROJECT_SOURCE_DIR}/${header}\"")
endforeach()
set(AMPCPP_DOCS_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/docs/api)
configure_file(docs/Doxyfile.in ${CMAKE_CURRENT_BINARY_DIR}/docs/Doxyfile @ONLY)

list(TRANSFORM AMPCPP_PUBLIC_HEADERS PREPEND ${PROJECT_SOURCE_DIR}/ OUTPUT_VARIABLE docs_sources)
add_custom_command(OUTPUT ${AMPCPP_DOCS_OUTPUT_DIR}/html/index.html
  COMMAND ${DOXYGEN_EXECUTABLE} ${CMAKE_CURRENT_BINARY_DIR}/docs/Doxyfile
  DEPENDS ${docs_sources} ${CMAKE_CURRENT_BINARY_DIR}/docs/Doxyfile
  COMMENT "Doxygen: API reference in ${AMPCPP_DOCS_OUTPUT_DIR}/html"
  VERBATIM)
add_custom_target(docs DEPENDS ${AMPCPP_DOCS_OUTPUT_DIR}/html/index.html)

if(AMPCPP_BUILD_TESTS)
  # The same settings, written to a scratch directory; any warning fails the test. The second
  # test runs the check on a header with an undocumented function and expects it to say so.
  add_test(NAME api_docs COMMAND ${CMAKE_COMMAND}
    -DDOXYGEN=${DOXYGEN_EXECUTABLE} -DDOXYFILE=${CMAKE_CURRENT_BINARY_DIR}/docs/Doxyfile
    -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/docs/api_test
    -P ${PROJECT_SOURCE_DIR}/cmake/check_api_docs.cmake)
  add_test(NAME api_docs_check_catches_an_undocumented_declaration COMMAND ${CMAKE_COMMAND}
    -DDOXYGEN=${DOXYGEN_EXECUTABLE} -DDOXYFILE=${CMAKE_CURRENT_BINARY_DIR}/docs/Doxyfile
    -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/docs/api_self_test -DSELF_TEST=ON
    -P ${PROJECT_SOURCE_DIR}/cmake/check_api_docs.cmake)
  set_tests_properties(api_docs_check_catches_an_undocumented_declaration PROPERTIES
    PASS_REGULAR_EXPRESSION "api_docs: [0-9]+ Doxygen warning lines:.*undocumented_function")
  set_tests_properties(api_docs api_docs_check_catches_an_undocumented_declaration PROPERTIES
    LABELS docs)
endif()
