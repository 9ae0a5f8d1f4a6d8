# Runs one attn-check command and checks what it printed (ctest check.*, tests/exercises/).
#   cmake "-DCMD=<program;args...>" -DEXIT=<code regex> "-DMATCH=<regex;...>" "-DNOT_MATCH=<regex;...>"
#         [-DCOUNT_STUBS=<source dir>] -P expect.cmake
# stdout and stderr are read together. With COUNT_STUBS, the regex "@N@" in MATCH stands for the
# number of stubs chapters/*/exercises/exNN_M_*.cpp on disk (the exercises attn-check must list).
foreach(var CMD EXIT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect.cmake: -D${var}=... is required")
  endif()
endforeach()
if(DEFINED COUNT_STUBS)
  file(GLOB stubs ${COUNT_STUBS}/chapters/*/exercises/ex[0-9][0-9]_*.cpp)
  list(LENGTH stubs n_stubs)
  list(TRANSFORM MATCH REPLACE "@N@" "${n_stubs}")
  foreach(stub IN LISTS stubs)  # every exercise has its row
    get_filename_component(name ${stub} NAME)
    string(REGEX REPLACE "^ex([0-9][0-9])_([0-9]+)_.*" "ex\\1\\\\.\\2 " id_regex ${name})
    list(APPEND MATCH "${id_regex}")
  endforeach()
endif()
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
                TIMEOUT 600)
if(NOT "${rc}" MATCHES "^(${EXIT})$")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXIT}; output:\n${out}")
endif()
foreach(regex IN LISTS MATCH)
  if(NOT out MATCHES "${regex}")
    message(FATAL_ERROR "the output does not match '${regex}':\n${out}")
  endif()
endforeach()
foreach(regex IN LISTS NOT_MATCH)
  if(out MATCHES "${regex}")
    message(FATAL_ERROR "the output matches '${regex}', and must not:\n${out}")
  endif()
endforeach()
message(STATUS "ok:\n${out}")
