# --mine on solved exercises prints what the reference prints (ctest solution.chNN_mine_*):
#   cmake "-DREFERENCE=<program;args...>" "-DMINE=<program;args...>" -DNAME=<name>
#         ["-DIGNORE=<regex;...>"] -P mine_matches.cmake
# Both runs must exit 0 and print the same, apart from the line part that says whose functions
# ran ("functions: ..." to the end of its line) and the text IGNORE's regexes match in either
# (what only --mine says: "your train_step_on"). stdout and stderr are read together.
foreach(var REFERENCE MINE NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "mine_matches.cmake: -D${var}=... is required")
  endif()
endforeach()
foreach(run REFERENCE MINE)
  execute_process(COMMAND ${${run}} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
                  TIMEOUT 600)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${run} run: exit code ${rc}, expected 0; output:\n${out}")
  endif()
  string(REGEX REPLACE "functions: [^\n]*\n" "" out "${out}")
  foreach(regex IN LISTS IGNORE)
    string(REGEX REPLACE "${regex}" "" out "${out}")
  endforeach()
  set(${run}_out "${out}")
endforeach()
if(NOT REFERENCE_out STREQUAL MINE_out)
  set(base ${CMAKE_CURRENT_BINARY_DIR}/${NAME})
  file(WRITE ${base}.reference.txt "${REFERENCE_out}")
  file(WRITE ${base}.mine.txt "${MINE_out}")
  message(FATAL_ERROR "--mine on the reference answers prints otherwise than the reference: "
                      "diff ${base}.reference.txt ${base}.mine.txt")
endif()
message(STATUS "ok: the same output")
