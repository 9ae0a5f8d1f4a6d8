# A stand-in for `cmake --build` in ctest check.compile_error: attn-check runs
# "sh fake_build.sh LOG chNN_mine" for each chapter; chapter 04's build fails with the compiler
# output in LOG (a real error of a real compiler), every other chapter builds.
if [ "$2" = ch04_mine ]; then
  echo "[1/2] Building CXX object chapters/CMakeFiles/ch04_exercises.dir/ex04_1_project.cpp.o"
  echo "FAILED: chapters/CMakeFiles/ch04_exercises.dir/ex04_1_project.cpp.o"
  cat "$1"
  exit 1
fi
exit 0
