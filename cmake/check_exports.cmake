# Checks what the shared library exports (its dynamic symbol table, demangled): no symbol of a
# `testing` namespace, and a `detail` symbol only when docs/architecture.md lists it (the table
# under "Exported detail symbols": a public inline function, template or macro calls it). The
# name checked is the symbol's own qualified name, template arguments and parameters removed, so
# std::vector<amp::detail::Plan> is not a detail symbol but amp::detail::wrap_dim is.
#   cmake -DLIBRARY=<libampcpp.so> -DNM=<nm> -DDOC=<docs/architecture.md> -P cmake/check_exports.cmake
#   cmake -DSYMBOLS=<file of `nm -D --defined-only -C` lines> -DDOC=... -P cmake/check_exports.cmake
if(DEFINED SYMBOLS)
  file(READ ${SYMBOLS} listing)
else()
  execute_process(COMMAND ${NM} -D --defined-only -C ${LIBRARY} OUTPUT_VARIABLE listing
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_exports: ${NM} failed on ${LIBRARY}")
  endif()
endif()

# The allowed detail names: the first column of the table after the heading.
file(READ ${DOC} doc)
string(FIND "${doc}" "### Exported detail symbols" start)
if(start EQUAL -1)
  message(FATAL_ERROR "check_exports: ${DOC} has no \"### Exported detail symbols\" section")
endif()
string(SUBSTRING "${doc}" ${start} -1 doc)
string(REGEX MATCHALL "\n\\| `[^`]+` \\|" rows "${doc}")
set(allowed "")
foreach(row IN LISTS rows)
  string(REGEX REPLACE "\n\\| `([^`]+)` \\|" "\\1" name "${row}")
  list(APPEND allowed "${name}")
endforeach()

string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(bad "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"; "typeinfo for X", "vtable for X" and friends name X.
  string(REGEX REPLACE "^[0-9a-f]* *[A-Za-z] " "" name "${line}")
  string(REGEX REPLACE "^(typeinfo name|typeinfo|vtable|VTT|guard variable|construction vtable) for " "" name "${name}")
  # Drop template arguments (innermost first), then the parameter list and a return type.
  set(previous "")
  while(NOT name STREQUAL previous)
    set(previous "${name}")
    string(REGEX REPLACE "<[^<>]*>" "" name "${name}")
  endwhile()
  string(REGEX REPLACE "\\(.*$" "" name "${name}")
  string(REGEX REPLACE "^.* " "" name "${name}")
  string(REGEX REPLACE "\\[abi:[a-z0-9]+\\]" "" name "${name}")
  if(name MATCHES "(^|::)testing::")
    list(APPEND bad "${name} (a testing hook)")
  elseif(name MATCHES "(^|::)detail::")
    set(listed FALSE)
    foreach(entry IN LISTS allowed)
      string(FIND "${name}::" "${entry}::" at)  # the entry itself or one of its members
      if(at EQUAL 0)
        set(listed TRUE)
      endif()
    endforeach()
    if(NOT listed)
      list(APPEND bad "${name} (a detail symbol not listed in ${DOC})")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES bad)
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "check_exports: the library exports what it should not:\n  ${text}")
endif()
list(LENGTH allowed count)
message(STATUS "check_exports: no testing symbol, detail symbols only from the ${count} listed")
