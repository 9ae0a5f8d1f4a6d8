# add_chapter(01 bigram) builds one chapter of the course:
#   - chNN_exercises : the learner's stubs, chapters/NN_name/exercises/exNN_M_*.cpp
#   - NN_name        : the narrated walkthrough, chapters/NN_name/main.cpp (runs the reference
#                      implementation, or the learner's stubs with --mine), from the object
#                      library NN_name_objects
# It records the chapter in the global property ATTN_CHAPTERS ("01_bigram;02_averaging;...") so
# tests/ can build one exercise checker per chapter.
function(add_chapter number name)
  set(dir ${PROJECT_SOURCE_DIR}/chapters/${number}_${name})
  if(NOT EXISTS ${dir}/main.cpp OR NOT EXISTS ${dir}/exercises/exercises.hpp)
    message(STATUS "Chapter ${number}_${name}: not written yet, skipped")
    return()
  endif()
  file(GLOB stubs CONFIGURE_DEPENDS ${dir}/exercises/ex${number}_*.cpp)
  add_library(ch${number}_exercises STATIC ${stubs})
  target_include_directories(ch${number}_exercises PUBLIC ${dir}/exercises)
  # Learners' code gets the same warnings, but a warning never blocks their build
  # (attn::learner_warnings has no -Werror; cmake/Warnings.cmake).
  target_link_libraries(ch${number}_exercises PUBLIC attn::common PRIVATE attn::learner_warnings)
  set_target_properties(ch${number}_exercises PROPERTIES LINKER_LANGUAGE CXX)
  attn_reuse_pch(ch${number}_exercises)

  # main.cpp is the lesson; a chapter may keep the run around it in other files beside it. They
  # are compiled once (NN_name_objects), so that tests/exercises/ can link the same walkthrough
  # with the reference answers in place of the stubs (--mine on solved exercises).
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  add_library(${number}_${name}_objects OBJECT ${sources})
  target_link_libraries(${number}_${name}_objects PRIVATE attn::common ch${number}_exercises
                                                          attn::warnings)
  attn_reuse_pch(${number}_${name}_objects)
  add_executable(${number}_${name} $<TARGET_OBJECTS:${number}_${name}_objects>)
  target_link_libraries(${number}_${name} PRIVATE attn::common ch${number}_exercises attn::warnings)

  set_property(GLOBAL APPEND PROPERTY ATTN_CHAPTERS ${number}_${name})
endfunction()
