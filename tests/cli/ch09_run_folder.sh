#!/bin/sh
# tests/cli/ch09_run_folder.sh EXE09 EXE07 WORKDIR: a run folder owns what it made and nothing
# else (issue 29, item 1).
#  1. --save into a run's checkpoint, `current`, `model` or any other folder inside a run is
#     refused by name (exit 2, one line), with --resume and without, and the run still resumes;
#     --resume RUN/model takes no lock inside the checkpoint; 07 --export is refused there too;
#  2. saves delete only the checkpoints the run wrote (RUN/checkpoints.txt lists them): a user's
#     ckpt-000200.keep file and ckpt-notes/ folder survive saves and --overwrite;
#  3. a folder in the way of a checkpoint's name that the run did not write is never deleted:
#     the save fails by name (exit 1);
#  4. a run saved before the list existed resumes, deletes only the checkpoint `current` named,
#     and gets its list.
set -u
exe=$1
exe07=$2
work=$3
small="--n-embd 16 --n-heads 2 --n-layers 1 --block-size 8 --batch-size 4 --eval-iters 2 --tokens 0"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
cd "$work" || exit 1

# Runs the command (stdout dropped, stderr to err.txt); passes when it exits with $1 and stderr is
# one line matching the grep pattern $2.
refused() {
  code=$1
  pattern=$2
  shift 2
  "$@" > /dev/null 2> err.txt
  got=$?
  [ "$got" -eq "$code" ] || fail "$*: exit $got, expected $code: $(cat err.txt)"
  [ "$(wc -l < err.txt)" -eq 1 ] || fail "$*: expected one line on stderr: $(cat err.txt)"
  grep -q -- "$pattern" err.txt || fail "$*: the message does not match '$pattern': $(cat err.txt)"
}
user_files_there() {
  [ -f run/ckpt-000200.keep ] && [ "$(cat run/ckpt-000200.keep)" = "mine" ] || fail "$1: a save deleted the user's run/ckpt-000200.keep"
  [ -f run/ckpt-notes/todo.txt ] || fail "$1: a save deleted the user's run/ckpt-notes/"
}

"$exe" $small --steps 4 --eval-interval 2 --save run > out.txt 2>&1 || fail "first run: $(tail -1 out.txt)"
echo mine > run/ckpt-000200.keep
mkdir run/ckpt-notes && echo "read the paper" > run/ckpt-notes/todo.txt
ckpt=$(readlink run/current)

# 1. Saving inside the run, by every name it has.
for inside in run/current run/model "run/$ckpt" run/current/model run/ckpt-notes run/new; do
  refused 2 "09_training: error: --save '$inside' is inside the run folder 'run'" \
    "$exe" --resume run --save "$inside" --steps 6
  refused 2 "09_training: error: --save '$inside' is inside the run folder 'run'" \
    "$exe" $small --steps 2 --save "$inside"
done
[ ! -e run/current/lock ] && [ ! -e run/current/model/lock ] || fail "a refused --save left a lock inside the checkpoint"
[ ! -e run/new ] || fail "a refused --save made run/new"
refused 1 "checkpoint 'run/model': no checkpoint here" "$exe" --resume run/model --steps 6
[ ! -e run/current/model/lock ] || fail "--resume run/model locked the model folder"
refused 2 "07_causal_lm: error: --export 'run/model' is inside the run folder 'run'" \
  "$exe07" --export run/model --tokens 1
# A checkpoint copied out of its run is still a saved folder (its MANIFEST.txt would break).
cp -r "run/$ckpt" loose
refused 2 "09_training: error: --save 'loose' is a saved checkpoint or model folder" \
  "$exe" $small --steps 2 --save loose
"$exe" --resume run --steps 6 > out.txt 2>&1 || fail "the run does not resume after the refusals: $(tail -1 out.txt)"
[ "$(readlink run/current)" = ckpt-000006 ] || fail "the resumed run did not save ckpt-000006"
echo "inside a run: every --save refused by name, the run resumes"

# 2. Saves delete only what the run wrote.
user_files_there "resume"
grep -qx ckpt-000006 run/checkpoints.txt || fail "run/checkpoints.txt does not list ckpt-000006: $(cat run/checkpoints.txt)"
[ ! -e "run/$ckpt" ] || fail "the run's older checkpoint $ckpt is still there"
"$exe" $small --steps 2 --eval-interval 1 --save run --overwrite > out.txt 2>&1 || fail "--overwrite: $(tail -1 out.txt)"
user_files_there "--overwrite"
[ "$(readlink run/current)" = ckpt-000002 ] && [ ! -e run/ckpt-000006 ] || fail "--overwrite did not start over"
echo "saves and --overwrite delete only the run's own checkpoints"

# 3. A folder the run did not write, where its next checkpoint goes: refused, kept.
mkdir run/ckpt-000003 && echo "not yours" > run/ckpt-000003/keep.txt
refused 1 "checkpoint 'run/ckpt-000003': not a checkpoint of this run" "$exe" --resume run --steps 4
[ -f run/ckpt-000003/keep.txt ] || fail "the save deleted a folder the run did not write"
[ "$(readlink run/current)" = ckpt-000002 ] || fail "a refused save switched current"
rm -rf run/ckpt-000003
echo "a folder in the way of the next checkpoint: refused by name, kept"

# 4. A run saved before the list: only `current`'s checkpoint is its own.
rm run/checkpoints.txt
"$exe" --resume run --steps 3 > out.txt 2>&1 || fail "resume without a list: $(tail -1 out.txt)"
[ ! -e run/ckpt-000002 ] || fail "without a list, the checkpoint current named was not replaced"
user_files_there "a run without a list"
[ "$(cat run/checkpoints.txt | grep -v '^#')" = ckpt-000003 ] || fail "the list after a save: $(cat run/checkpoints.txt)"
echo "a run without a list: its current checkpoint replaced, nothing else touched"
echo "all run folder checks passed"
