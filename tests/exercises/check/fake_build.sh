# A stand-in for `cmake --build` in ctest check.compile_error: attn-check runs
# "sh fake_build.sh LOG CODE chNN_mine" for each chapter; chapter 04's build prints LOG (the
# output of a real compiler) and exits with CODE, every other chapter builds silently.
if [ "$3" = ch04_mine ]; then
  echo "[1/2] Building CXX object chapters/CMakeFiles/ch04_exercises.dir/ex04_1_project.cpp.o"
  [ "$2" = 0 ] || echo "FAILED: chapters/CMakeFiles/ch04_exercises.dir/ex04_1_project.cpp.o"
  cat "$1"
  exit "$2"
fi
exit 0
