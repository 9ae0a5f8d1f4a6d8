#!/bin/sh
# tests/cli/ch13_train.sh BIN SOURCE_DIR WORK_DIR: `13_tokens --train data/sonnets.txt
# --vocab-size 1024 --save DIR` writes exactly the committed tests/tokens/sonnets-1024 (training
# is deterministic, on every machine), and the tokenizer it wrote encodes and decodes.
set -u
bin=$1 src=$2 work=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
env -u ATTN_DATA "$bin" --train "$src/data/sonnets.txt" --vocab-size 1024 --save "$work/tok" \
  > "$work/out.txt" 2>&1 || fail "--train exited with $?: $(cat "$work/out.txt")"
grep -q "1024 tokens, 768 merges" "$work/out.txt" || fail "unexpected summary: $(cat "$work/out.txt")"
for f in vocab.json merges.txt; do
  cmp -s "$work/tok/$f" "$src/tests/tokens/sonnets-1024/$f" ||
    fail "$f differs from tests/tokens/sonnets-1024/$f"
done
ids=$("$bin" --tokenizer "$work/tok" --encode "From fairest creatures we desire increase") ||
  fail "--encode failed"
text=$("$bin" --tokenizer "$work/tok" --decode "$ids") || fail "--decode failed"
[ "$text" = "From fairest creatures we desire increase" ] || fail "round trip gave '$text'"
echo "ok: --train wrote the committed files; '$ids' decodes back"
