# tests/cli/expect.cmake: one bad-input check, run by the ctest tests that attn_cli_test() adds
# (tests/cli/CMakeLists.txt):
#   cmake -DCMD=<program;arg;...> -DEXPECT_EXIT=<code> -DEXPECT_MATCH=<regex>
#         [-DEXPECT_STREAM=stderr|stdout] -P expect.cmake
# stderr (default): pass when the exit code matches, stderr is exactly one line (one trailing
#   newline allowed) matching the regex, and nothing crashed.
# stdout (e.g. --help): the regex applies to stdout, which may span lines, and stderr is empty.
foreach(var CMD EXPECT_EXIT EXPECT_MATCH)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED EXPECT_STREAM)
  set(EXPECT_STREAM stderr)
endif()

if(DEFINED PREPARE)
  execute_process(COMMAND sh -c "${PREPARE}" RESULT_VARIABLE prepared)
  if(NOT prepared EQUAL 0)
    message(FATAL_ERROR "expect.cmake: PREPARE failed (${prepared}): ${PREPARE}")
  endif()
endif()
if(DEFINED STDOUT_TO)  # e.g. /dev/full: stdout is not captured, stderr is checked
  execute_process(COMMAND ${CMD} RESULT_VARIABLE code OUTPUT_FILE ${STDOUT_TO} ERROR_VARIABLE err)
  set(out "")
else()
  execute_process(COMMAND ${CMD} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
endif()

set(problems "")
if(NOT "${code}" STREQUAL "${EXPECT_EXIT}")
  string(APPEND problems "  exit code: expected ${EXPECT_EXIT}, got ${code}\n")
endif()

if(EXPECT_STREAM STREQUAL "stdout")
  if(NOT err STREQUAL "")
    string(APPEND problems "  stderr: expected nothing\n")
  endif()
  if(NOT out MATCHES "${EXPECT_MATCH}")
    string(APPEND problems "  stdout: does not match \"${EXPECT_MATCH}\"\n")
  endif()
else()
  string(REGEX REPLACE "\n$" "" line "${err}")
  if(line STREQUAL "")
    string(APPEND problems "  stderr: expected one line, got nothing\n")
  elseif(line MATCHES "\n")
    string(APPEND problems "  stderr: expected exactly one line, got several\n")
  endif()
  if(NOT line MATCHES "${EXPECT_MATCH}")
    string(APPEND problems "  stderr: does not match \"${EXPECT_MATCH}\"\n")
  endif()
endif()

# A control character from the input must never reach the terminal raw (issue 7): ESC starts
# the terminal's colour and cursor commands. (Colour itself is off: the output is not a tty.)
string(ASCII 27 esc)
string(FIND "${out}${err}" "${esc}" at)
if(NOT at EQUAL -1)
  string(APPEND problems "  the output contains a raw ESC character\n")
endif()

foreach(crash "Sanitizer" "runtime error:" "Aborted" "terminate called" "Segmentation")
  string(FIND "${out}${err}" "${crash}" at)
  if(NOT at EQUAL -1)
    string(APPEND problems "  the output contains \"${crash}\": the program crashed\n")
  endif()
endforeach()

list(JOIN CMD " " shown)
if(problems STREQUAL "")
  message("ok: ${shown}\n  exit ${code}, ${EXPECT_STREAM}: ${line}${out}")
else()
  # Show what came out (stdout shortened), then fail.
  string(LENGTH "${out}" out_length)
  if(out_length GREATER 2000)
    string(SUBSTRING "${out}" 0 2000 out)
    string(APPEND out "...(${out_length} bytes)")
  endif()
  message(FATAL_ERROR "${shown}\n${problems}--- stderr ---\n${err}--- stdout ---\n${out}")
endif()
