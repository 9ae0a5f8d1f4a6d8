# ctest check.compile_error: a stub that does not compile is reported as its exercise, file:line
# and the first error in plain words, and its chapter's old results are never shown; a stub that
# compiles with warnings has them listed, and is checked.
# Compiles a broken ex04_1_project.cpp with the real compiler in WORK_DIR, then runs attn-check
# with a build command that fails chapter 04 with that output (fake_build.sh); then the same with
# a stub that only warns, and a build that succeeds.
#   cmake -DCHECK=<attn-check> -DCXX=<compiler> -DWORK_DIR=<dir> -DHERE=<this folder> -P compile_error.cmake
set(stub ${WORK_DIR}/chapters/04_single_head/exercises/ex04_1_project.cpp)
file(REMOVE_RECURSE ${WORK_DIR})
file(WRITE ${stub} "// a learner's stub, half written\nfloat project_one(float x) {\n  return x * weight;\n}\n")
execute_process(COMMAND ${CXX} -fsyntax-only ${stub} RESULT_VARIABLE rc ERROR_VARIABLE log OUTPUT_VARIABLE log)
if(rc EQUAL 0)
  message(FATAL_ERROR "the broken stub compiled")
endif()
file(WRITE ${WORK_DIR}/compiler.log "${log}")
set(CMD ${CHECK} --build-command "sh ${HERE}/fake_build.sh ${WORK_DIR}/compiler.log 1")
set(EXIT 1)
set(MATCH
  "04_single_head +ex04\\.1 .* does not compile +line 3: weight is not declared here"
  "ex04\\.2 .* not checked +chapter 04 does not compile"
  "ex04\\.3 .* not checked"
  "ex04\\.1 does not compile: [^\n]*ex04_1_project\\.cpp:3:[0-9]+\n  weight is not declared here: a typo"
  "    3 \\|   return x \\* weight;"
  "ex01\\.1 .* not started")
# None of chapter 04's old results: no status from a test run.
set(NOT_MATCH "ex04\\.[0-9] [^\n]*(not started|failing|passes: delete TODO|crashed)")
include(${HERE}/expect.cmake)

# A stub with a warning builds, its warning is shown, and the chapter is checked.
file(WRITE ${stub} "float project_one(float x) {\n  int count = 0;\n  return x;\n}\n")
execute_process(COMMAND ${CXX} -Wall -fsyntax-only ${stub} RESULT_VARIABLE rc ERROR_VARIABLE log
                OUTPUT_VARIABLE log)
if(NOT rc EQUAL 0 OR NOT log MATCHES "warning")
  message(FATAL_ERROR "the stub with an unused variable should compile with a warning:\n${log}")
endif()
file(WRITE ${WORK_DIR}/compiler.log "${log}")
set(CMD ${CHECK} 04 --build-command "sh ${HERE}/fake_build.sh ${WORK_DIR}/compiler.log 0")
set(EXIT "0|1")
set(MATCH "Warnings in your code \\(they never stop the build\\):\n  ex04\\.1 line 2: unused variable 'count'"
          "ex04\\.2 ")
set(NOT_MATCH "does not compile|not checked")
include(${HERE}/expect.cmake)

# Adding up in double, as several stubs ask, warns on every line (-Wdouble-promotion): those are
# folded into one line, listed after the warning that may name the bug, which always shows.
set(lines "double sum_squares(const float* x) {\n  double s = 0.0;\n")
foreach(i RANGE 11)
  string(APPEND lines "  s += x[${i}] * x[${i}];\n")
endforeach()
string(APPEND lines "  int count = 0;\n  return s;\n}\n")
file(WRITE ${stub} "${lines}")
execute_process(COMMAND ${CXX} -Wall -Wdouble-promotion -fsyntax-only ${stub} RESULT_VARIABLE rc
                ERROR_VARIABLE log OUTPUT_VARIABLE log)
if(NOT rc EQUAL 0 OR NOT log MATCHES "Wdouble-promotion" OR NOT log MATCHES "Wunused-variable")
  message(FATAL_ERROR "the stub should compile with promotions and an unused variable:\n${log}")
endif()
file(WRITE ${WORK_DIR}/compiler.log "${log}")
set(MATCH "Warnings in your code \\(they never stop the build\\):\n  ex04\\.1 line 15: unused variable 'count'\n  ex04\\.1 lines 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14: float promoted to double")
set(NOT_MATCH "more\n|does not compile")
include(${HERE}/expect.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
