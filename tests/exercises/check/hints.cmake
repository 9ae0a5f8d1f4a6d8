# ctest check.hints: every exercise's hint ladder prints, with its LaTeX made readable, and never
# gives the whole function away. For each stub chapters/*/exercises/exNN_M_*.cpp,
# `attn-check --hint exNN.M` must print a ladder of three ("Hint 1 of 3": nudge, approach, key
# line), no raw LaTeX (no "$", no "\command"), and at most 2 lines of code in the whole ladder
# (code blocks print indented by six spaces).
#   cmake -DCHECK=<attn-check> -DSOURCE_DIR=<repository> -P hints.cmake
cmake_minimum_required(VERSION 3.25)
file(GLOB stubs ${SOURCE_DIR}/chapters/*/exercises/ex[0-9][0-9]_*.cpp)
set(checked 0)
foreach(stub IN LISTS stubs)
  get_filename_component(name ${stub} NAME)
  string(REGEX REPLACE "^ex([0-9][0-9])_([0-9]+)_.*" "ex\\1.\\2" id ${name})
  execute_process(COMMAND ${CHECK} --hint ${id} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "Hint 1 of 3:")
    message(FATAL_ERROR "attn-check --hint ${id} (exit ${rc}):\n${out}")
  endif()
  if(out MATCHES "[$]" OR out MATCHES "\\\\[A-Za-z]+")
    message(FATAL_ERROR "attn-check --hint ${id} prints raw LaTeX:\n${out}")
  endif()
  string(REGEX MATCHALL "\n      [^ \n]" code "${out}")  # the start of each code line
  list(LENGTH code code_lines)
  if(code_lines GREATER 2)
    message(FATAL_ERROR "the hints of ${id} show ${code_lines} lines of code: the ladder ends with "
                        "the one key line, never the whole function:\n${out}")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no exercise stubs found under ${SOURCE_DIR}/chapters")
endif()
message(STATUS "${checked} hint ladders print without raw LaTeX")
