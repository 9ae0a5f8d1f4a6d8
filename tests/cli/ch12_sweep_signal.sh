#!/bin/sh
# tests/cli/ch12_sweep_signal.sh EXE WORKDIR: --sweep runs each length in a child process
# (--long T); SIGTERM to the sweep must not leave that child computing alone (issue 29, item 5).
# The child is a --long 32768 run with --tile 8, about two minutes, so it is surely running when the sweep
# is stopped; it must be gone within 10 s. (/proc is read directly: no procps on a bare Debian.)
set -u
exe=$1
work=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
cd "$work" || exit 1

# The pids whose parent is $1.
children_of() {
  for stat in /proc/[0-9]*/stat; do
    fields=$(sed 's/.*) //' "$stat" 2> /dev/null) || continue
    set -- "$1" $fields
    [ "${3:-}" = "$1" ] && basename "$(dirname "$stat")"
  done
  return 0
}
# Kills $1 and every process below it (the test's own processes only, by pid).
kill_tree() {
  for c in $(children_of "$1"); do kill_tree "$c"; done
  kill -9 "$1" 2> /dev/null
}

"$exe" --sweep 32768 --tile 8 > sweep.txt 2>&1 &
pid=$!
child=""
waited=0
while [ -z "$child" ] && [ "$waited" -lt 600 ]; do
  sleep 0.1
  waited=$((waited + 1))
  child=$(children_of "$pid" | head -1)
done
[ -n "$child" ] || { kill_tree "$pid"; fail "the sweep started no child in 60 s: $(cat sweep.txt)"; }
sleep 1  # the child is the --long run now (exec'd), not a copy of the sweep
kill -TERM "$pid"
wait "$pid"
code=$?
[ "$code" -eq 143 ] || { kill_tree "$child"; fail "SIGTERM: the sweep exited with $code, expected 143"; }
waited=0
while kill -0 "$child" 2> /dev/null && [ "$waited" -lt 100 ]; do sleep 0.1; waited=$((waited + 1)); done
if kill -0 "$child" 2> /dev/null; then
  kill_tree "$child"
  fail "SIGTERM to the sweep (pid $pid) left its child (pid $child) running"
fi
echo "SIGTERM to --sweep: its --long child ended with it"
