# The complete programs in the documentation are compiled and run, so the docs cannot drift from
# the code. ampcpp_add_doc_examples(<markdown file> <name>) takes every ```cpp block of the file
# that defines `int main(`, writes it to the build tree as <name>_example_<n>.cpp, builds it
# against ampcpp and adds a ctest test of the same name (label example) that runs it. Blocks without
# a main are fragments and are left alone. A change to the file reconfigures.
function(ampcpp_add_doc_examples markdown name)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${markdown})
  file(READ ${markdown} text)
  # A search loop rather than string(REGEX MATCHALL): its result is a list, and code holds `;`.
  set(n 0)
  while(TRUE)
    string(FIND "${text}" "```cpp\n" open)
    if(open EQUAL -1)
      break()
    endif()
    math(EXPR open "${open} + 7")
    string(SUBSTRING "${text}" ${open} -1 text)
    string(FIND "${text}" "```" close)
    string(SUBSTRING "${text}" 0 ${close} code)
    string(SUBSTRING "${text}" ${close} -1 text)
    if(NOT code MATCHES "int main\\(")
      continue()
    endif()
    math(EXPR n "${n} + 1")
    set(target ${name}_example_${n})
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/doc_examples/${target}.cpp "${code}")
    add_executable(${target} ${CMAKE_CURRENT_BINARY_DIR}/doc_examples/${target}.cpp)
    target_link_libraries(${target} PRIVATE ampcpp::ampcpp)
    add_test(NAME ${target} COMMAND ${target})
    set_tests_properties(${target} PROPERTIES LABELS example ENVIRONMENT "OMP_WAIT_POLICY=passive")
  endwhile()
  if(n EQUAL 0)
    message(FATAL_ERROR "ampcpp_add_doc_examples: expected a ```cpp block with int main( in "
                        "${markdown}, got none")
  endif()
endfunction()
