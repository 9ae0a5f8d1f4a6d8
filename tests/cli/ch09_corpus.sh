#!/bin/sh
# tests/cli/ch09_corpus.sh EXE WORKDIR: a checkpoint records its corpus (issue 17).
#  1. --resume DIR alone goes on with the recorded corpus (not the shipped one, and not
#     $ATTN_DATA);
#  2. --data with another text is refused (exit 2, one line naming both); a copy of the same
#     bytes is accepted;
#  3. the recorded file changed or gone: exit 1, one line naming it, the run untouched;
#  4. a checkpoint saved before the record existed resumes with --data (and says so), is refused
#     without it when the default corpus is another, and its next save records the corpus.
set -u
exe=$1
work=$2
small="--n-embd 16 --n-heads 2 --n-layers 1 --block-size 8 --batch-size 4 --eval-iters 2 --tokens 0"
fail() { echo "FAIL: $*"; exit 1; }
one_line() { [ "$(wc -l < "$1")" -eq 1 ] || fail "$2: not one line: $(cat "$1")"; }
step_of() { sed -n 's/^step //p' "$1/current/train.txt"; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
cd "$work" || exit 1
# A corpus unlike the shipped sonnets (another vocabulary).
perl -e 'print "to be or not to be, that is the question.\n" x 40' > corpus.txt

# 1. --resume DIR alone.
"$exe" $small --steps 4 --eval-interval 2 --data corpus.txt --save run > first.txt 2>&1 || fail "first run: $(tail -1 first.txt)"
grep -q "^corpus_path $work/corpus.txt\$" run/current/train.txt || fail "train.txt does not record the corpus's absolute path: $(grep corpus_ run/current/train.txt)"
grep -q "^corpus_bytes 1680\$" run/current/train.txt || fail "train.txt does not record the corpus's size"
ATTN_DATA=/nonexistent/corpus.txt "$exe" --resume run --steps 6 > second.txt 2>&1 || fail "--resume alone: $(tail -1 second.txt)"
grep -q "$work/corpus.txt (recorded in the checkpoint): 1680 characters" second.txt || fail "--resume alone did not read the recorded corpus: $(grep -m1 characters second.txt)"
grep -q "the file is unchanged" second.txt || fail "--resume alone does not say the corpus is unchanged"
[ "$(step_of run)" = 6 ] || fail "--resume alone did not train to step 6"
echo "--resume DIR alone: the recorded corpus, \$ATTN_DATA ignored"

# 2. Another corpus is refused by name; the same bytes elsewhere are fine.
perl -e 'print "to be or not to be, that is the question!\n" x 40' > other.txt  # same size
"$exe" --resume run --steps 8 --data other.txt > bad.txt 2>&1
code=$?
[ "$code" -eq 2 ] || fail "--data with another corpus: exit $code, expected 2: $(cat bad.txt)"
one_line bad.txt "--data with another corpus"
grep -q "error: --data 'other.txt' is not the corpus checkpoint 'run' was trained on ('$work/corpus.txt', 1680 bytes, fnv1a64 [0-9a-f]*; this file: " bad.txt || fail "--data with another corpus: $(cat bad.txt)"
[ "$(step_of run)" = 6 ] || fail "a refused --data changed the run"
cp corpus.txt copy.txt
"$exe" --resume run --steps 8 --data copy.txt > copy_out.txt 2>&1 || fail "--data with a copy of the corpus: $(tail -1 copy_out.txt)"
grep -q "copy.txt (--data) holds the very text the checkpoint recorded" copy_out.txt || fail "--data copy: $(grep -m1 Resumed -A1 copy_out.txt)"
grep -q "^corpus_path $work/copy.txt\$" run/current/train.txt || fail "the next save does not record the file read"
echo "--data: another corpus refused (exit 2), a copy of the same bytes accepted"

# 3. The recorded file changed, then gone.
echo "one more line" >> copy.txt
"$exe" --resume run --steps 10 > bad.txt 2>&1
code=$?
[ "$code" -eq 1 ] || fail "changed corpus: exit $code, expected 1: $(cat bad.txt)"
one_line bad.txt "changed corpus"
grep -q "error: corpus '$work/copy.txt' changed since checkpoint 'run' was saved (then 1680 bytes, fnv1a64 [0-9a-f]*, now 1694 bytes" bad.txt || fail "changed corpus: $(cat bad.txt)"
rm copy.txt
"$exe" --resume run --steps 10 > bad.txt 2>&1
code=$?
[ "$code" -eq 1 ] || fail "missing corpus: exit $code, expected 1: $(cat bad.txt)"
one_line bad.txt "missing corpus"
grep -q "error: checkpoint 'run' was trained on a corpus that cannot be read now: cannot read corpus '$work/copy.txt'" bad.txt || fail "missing corpus: $(cat bad.txt)"
[ "$(step_of run)" = 8 ] || fail "a refused resume changed the run"
echo "the recorded corpus changed or gone: exit 1, named"

# 4. A checkpoint from before the record: train.txt without the corpus keys, its manifest line
#    rewritten (as the older version wrote it).
cp -r run legacy
ckpt=legacy/$(readlink legacy/current)
grep -v '^corpus_' "$ckpt/train.txt" > train.tmp && mv train.tmp "$ckpt/train.txt"
perl -MMath::BigInt -e '
  my $dir = shift;
  open(my $f, "<:raw", "$dir/train.txt") or die; my $data = do { local $/; <$f> }; close $f;
  my $h = Math::BigInt->from_hex("cbf29ce484222325");
  my $p = Math::BigInt->new("1099511628211");
  my $m = Math::BigInt->new(2)->bpow(64);
  for my $c (unpack("C*", $data)) { $h->bxor($c); $h->bmul($p); $h->bmod($m); }
  my $hex = substr($h->as_hex, 2); $hex = ("0" x (16 - length $hex)) . $hex;
  open(my $in, "<", "$dir/MANIFEST.txt") or die; my @lines = <$in>; close $in;
  for (@lines) { $_ = "train.txt " . length($data) . " $hex\n" if /^train\.txt /; }
  open(my $out, ">", "$dir/MANIFEST.txt") or die; print $out @lines; close $out;
' "$ckpt" || fail "cannot rewrite the legacy manifest"
! grep -q corpus_ "$ckpt/train.txt" || fail "the legacy checkpoint still has a record"
"$exe" --resume legacy --steps 10 > bad.txt 2>&1
code=$?
[ "$code" -eq 1 ] || fail "legacy checkpoint on the shipped corpus: exit $code, expected 1: $(cat bad.txt)"
one_line bad.txt "legacy checkpoint on the shipped corpus"
grep -q "error: checkpoint 'legacy' was trained on another corpus (.*): use --data with the corpus it was made with" bad.txt || fail "legacy without --data: $(cat bad.txt)"
"$exe" --resume legacy --steps 10 --data corpus.txt > legacy.txt 2>&1 || fail "legacy checkpoint with --data: $(tail -1 legacy.txt)"
grep -q "This checkpoint does not record its corpus" legacy.txt || fail "legacy with --data does not say it has no record"
[ "$(step_of legacy)" = 10 ] || fail "legacy with --data did not train to step 10"
grep -q "^corpus_path $work/corpus.txt\$" legacy/current/train.txt || fail "the legacy run's next save does not record its corpus"
echo "a checkpoint without the record: resumes with --data, says so, records it from then on"
echo "all corpus-record checks passed"
