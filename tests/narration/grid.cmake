# Runs one chapter over a grid of seeds and flag settings in self-check mode (ATTN_SELF_CHECK=1):
# every run must exit 0 and report on stderr that its claims held ("self-check: N claims held",
# N > 0). A sentence contradicted by the run's own numbers makes the chapter exit 1 with
# "claim contradicted by the program's own numbers: ...", and this script prints the command.
#   cmake -DBIN=<chapter binary> -DSEEDS="1;2;..." [-DFLAG_SEEDS="1;2;3"] -DFLAGS="<set>|..." -P grid.cmake
# A flag set is a space-separated argument list; "-" runs the defaults. The defaults run with
# every seed of SEEDS, the other sets with FLAG_SEEDS (default: SEEDS too); a set that names its
# own --seed runs once.
if(NOT BIN OR NOT SEEDS)
  message(FATAL_ERROR "grid.cmake needs -DBIN and -DSEEDS")
endif()
set(ENV{ATTN_SELF_CHECK} 1)
set(ENV{NO_COLOR} 1)
unset(ENV{ATTN_DATA})
string(REPLACE "|" ";" sets "${FLAGS}")
if(sets STREQUAL "")
  set(sets "-")
endif()
set(runs 0)
set(failures 0)
foreach(set IN LISTS sets)
  if(set STREQUAL "-")
    set(args "")
  else()
    separate_arguments(args UNIX_COMMAND "${set}")
  endif()
  set(set_seeds ${SEEDS})
  if(NOT set STREQUAL "-" AND FLAG_SEEDS)
    set(set_seeds ${FLAG_SEEDS})
  endif()
  # A set that names its own --seed (a seed a bug report found) runs once, as written.
  if(set MATCHES "(^| )--seed ")
    set(set_seeds "own")
  endif()
  foreach(seed IN LISTS set_seeds)
    math(EXPR runs "${runs} + 1")
    set(seed_args --seed ${seed})
    if(seed STREQUAL "own")
      set(seed_args "")
    endif()
    execute_process(COMMAND ${BIN} ${seed_args} ${args}
                    RESULT_VARIABLE code OUTPUT_QUIET ERROR_VARIABLE err)
    if(NOT code EQUAL 0 OR NOT err MATCHES "self-check: [1-9][0-9]* claims held")
      math(EXPR failures "${failures} + 1")
      string(STRIP "${err}" err)
      message("FAILED (exit ${code}): ${BIN} ${seed_args} ${set}\n  ${err}")
    endif()
  endforeach()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} of ${runs} runs failed")
endif()
message("${runs} runs, every claim held")
