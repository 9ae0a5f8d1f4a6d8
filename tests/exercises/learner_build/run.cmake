# ctest exercise.warnings_never_block: a learner's half-written stub builds (issue 11).
# Configures project/ (one chapter, added by the real add_chapter with the real warning flags)
# in WORK_DIR, builds it and requires: the build succeeds, the walkthrough runs, and each habit
# was reported as a warning. The control: the same stub under attn::warnings fails to build.
#   cmake -DATTN_CMAKE_DIR=... -DPROJECT_DIR=... -DWORK_DIR=... -DCXX=... -DGENERATOR=... -P run.cmake
foreach(var ATTN_CMAKE_DIR PROJECT_DIR WORK_DIR CXX GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${PROJECT_DIR} -B ${WORK_DIR} -G ${GENERATOR}
          -DCMAKE_CXX_COMPILER=${CXX} -DATTN_CMAKE_DIR=${ATTN_CMAKE_DIR} -DCMAKE_BUILD_TYPE=Release
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the test course failed:\n${out}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a stub with warnings blocked the learner's build:\n${out}")
endif()
foreach(warning unused-variable sign-compare double-promotion old-style-cast)
  if(NOT out MATCHES "-W${warning}")
    message(FATAL_ERROR "the learner's build did not report -W${warning} (warnings must show, "
                        "not be silenced):\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${WORK_DIR}/99_habits RESULT_VARIABLE rc OUTPUT_VARIABLE printed)
if(NOT rc EQUAL 0 OR NOT printed MATCHES "^2.00")
  message(FATAL_ERROR "the test course's walkthrough did not run (exit ${rc}): ${printed}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR} --target habits_strict
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "control failed: the stub builds even under the strict attn::warnings, "
                      "so it shows no habit at all")
endif()
message(STATUS "the stub built with 4 warnings for the learner, and failed under -Werror")
file(REMOVE_RECURSE ${WORK_DIR})
