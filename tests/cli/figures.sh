#!/bin/sh
# tests/cli/figures.sh EXE07 EXE08 EXE09 WORKDIR: the figures the pages of chapters 07-09 show
# say what they are. Each chapter's --svg figures are written by a short run, and every one must
# carry its title, both axis names, and the dashed reference lines the page refers to: chapter 07's
# attention maps (key / query) and model diagram, chapter 08's depth figure (the norm the gradient
# entered with, and the 1e3 / 1e-3 levels of its verdicts) and chapter 09's loss curve (the uniform
# guess log V and the bigram table) and attention maps.
set -u
exe07=$1
exe08=$2
exe09=$3
work=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
cd "$work" || exit 1

# has FILE TEXT...: the file contains each TEXT, literally.
has() {
  file=$1
  shift
  [ -s "$file" ] || fail "$file was not written"
  for text in "$@"; do
    grep -qF -- "$text" "$file" || fail "$file lacks '$text'"
  done
}
# dashed FILE N: at least N dashed elements: each reference level is a dashed line plus its dashed
# legend sample.
dashed() {
  n=$(grep -c 'stroke-dasharray' "$1")
  [ "$n" -ge "$2" ] || fail "$1: $n dashed elements, expected at least $2 (the reference lines)"
}

"$exe07" --tokens 5 --svg s07 > out07.txt 2>&1 || fail "07_causal_lm --svg: $(tail -1 out07.txt)"
has s07/causal_lm.svg "<title>The causal language model, L = 2</title>"
for h in 0 1 2 3; do
  has s07/attention_l1_h$h.svg "<title>layer 1, head $h: attention over the prompt (T = " \
    "key: the character attended to" "query: the character attending"
done

"$exe08" --section 4 --max-depth 4 --svg s08 > out08.txt 2>&1 || fail "08_backprop --svg: $(tail -1 out08.txt)"
has s08/gradient_depth.svg "<title>|dL/dx| at the bottom of a stack of blocks (T 16, C 32, H 4, " \
  "seed 1337)</title>" ">blocks in the stack</text>" ">|dL/dx| at the input</text>" \
  ">1: the norm it entered with</text>" ">1e3: above, it explodes</text>" \
  ">1e-3: below, it vanishes</text>" ">residual + LayerNorm</text>" ">neither</text>"
dashed s08/gradient_depth.svg 6

"$exe09" --steps 20 --eval-interval 10 --eval-iters 2 --n-layers 1 --tokens 0 --svg s09 \
  > out09.txt 2>&1 || fail "09_training --svg: $(tail -1 out09.txt)"
has s09/loss_curve.svg "<title>Chapter 09: the loss while training (seed 1337, " \
  ">step</text>" ">cross-entropy (nats)</text>" ">uniform guess, log V = 4.08</text>" \
  ">bigram table (chapter 01), val " ">val (estimate)</text>" ">train (estimate)</text>"
dashed s09/loss_curve.svg 4
for h in 0 1 2 3; do
  has s09/attention_l0_h$h.svg "<title>layer 0 head $h: the trained model&apos;s attention over " \
    "key: the character attended to" "query: the character attending"
done
echo "figures: titles, axis names and reference lines present"
