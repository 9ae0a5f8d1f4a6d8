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
elseif(KIND STREQUAL "infinite_reference" OR KIND STREQUAL "nonfinite_expected")
  # Every value of the reference y.npy (a float32 .npy, version 1 header) becomes +inf: the
  # tolerance 1e-5 + 1e-4 |ref| would be infinite and pass anything. perl is in every Debian base.
  execute_process(COMMAND perl -e [=[
    local $/; open(my $f, '+<:raw', $ARGV[0]) or die "$ARGV[0]: $!";
    my $d = <$f>; my $start = 10 + unpack('v', substr($d, 8, 2));
    my $n = (length($d) - $start) / 4; my $inf = 9**9**9;
    seek($f, $start, 0); print $f pack('f<' x $n, ($inf) x $n); close($f) or die $!;
  ]=] ${case}/y.npy RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "broken_case.cmake: could not rewrite ${case}/y.npy")
  endif()
  if(KIND STREQUAL "nonfinite_expected")  # declared: now got must be exactly inf, and is not
    file(APPEND ${case}/case.txt "expect_nonfinite 1\n")
  endif()
elseif(KIND STREQUAL "flash_unread_weights")  # flash keeps no weights: weights.npy is garbage
  file(APPEND ${case}/case.txt "kernel flash\n")
  file(COPY_FILE ${case}/out.npy ${case}/weights.npy)
elseif(KIND STREQUAL "unread_reference")  # a reference no op of the case reads
  file(COPY_FILE ${case}/y.npy ${case}/z.npy)
elseif(KIND STREQUAL "wrong_shape")      # a reference of the wrong shape
  file(COPY_FILE ${case}/out.npy ${case}/weights.npy)
elseif(KIND STREQUAL "train_wrong_lr")   # the steps of a train case with another learning rate
  edit_case_txt("lr 0.03" "lr 0.003")
elseif(KIND STREQUAL "huge_n_layers")    # 40 bytes that used to ask for gigabytes
  edit_case_txt("n_layers 1\n" "n_layers 1152921504606846976\n")
elseif(KIND STREQUAL "lm_missing_weight")
  file(REMOVE ${case}/h0.b1.npy)
# Gradients (chapter 08): grad.NAME.npy files.
elseif(KIND STREQUAL "grad_wrong" OR KIND STREQUAL "gqa_grad_wrong") # w_q's gradient for w_k's
  file(RENAME ${case} ${WORK}/good)
  file(COPY ${SOURCE} DESTINATION ${WORK})
  file(RENAME ${case} ${WORK}/wrong)
  file(COPY_FILE ${WORK}/wrong/grad.w_q.npy ${WORK}/wrong/grad.w_k.npy)
elseif(KIND STREQUAL "grad_unknown_name")   # a gradient of nothing the op has
  file(COPY_FILE ${case}/grad.x.npy ${case}/grad.w_qk.npy)
elseif(KIND STREQUAL "grad_wrong_shape")    # a reference gradient of the wrong shape
  file(COPY_FILE ${case}/grad.w_q.npy ${case}/grad.x.npy)
elseif(KIND STREQUAL "grad_upstream_shape") # an upstream gradient of the wrong shape
  file(COPY_FILE ${case}/grad.w_q.npy ${case}/grad.out.npy)
elseif(KIND STREQUAL "grad_missing_upstream")
  file(REMOVE ${case}/grad.out.npy)
elseif(KIND STREQUAL "grad_of_weights")     # the attention weights output has no upstream gradient
  file(COPY_FILE ${case}/weights.npy ${case}/grad.weights.npy)
elseif(KIND STREQUAL "grad_lm_no_targets")  # lm's backward starts from the loss of targets.npy
  file(REMOVE ${case}/targets.npy)
elseif(KIND STREQUAL "grad_lm_wrong_loss")  # a loss from another model
  file(COPY_FILE ${SOURCE}/../lm_grad_2layer/loss.npy ${case}/loss.npy)
# Chapter 11's ops: settings that do not fit together.
elseif(KIND STREQUAL "gqa_kv_not_dividing") # 3 K/V heads for 4 query heads
  edit_case_txt("n_kv_heads 2\n" "n_kv_heads 3\n")
elseif(KIND STREQUAL "gqa_rope_odd_hs")     # RoPE on heads of size 3
  edit_case_txt("rope 0\n" "rope 1\n")
elseif(KIND STREQUAL "gqa_window_not_causal")
  edit_case_txt("causal 1\n" "causal 0\n")
elseif(KIND STREQUAL "rope_odd_hs")         # an input whose head size is 1 (sdpa_hs1's q)
  file(COPY_FILE ${SOURCE}/../sdpa_hs1/q.npy ${case}/x.npy)
elseif(KIND STREQUAL "rope_theta_zero")
  edit_case_txt("theta 10000.0\n" "theta 0\n")
elseif(KIND STREQUAL "swa_window_zero")
  edit_case_txt("window 3\n" "window 0\n")
# Attention kernels (chapter 12): the `kernel` key.
elseif(KIND STREQUAL "kernel_unknown")      # a kernel that does not exist
  file(APPEND ${case}/case.txt "kernel turbo\n")
elseif(KIND STREQUAL "kernel_flash_wrong")  # the flash kernel alone, against a wrong gradient
  file(APPEND ${case}/case.txt "kernel flash\n")
  file(REMOVE ${case}/weights.npy)  # flash keeps no weights: a case for it alone holds none
  file(COPY_FILE ${case}/grad.q.npy ${case}/grad.k.npy)
else()
  message(FATAL_ERROR "broken_case.cmake: unknown KIND '${KIND}'")
endif()

set(CMD ${GOLDEN} ${WORK})
set(EXPECT_EXIT 1)
set(EXPECT_STREAM stdout)
include(${EXPECT_SCRIPT})
