#!/usr/bin/env bash
# Runs written before ModelSpec (train.txt format 1, a model.txt without the sizes, `ffn_hidden 0`
# for 4 C) still load, generate the same text and resume to the same numbers. The two runs in
# old_runs/ (chapter 07's model, and one with every part of chapter 11 and dropout) were made by
# the code before the change, with the outputs beside them:
#   09_training --steps 4 --n-embd 16 --n-layers 1 --block-size 16 --batch-size 4
#               --eval-interval 2 --eval-iters 2 --tokens 30 [--positions rope --normalization
#               rmsnorm --ffn swiglu --n-kv-heads 2 --window 8 --no-bias --dropout 0.1]
#   10_generation --weights RUN --tokens 40 --seed 7        -> RUN.generation.txt
#   09_training --resume RUN --steps 6 --data data/sonnets.txt, sections 3-4 -> RUN.resume.txt
# Usage: old_runs.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
status=0
for run in default-run parts-run; do
  cp -a "$src/tests/cli/old_runs/$run" "$run"
  if ! "$bin/10_generation" --weights "$run" --tokens 40 --seed 7 > gen.txt 2>&1 ||
     ! diff -u "$src/tests/cli/old_runs/$run.generation.txt" gen.txt; then
    echo "FAIL: 10_generation --weights $run (written before ModelSpec) changed"
    status=1
  fi
  if ! "$bin/09_training" --resume "$run" --steps 6 --data "$src/data/sonnets.txt" > resume.txt 2>&1; then
    cat resume.txt
    echo "FAIL: 09_training --resume $run (a format-1 checkpoint) refused"
    status=1
    continue
  fi
  sed -n '/^== 3. Training ==/,/^== 5/p' resume.txt | grep -v '^== 5' | sed "s|$run|RUN|g" > got.txt
  if ! diff -u "$src/tests/cli/old_runs/$run.resume.txt" got.txt; then
    echo "FAIL: 09_training --resume $run no longer trains to the same numbers"
    status=1
  fi
  # The resumed run saved a format-2 checkpoint, whose model.txt says everything.
  grep -q '^format 2$' "$run/current/train.txt" || { echo "FAIL: $run: no format 2"; status=1; }
  grep -q '^n_embd 16$' "$run/current/model/model.txt" || { echo "FAIL: $run: no n_embd"; status=1; }
done
[ "$status" = 0 ] && echo "old runs: same text, same resumed training"
exit "$status"
