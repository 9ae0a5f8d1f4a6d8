#!/usr/bin/env bash
# ctest check.watch: attn-check --watch reacts to a saved exercise file and stops cleanly.
#   watch.sh <attn-check> <source dir> <work dir>
# 1. --watch-cycles 2: the first check, then a stub is saved (its time stamp only: `touch`, put
#    back afterwards), the second check, then it exits on its own.
# 2. Ctrl-C (SIGINT) while watching: "Stopped watching.", exit code 0.
# The build step is "true" (--build-command): this test is about watching, not compiling.
set -u
check=$1
stub=$2/chapters/03_masked_softmax/exercises/ex03_1_causal_mask.cpp
work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "check.watch: $*"; echo "--- output:"; cat "$work/out" 2>/dev/null; exit 1; }
wait_for() {  # wait_for <regex> <seconds>
  for _ in $(seq 1 $(( $2 * 10 ))); do
    grep -q "$1" "$work/out" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

touch -r "$stub" "$work/mtime"
trap 'touch -r "$work/mtime" "$stub"' EXIT

# 1. A save makes it check again.
"$check" --watch --watch-cycles 2 --build-command true 03 > "$work/out" 2>&1 < /dev/null &
pid=$!
wait_for "Watching" 60 || { kill -9 $pid; fail "no first check within 60 s"; }
sleep 0.2
touch "$stub"
for _ in $(seq 1 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then kill -9 $pid; fail "still running 60 s after the save"; fi
wait $pid
grep -q "ex03_1_causal_mask.cpp changed, checking again" "$work/out" || fail "no 'changed, checking again'"
[ "$(grep -c "exercises to go" "$work/out")" -eq 2 ] || fail "the table was not drawn twice"
[ "$(grep -c "^03_masked_softmax  *ex03\.3 " "$work/out")" -eq 2 ] || fail "the table lacks ex03.3"
grep -q "Hint 1 of" "$work/out" || fail "no hint shown"

# 2. Ctrl-C stops it cleanly.
"$check" --watch --build-command true 03 > "$work/out" 2>&1 < /dev/null &
pid=$!
wait_for "Watching" 60 || { kill -9 $pid; fail "no first check within 60 s"; }
kill -INT $pid
for _ in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then kill -9 $pid; fail "Ctrl-C did not stop it within 10 s"; fi
wait $pid
rc=$?
[ $rc -eq 0 ] || fail "exit code $rc after Ctrl-C, expected 0"
grep -q "Stopped watching." "$work/out" || fail "no 'Stopped watching.'"
echo "check.watch: reacted to a save, and stopped on Ctrl-C"
touch -r "$work/mtime" "$stub"
trap - EXIT
rm -rf "$work"
