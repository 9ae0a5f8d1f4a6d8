#!/bin/sh
# tests/cli/ch09_signals.sh EXE WORKDIR: chapter 09 and the signals that stop a run (issue 18).
#  1. SIGTERM does what Ctrl-C does: finish the step, save, exit 143;
#  2. SIGINT during an estimate cuts it short: the last complete step is saved (exit 130), and a
#     resumed run makes that estimate first;
#  3. a second signal exits at once, and the last complete checkpoint stays loadable;
#  4. a checkpoint above `ulimit -f` is a write error (exit 1, one line), not a silent SIGXFSZ.
# Every signal is sent once the run has saved its first checkpoint (DIR/current), so a slow start
# (a loaded machine, the sanitizers) only makes the test wait longer.
set -u
exe=$1
work=$2
small="--n-embd 16 --n-heads 2 --n-layers 1 --block-size 8 --batch-size 4 --eval-iters 2 --tokens 0"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
cd "$work" || exit 1

# Waits (at most 120 s) for DIR/current, else kills PID and fails.
wait_for_checkpoint() {
  waited=0
  while [ ! -e "$1/current" ] && [ "$waited" -lt 1200 ]; do sleep 0.1; waited=$((waited + 1)); done
  [ -e "$1/current" ] || { kill -9 "$2"; fail "$3: no checkpoint after 120 s"; }
}
saved_step() { sed -n 's/^step //p' "$1/current/train.txt"; }

# 1. SIGTERM.
"$exe" $small --steps 1000000 --eval-interval 50 --save term > term.txt 2>&1 &
pid=$!
wait_for_checkpoint term "$pid" SIGTERM
kill -TERM "$pid"
wait "$pid"
code=$?
[ "$code" -eq 143 ] || fail "SIGTERM: exit code $code, expected 143: $(tail -1 term.txt)"
step=$(saved_step term)
grep -q "Interrupted at step $step: saved" term.txt || fail "SIGTERM: the output does not name the saved step $step: $(tail -1 term.txt)"
echo "SIGTERM: saved at step $step, exit 143"

# 2. SIGINT during an estimate. An estimate every step, of 500 batches per split (seconds): once
#    step 0's checkpoint is there, the signal lands in step 1 or in its estimate, and the run
#    stops at the estimate's next batch instead of waiting it out.
estimating="--n-embd 32 --n-heads 2 --n-layers 1 --block-size 32 --batch-size 32 --eval-iters 500 --tokens 0"
"$exe" $estimating --steps 2 --eval-interval 1 --save cut > cut.txt 2>&1 &
pid=$!
wait_for_checkpoint cut "$pid" "SIGINT during an estimate"
kill -INT "$pid"
wait "$pid"
code=$?
[ "$code" -eq 130 ] || fail "SIGINT during an estimate: exit code $code, expected 130: $(tail -1 cut.txt)"
grep -q "^step     1: the estimate was cut short" cut.txt || fail "SIGINT during an estimate: no estimate was cut short: $(grep '^step' cut.txt | tail -2)"
step=$(saved_step cut)
[ "$step" = 1 ] || fail "SIGINT during an estimate: saved step $step, expected 1"
grep -q "Interrupted at step 1: saved" cut.txt || fail "SIGINT during an estimate: $(tail -1 cut.txt)"
"$exe" --resume cut --steps 2 > cut_resumed.txt 2>&1 || fail "resume after a cut estimate: $(tail -1 cut_resumed.txt)"
grep -q "^step     1: train loss" cut_resumed.txt || fail "the resumed run did not make step 1's estimate"
echo "SIGINT during an estimate: cut short, step 1 saved, exit 130; the resumed run estimates step 1"

# 3. Two signals: the process is stopped while both arrive, so they are delivered together on
#    SIGCONT: the handler that runs second exits at once, with 128 + its signal's number.
"$exe" $small --steps 1000000 --eval-interval 3 --save twice > twice.txt 2>&1 &
pid=$!
wait_for_checkpoint twice "$pid" "two signals"
kill -STOP "$pid"
kill -INT "$pid"
kill -TERM "$pid"
kill -CONT "$pid"
wait "$pid"
code=$?
[ "$code" -eq 130 ] || [ "$code" -eq 143 ] || fail "two signals: exit code $code, expected 130 or 143: $(tail -1 twice.txt)"
! grep -q "Interrupted at step" twice.txt || fail "two signals: the run went on to save after the second"
step=$(saved_step twice)
"$exe" --resume twice --steps "$((step > 0 ? step : 1))" > twice_resumed.txt 2>&1 || fail "two signals: the checkpoint at step $step does not load: $(tail -1 twice_resumed.txt)"
echo "two signals: exit $code at once, the checkpoint at step $step loads"

# 4. A file size limit (ulimit -f, in blocks of 512 or 1024 bytes): the first .npy of the
#    checkpoint is larger, so its write fails with EFBIG.
(ulimit -f 1 && exec "$exe" $small --steps 3 --save limited > /dev/null 2> limited.txt)
code=$?
[ "$code" -eq 1 ] || fail "ulimit -f: exit code $code, expected 1: $(cat limited.txt)"
[ "$(wc -l < limited.txt)" -eq 1 ] || fail "ulimit -f: expected one line on stderr: $(cat limited.txt)"
grep -q "^09_training: error: .*\(write error\|File too large\)" limited.txt || fail "ulimit -f: $(cat limited.txt)"
echo "ulimit -f: $(cat limited.txt)"
