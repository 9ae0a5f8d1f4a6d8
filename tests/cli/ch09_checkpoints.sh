#!/bin/sh
# tests/cli/ch09_checkpoints.sh EXE WORKDIR: chapter 09's checkpoints, end to end.
#  1. a run stopped at step 20 and resumed to step 40 prints the same losses and ends with
#     bit-identical files as a run of 40 steps without the stop;
#  2. kill -9 at several moments never leaves DIR without a loadable checkpoint;
#  3. Ctrl-C (SIGINT) finishes the step, saves and exits 130;
#  4. flags that contradict the checkpoint, and a corrupt checkpoint, exit with one line;
#  5. one owner per run folder: a fresh --save on a run is refused (--overwrite starts over), a
#     second trainer is refused naming the first one's pid, --resume DIR/current saves to DIR;
#  6. resume continues the run as configured: without --steps to its own target, and a --steps
#     that would re-shape a cosine schedule is refused.
set -u
exe=$1
work=$2
small="--n-embd 16 --n-heads 2 --n-layers 1 --block-size 8 --batch-size 4 --eval-iters 2 --tokens 0"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
cd "$work" || exit 1

# 1. Stop and resume.
"$exe" $small --steps 40 --eval-interval 10 --save straight > straight.txt 2>&1 || fail "straight run: $(tail -1 straight.txt)"
"$exe" $small --steps 20 --eval-interval 10 --save stopped > first.txt 2>&1 || fail "first half: $(tail -1 first.txt)"
"$exe" --resume stopped --steps 40 > second.txt 2>&1 || fail "resume: $(tail -1 second.txt)"
grep '^step ' straight.txt > a.txt
cat first.txt second.txt | grep '^step ' > b.txt
[ -s a.txt ] || fail "the straight run printed no estimates"
cmp -s a.txt b.txt || { diff a.txt b.txt; fail "the resumed run printed other losses"; }
for f in straight/current/model/*.npy straight/current/adam_m/*.npy straight/current/adam_v/*.npy straight/current/losses.npy; do
  g=stopped/current/${f#straight/current/}
  cmp -s "$f" "$g" || fail "$g differs from $f after resuming"
done
echo "resume: 20 + 20 steps bit-identical to 40"

# 2. kill -9 at several moments: a checkpoint is always there and loads.
for delay in 0.3 0.6 0.9 1.3 1.7; do
  rm -rf killed
  timeout -s KILL "$delay" "$exe" $small --steps 1000000 --eval-interval 3 --save killed > /dev/null 2>&1
  code=$?
  [ "$code" -eq 137 ] || [ "$code" -eq 124 ] || fail "after kill -9 at ${delay}s: exit code $code"
  # timeout -s KILL also kills itself, so the trainer may still be exiting (holding its lock,
  # DIR/lock names its pid): wait until it is gone.
  holder=$(cat killed/lock 2> /dev/null)
  waited=0
  while [ -n "$holder" ] && kill -0 "$holder" 2> /dev/null && [ "$waited" -lt 100 ]; do
    sleep 0.1; waited=$((waited + 1))
  done
  if [ -e killed/current ]; then
    step=$(sed -n 's/^step //p' killed/current/train.txt)
    "$exe" --resume killed --steps "$((step > 0 ? step : 1))" > resumed.txt 2>&1 || fail "checkpoint after kill -9 at ${delay}s does not load: $(tail -1 resumed.txt)"
    echo "kill -9 at ${delay}s: checkpoint at step $step loads"
  else
    [ ! -e killed/model ] || fail "DIR/model without DIR/current after kill -9 at ${delay}s"
    echo "kill -9 at ${delay}s: killed before the first checkpoint"
  fi
done

# 3. Ctrl-C: finish the step, save, exit 130. The signal is sent once training has started
#    (the first checkpoint exists), however slow the build (the sanitizers) makes the start.
rm -rf interrupted
"$exe" $small --steps 1000000 --eval-interval 50 --save interrupted > int.txt 2>&1 &
pid=$!
waited=0
while [ ! -e interrupted/current ] && [ "$waited" -lt 600 ]; do sleep 0.1; waited=$((waited + 1)); done
[ -e interrupted/current ] || { kill -9 "$pid"; fail "SIGINT: no checkpoint after 60 s"; }
kill -INT "$pid"
wait "$pid"
code=$?
[ "$code" -eq 130 ] || fail "SIGINT: exit code $code, expected 130: $(tail -1 int.txt)"
step=$(sed -n 's/^step //p' interrupted/current/train.txt)
grep -q "Interrupted at step $step" int.txt || fail "SIGINT: the output does not name the saved step $step: $(tail -1 int.txt)"
echo "SIGINT: saved at step $step, exit 130"

# 4. Contradicting flags and a corrupt checkpoint.
"$exe" --resume stopped --steps 10 > bad.txt 2>&1
[ $? -eq 2 ] || fail "--steps before the checkpoint's step: expected exit 2"
grep -q "error: --steps 10 is before the checkpoint's step 40" bad.txt || fail "--steps before: $(cat bad.txt)"
"$exe" --resume stopped --steps 41 --n-embd 32 > bad.txt 2>&1
[ $? -eq 2 ] || fail "--n-embd with --resume: expected exit 2"
grep -q "error: --n-embd cannot change when resuming" bad.txt || fail "--n-embd with --resume: $(cat bad.txt)"
before=$(ls -l stopped/current/model | md5sum)
truncate -s 50 stopped/current/model/wte.npy
"$exe" --resume stopped --steps 41 > bad.txt 2>&1
[ $? -eq 1 ] || fail "corrupt checkpoint: expected exit 1"
grep -q "wte.npy" bad.txt || fail "corrupt checkpoint: the message does not name wte.npy: $(cat bad.txt)"
[ "$(wc -l < bad.txt)" -eq 1 ] || fail "corrupt checkpoint: more than one line: $(cat bad.txt)"
grep -q "MANIFEST.txt" bad.txt || fail "corrupt checkpoint: the manifest does not catch it: $(cat bad.txt)"
echo "bad resumes: exit 2 for flags, 1 for a corrupt file"

# 5. One owner per run folder.
"$exe" $small --steps 5 --eval-interval 5 --save straight > bad.txt 2>&1
[ $? -eq 2 ] || fail "fresh --save on a run: expected exit 2: $(cat bad.txt)"
grep -q "error: 'straight' already holds a run: continue it with --resume straight, or pass --overwrite to start over" bad.txt || fail "fresh --save on a run: $(cat bad.txt)"
[ "$(sed -n 's/^step //p' straight/current/train.txt)" = 40 ] || fail "a refused --save changed the run"
cp -r straight over
"$exe" $small --steps 5 --eval-interval 5 --save over --overwrite > over.txt 2>&1 || fail "--overwrite: $(tail -1 over.txt)"
[ "$(sed -n 's/^step //p' over/current/train.txt)" = 5 ] || fail "--overwrite did not start over"
[ ! -e over/ckpt-000040 ] || fail "--overwrite left the old run's checkpoint"
cp -r straight fromcur
"$exe" --resume fromcur/current --steps 41 > fromcur.txt 2>&1 || fail "--resume DIR/current: $(tail -1 fromcur.txt)"
[ "$(readlink fromcur/current)" = ckpt-000041 ] || fail "--resume DIR/current did not save to DIR"
[ -z "$(ls -d fromcur/ckpt-*/ckpt-* 2>/dev/null)" ] || fail "--resume DIR/current saved inside a checkpoint"
rm -rf busy
"$exe" $small --steps 1000000 --eval-interval 50 --save busy > busy.txt 2>&1 &
pid=$!
waited=0
while [ ! -e busy/current ] && [ "$waited" -lt 600 ]; do sleep 0.1; waited=$((waited + 1)); done
[ -e busy/current ] || { kill -9 "$pid"; fail "busy: no checkpoint after 60 s"; }
"$exe" --resume busy --steps 1000000 > bad.txt 2>&1
code=$?
"$exe" $small --steps 5 --save busy --overwrite > bad2.txt 2>&1
code2=$?
kill -9 "$pid"
wait "$pid" 2> /dev/null
[ "$code" -eq 1 ] || fail "a second trainer on a busy folder: exit $code, expected 1: $(cat bad.txt)"
grep -q "another trainer (pid $pid) is saving to this folder" bad.txt || fail "second trainer: $(cat bad.txt)"
[ "$(wc -l < bad.txt)" -eq 1 ] || fail "second trainer: more than one line: $(cat bad.txt)"
[ "$code2" -eq 1 ] && grep -q "pid $pid" bad2.txt || fail "--overwrite of a busy folder: $(cat bad2.txt)"
step=$(sed -n 's/^step //p' busy/current/train.txt)
"$exe" --resume busy --steps "$((step + 1))" > resumed.txt 2>&1 || fail "after kill -9 the lock stays: $(tail -1 resumed.txt)"
echo "one owner: a fresh --save and a second trainer refused, --overwrite, --resume DIR/current"

# 6. Resume as configured: a cosine run interrupted, resumed without --steps, ends at its target.
rm -rf cos
"$exe" $small --schedule cosine --steps 600 --eval-interval 300 --save cos > cos.txt 2>&1 &
pid=$!
waited=0
while [ ! -e cos/current ] && [ "$waited" -lt 600 ]; do sleep 0.1; waited=$((waited + 1)); done
kill -INT "$pid"
wait "$pid"
step=$(sed -n 's/^step //p' cos/current/train.txt)
"$exe" --resume cos --steps 900 > bad.txt 2>&1
[ $? -eq 2 ] || fail "--steps that re-shapes a cosine schedule: expected exit 2: $(cat bad.txt)"
grep -q "error: --steps 900 would re-shape the checkpoint's cosine schedule, which decays over 600 steps" bad.txt || fail "re-shaping --steps: $(cat bad.txt)"
"$exe" --resume cos > cos2.txt 2>&1 || fail "resume without --steps: $(tail -1 cos2.txt)"
grep -q "at step $step of 600" cos2.txt || fail "resume without --steps did not keep the target 600: $(grep Resumed cos2.txt)"
! grep -q -- "--steps" cos2.txt || fail "resume without --steps names a --steps: $(grep -- --steps cos2.txt)"
[ "$(sed -n 's/^step //p' cos/current/train.txt)" = 600 ] || fail "resume without --steps did not reach step 600"
echo "resume: without --steps the run's own target ($step -> 600), a re-shaping --steps refused"
echo "all checkpoint checks passed"
