#!/bin/sh
# tests/cli/ch09_checkpoints.sh EXE WORKDIR: chapter 09's checkpoints, end to end.
#  1. a run stopped at step 20 and resumed to step 40 prints the same losses and ends with
#     bit-identical files as a run of 40 steps without the stop;
#  2. kill -9 at several moments never leaves DIR without a loadable checkpoint;
#  3. Ctrl-C (SIGINT) finishes the step, saves and exits 130;
#  4. flags that contradict the checkpoint, and a corrupt checkpoint, exit with one line.
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
echo "bad resumes: exit 2 for flags, 1 for a corrupt file"
echo "all checkpoint checks passed"
