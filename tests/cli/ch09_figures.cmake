# The figures of chapters 07-09 (--svg) carry their titles, axis names and the reference lines
# their pages refer to (tests/cli/figures.sh; a short run of each chapter, about a second).
if(TARGET 07_causal_lm AND TARGET 08_backprop AND TARGET 09_training)
  add_test(NAME cli.figures
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/figures.sh $<TARGET_FILE:07_causal_lm>
                   $<TARGET_FILE:08_backprop> $<TARGET_FILE:09_training>
                   ${CMAKE_CURRENT_BINARY_DIR}/figures)
  set_tests_properties(cli.figures PROPERTIES LABELS "cli;ch07;ch08;ch09" ENVIRONMENT "ATTN_DATA=")
endif()
