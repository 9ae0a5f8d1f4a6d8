# tests/golden/robust_tree.cmake: attn-golden on hostile case trees (issue 7, ctest
# golden.robust.*): it must report the bad path on its case line and go on, never abort.
#   cmake -DKIND=<kind> -DSOURCE=<a good case dir> -DWORK=<scratch dir> -DGOLDEN=<attn-golden>
#         -DEXPECT_MATCH=<regex> -DEXPECT_SCRIPT=<expect.cmake> -P robust_tree.cmake
# Everything is made here, in the build folder; nothing hostile is committed.
foreach(var KIND SOURCE WORK GOLDEN EXPECT_MATCH EXPECT_SCRIPT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "robust_tree.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
get_filename_component(name ${SOURCE} NAME)
file(COPY ${SOURCE} DESTINATION ${WORK})  # one good case, which must still PASS
set(case ${WORK}/${name})

if(KIND STREQUAL "symlink_loop")         # a link to itself beside the case
  file(CREATE_LINK loop ${WORK}/loop SYMBOLIC)
elseif(KIND STREQUAL "unreadable_folder") # a folder nobody may list (root may: then skip)
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(uid STREQUAL "0")
    message("skipped: running as root, which can read any folder")
    return()
  endif()
  file(MAKE_DIRECTORY ${WORK}/locked)
  file(COPY ${SOURCE} DESTINATION ${WORK}/locked)
  file(CHMOD ${WORK}/locked PERMISSIONS OWNER_WRITE)
elseif(KIND STREQUAL "case_txt_dev_zero") # case.txt is a link to an endless device
  file(COPY ${SOURCE} DESTINATION ${WORK}/zero)
  file(REMOVE ${WORK}/zero/${name}/case.txt)
  file(CREATE_LINK /dev/zero ${WORK}/zero/${name}/case.txt SYMBOLIC)
elseif(KIND STREQUAL "npy_dev_zero")      # an input .npy is a link to /dev/zero
  file(REMOVE ${case}/x.npy)
  file(CREATE_LINK /dev/zero ${case}/x.npy SYMBOLIC)
elseif(KIND STREQUAL "npy_overflowing_shape") # (0, 2^32, 2^32): no data, product overflows
  # Version 1.0, a 118-byte header (octal 166), data at byte 128. CMake strings cannot hold the
  # NUL bytes of the header length, so printf writes the file.
  set(header "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }")
  string(LENGTH "${header}" n)
  math(EXPR pad "118 - ${n} - 1")
  string(REPEAT " " ${pad} spaces)
  execute_process(COMMAND sh -c "printf '\\223NUMPY\\001\\000\\166\\000%s%s\\n' \"$1\" \"$2\" > \"$3\""
                          sh "${header}" "${spaces}" "${case}/x.npy")
else()
  message(FATAL_ERROR "robust_tree.cmake: unknown KIND '${KIND}'")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} "-DCMD=${GOLDEN};${WORK}" -DEXPECT_EXIT=1
                        "-DEXPECT_MATCH=${EXPECT_MATCH}" -DEXPECT_STREAM=stdout
                        -P ${EXPECT_SCRIPT}
                RESULT_VARIABLE result)
if(KIND STREQUAL "unreadable_folder")
  file(CHMOD ${WORK}/locked PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)  # so it can be removed
endif()
if(NOT result EQUAL 0)
  message(FATAL_ERROR "robust_tree.cmake: ${KIND} failed")
endif()
