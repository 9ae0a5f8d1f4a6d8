#!/usr/bin/env bash
# tests/layers: scripts/check-mains.sh passes on the repository, and fails, naming the file, on a
# copy where one chapter's main.cpp prints eleven times.
set -euo pipefail
root="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "mains test: $*" >&2
  exit 1
}

bash "$root/scripts/check-mains.sh" "$root" || fail "a main.cpp of the repository is over the budget"

mkdir -p "$work/repo/chapters"
cp -r "$root/chapters/01_bigram" "$work/repo/chapters/"
for i in $(seq 1 11); do
  printf '  fmt::print("line %s\\n");\n' "$i" >> "$work/repo/chapters/01_bigram/main.cpp"
done
rc=0
bash "$root/scripts/check-mains.sh" "$work/repo" > "$work/out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$work/out" >&2; fail "eleven more prints: exit $rc, expected 1"; }
grep -q "chapters/01_bigram/main.cpp: 14 print calls, at most 10" "$work/out" ||
  { cat "$work/out" >&2; fail "the message does not name the file and its count"; }
echo "mains test: every main.cpp within the budget; one pushed over it is caught"
