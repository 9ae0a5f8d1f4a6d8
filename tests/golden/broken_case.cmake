# tests/golden/broken_case.cmake: proves attn-golden FAILS when it should (ctest golden.fails.*).
# Copies a good case into WORK, breaks it one way (KIND), runs attn-golden on WORK and checks the
# exit code (1) and stdout with tests/cli/expect.cmake:
#   cmake -DKIND=<kind> -DSOURCE=<case dir> -DWORK=<scratch dir> -DGOLDEN=<attn-golden>
#         -DEXPECT_MATCH=<regex> -DEXPECT_SCRIPT=<expect.cmake> -P broken_case.cmake
# Nothing broken is committed: every broken file is made here, in the build folder.
foreach(var KIND SOURCE WORK GOLDEN EXPECT_MATCH EXPECT_SCRIPT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "broken_case.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
get_filename_component(name ${SOURCE} NAME)
file(COPY ${SOURCE} DESTINATION ${WORK})
set(case ${WORK}/${name})

# Replace `from` by `to` in the case's case.txt.
function(edit_case_txt from to)
  file(READ ${case}/case.txt text)
  string(REPLACE "${from}" "${to}" edited "${text}")
  if(edited STREQUAL text)
    message(FATAL_ERROR "broken_case.cmake: '${from}' not found in ${case}/case.txt")
  endif()
  file(WRITE ${case}/case.txt "${edited}")
endfunction()

if(KIND STREQUAL "corrupt_npy")          # an input that is not a .npy file at all
  file(WRITE ${case}/x.npy "this is not a .npy file\n")
elseif(KIND STREQUAL "trailing_data")    # a reference with more bytes than its shape holds
  file(APPEND ${case}/y.npy "junk")
elseif(KIND STREQUAL "missing_file")
  file(REMOVE ${case}/w_v.npy)
elseif(KIND STREQUAL "missing_key")
  edit_case_txt("n_heads 3\n" "")
elseif(KIND STREQUAL "bad_value")
  edit_case_txt("norm pre" "norm sandwich")
elseif(KIND STREQUAL "unknown_key")
  edit_case_txt("eps " "epsilon ")
elseif(KIND STREQUAL "unknown_op")
  edit_case_txt("op softmax" "op convolve")
elseif(KIND STREQUAL "wrong_reference")  # a good copy and one whose reference is its input
  file(RENAME ${case} ${WORK}/good)
  file(COPY ${SOURCE} DESTINATION ${WORK})
  file(RENAME ${case} ${WORK}/wrong)
  file(COPY_FILE ${WORK}/wrong/x.npy ${WORK}/wrong/y.npy)
elseif(KIND STREQUAL "wrong_shape")      # a reference of the wrong shape
  file(COPY_FILE ${case}/out.npy ${case}/weights.npy)
elseif(KIND STREQUAL "lm_missing_weight")
  file(REMOVE ${case}/h0.b1.npy)
else()
  message(FATAL_ERROR "broken_case.cmake: unknown KIND '${KIND}'")
endif()

set(CMD ${GOLDEN} ${WORK})
set(EXPECT_EXIT 1)
set(EXPECT_STREAM stdout)
include(${EXPECT_SCRIPT})
