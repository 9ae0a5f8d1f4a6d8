# ctest check.compile_error: a stub that does not compile is reported as its exercise, file:line
# and the first error in plain words, and its chapter's old results are never shown.
# Compiles a broken ex04_1_project.cpp with the real compiler in WORK_DIR, then runs attn-check
# with a build command that fails chapter 04 with that output (fake_build.sh).
#   cmake -DCHECK=<attn-check> -DCXX=<compiler> -DWORK_DIR=<dir> -DHERE=<this folder> -P compile_error.cmake
set(stub ${WORK_DIR}/chapters/04_single_head/exercises/ex04_1_project.cpp)
file(REMOVE_RECURSE ${WORK_DIR})
file(WRITE ${stub} "// a learner's stub, half written\nfloat project_one(float x) {\n  return x * weight;\n}\n")
execute_process(COMMAND ${CXX} -fsyntax-only ${stub} RESULT_VARIABLE rc ERROR_VARIABLE log OUTPUT_VARIABLE log)
if(rc EQUAL 0)
  message(FATAL_ERROR "the broken stub compiled")
endif()
file(WRITE ${WORK_DIR}/compiler.log "${log}")
set(CMD ${CHECK} --build-command "sh ${HERE}/fake_build.sh ${WORK_DIR}/compiler.log")
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
file(REMOVE_RECURSE ${WORK_DIR})
