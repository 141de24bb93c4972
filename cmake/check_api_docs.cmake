# ctest api_docs: runs Doxygen with the API reference's settings (DOXYFILE) into OUTPUT and fails
# when it warns, printing each warning (an undocumented public declaration, a broken \ref, ...).
#   cmake -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DOUTPUT=<dir> -P check_api_docs.cmake
file(REMOVE_RECURSE ${OUTPUT})
file(MAKE_DIRECTORY ${OUTPUT})
file(READ ${DOXYFILE} settings)
string(APPEND settings "\nOUTPUT_DIRECTORY = ${OUTPUT}\nWARN_LOGFILE = ${OUTPUT}/warnings.log\n")
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
