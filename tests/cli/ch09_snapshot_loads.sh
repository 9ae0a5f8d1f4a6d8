#!/bin/sh
# tests/cli/ch09_snapshot_loads.sh EXE09 EXE10 EXE07 WORKDIR: loading a run while it trains.
# Chapter 09 saves a checkpoint at every step; meanwhile chapters 10 and 07 load the run's model
# again and again (--weights RUN, RUN/model). Each load reads one checkpoint, resolved once, and
# verifies its MANIFEST.txt, so every load either succeeds (one complete checkpoint) or is
# refused with one line naming a file (the checkpoint was replaced under it: missing, vanished,
# no such file or folder, cannot open): never a crash, never a silent mix of two checkpoints, never
# another error.
set -u
exe09=$1
exe10=$2
exe07=$3
work=$4
small="--n-embd 16 --n-heads 2 --n-layers 1 --block-size 8 --batch-size 4 --eval-iters 1 --tokens 0"
fail() { echo "FAIL: $*"; kill -9 "$pid" 2> /dev/null; exit 1; }
rm -rf "$work" && mkdir -p "$work" || { echo "FAIL: cannot create $work"; exit 1; }
cd "$work" || exit 1

"$exe09" $small --steps 1000000 --eval-interval 1 --save run > train.txt 2>&1 &
pid=$!
waited=0
while [ ! -e run/model ] && [ "$waited" -lt 600 ]; do sleep 0.1; waited=$((waited + 1)); done
[ -e run/model ] || fail "no checkpoint after 60 s"

ok=0
refused=0
i=0
start=$(date +%s)
# 8 s of loads, and on a loaded machine (where every load may lose the race for a while) on
# until one has succeeded, at most 60 s and 2000 loads.
while { [ $(($(date +%s) - start)) -lt 8 ] && [ "$i" -lt 200 ]; } ||
      { [ "$ok" -eq 0 ] && [ $(($(date +%s) - start)) -lt 60 ] && [ "$i" -lt 2000 ]; }; do
  i=$((i + 1))
  if [ $((i % 4)) -eq 0 ]; then
    "$exe07" --weights run/model --n-layers 1 --n-heads 2 --tokens 5 > out.txt 2> err.txt
  else
    "$exe10" --weights run --n-layers 1 --n-heads 2 --tokens 5 > out.txt 2> err.txt
  fi
  code=$?
  if [ "$code" -eq 0 ]; then
    ok=$((ok + 1))
  elif [ "$code" -eq 1 ] && [ "$(wc -l < err.txt)" -eq 1 ] &&
       grep -Eiq "(missing|does not match MANIFEST.txt|is not listed in MANIFEST.txt|no such file|no such folder|vanished|cannot open)" err.txt; then
    refused=$((refused + 1))
  else
    fail "load $i: exit $code: $(cat err.txt)"
  fi
done
kill -9 "$pid"
wait "$pid" 2> /dev/null
[ "$ok" -gt 0 ] || fail "no load succeeded in $i tries"
echo "$i loads while training: $ok consistent, $refused refused by name, none mixed"
