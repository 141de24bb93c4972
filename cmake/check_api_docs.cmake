# ctest api_docs: runs Doxygen with the API reference's settings (DOXYFILE) into OUTPUT and fails
# when it warns, printing each warning (an undocumented public declaration, a broken \ref, ...).
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DOUTPUT=<dir> [-DSELF_TEST=ON]
#         -P check_api_docs.cmake
# SELF_TEST replaces the input with a scratch header holding an undocumented function, to show
# that the check fails on one (ctest api_docs_check_catches_an_undocumented_declaration).
file(REMOVE_RECURSE ${OUTPUT})
file(MAKE_DIRECTORY ${OUTPUT})
file(READ ${DOXYFILE} settings)
# A later assignment of a tag overrides an earlier one.
string(APPEND settings "\nOUTPUT_DIRECTORY = ${OUTPUT}\nWARN_LOGFILE = ${OUTPUT}/warnings.log\n")
if(SELF_TEST)
  file(WRITE ${OUTPUT}/undocumented.h
       "/// \\file\n/// A header with one undocumented function.\nint undocumented_function(int x);\n")
  string(APPEND settings "INPUT = ${OUTPUT}/undocumented.h\nSTRIP_FROM_PATH = ${OUTPUT}\n")
endif()
file(WRITE ${OUTPUT}/Doxyfile "${settings}")
execute_process(COMMAND ${DOXYGEN} ${OUTPUT}/Doxyfile RESULT_VARIABLE result
  OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "api_docs: doxygen failed (${result}):\n${out}${err}")
endif()
file(STRINGS ${OUTPUT}/warnings.log warnings)
list(LENGTH warnings count)
if(count GREATER 0)
  list(JOIN warnings "\n" text)
  message(FATAL_ERROR "api_docs: ${count} Doxygen warning lines:\n${text}")
endif()
message(STATUS "api_docs: no Doxygen warnings")
