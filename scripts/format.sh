#!/usr/bin/env bash
# The code's one style (.clang-format: Google's, 100 columns), applied or checked.
#   scripts/format.sh          reformat every tracked C++ file in place
#   scripts/format.sh --check  change nothing; list the files that differ and fail (.ci/run)
# The catalogue of wrong exercise solutions (tests/exercises/wrong/) is left as it was written:
# each file is a learner's mistake, kept verbatim.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' | grep -v '^tests/exercises/wrong/')
if [ "${1:-}" = "--check" ]; then
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  if ! clang-format --dry-run --Werror "${files[@]}" 2> "$log"; then
    grep -o '^[^:]*:[0-9]*:[0-9]*: error' "$log" | cut -d: -f1 | sort -u |
      sed 's/^/not formatted: /'
    echo "format check failed: run scripts/format.sh to apply .clang-format" >&2
    exit 1
  fi
  echo "format check: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
