#!/usr/bin/env bash
# Checks CONTRIBUTING.md's main.cpp budget: a chapter's main.cpp holds its flags and the order of
# its walkthrough, and at most 10 print calls (fmt::print, attn::print, section, claim, ...); the
# narration lives in the chapter's show.cpp.
#
#   scripts/check-mains.sh [ROOT]     (ROOT: the repository, by default the one holding this script)
#
# Prints one line per main.cpp over the budget ("chapters/12_fast_attention/main.cpp: 31 print
# calls, at most 10: move the narration into show.cpp") and exits 1 when there is any; else 0
# and one summary line.
set -euo pipefail

root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
budget=10
if ! compgen -G "$root/chapters/*/main.cpp" > /dev/null; then
  echo "check-mains: '$root' has no chapters/*/main.cpp" >&2
  exit 2
fi
over=0
mains=0
for main in "$root"/chapters/*/main.cpp; do
  mains=$((mains + 1))
  # A call of a printing function at the start of an expression (not a member, not a longer name).
  calls=$(grep -cE '(^|[^A-Za-z0-9_:.>])(fmt::print|attn::print|print|attn::section|section|attn::underlined_section|underlined_section|attn::claim|claim)\(' "$main" || true)
  if [ "$calls" -gt "$budget" ]; then
    echo "${main#"$root"/}: $calls print calls, at most $budget: move the narration into show.cpp"
    over=$((over + 1))
  fi
done
if [ "$over" -gt 0 ]; then
  echo "check-mains: $over main.cpp over the budget of $budget print calls (CONTRIBUTING.md)"
  exit 1
fi
echo "check-mains: $mains chapters, every main.cpp within $budget print calls"
