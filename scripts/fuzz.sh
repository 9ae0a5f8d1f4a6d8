#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for a bounded time (default 60 s each), first over
# its committed seeds (tests/fuzz/corpus/<name>/, the regression cases), then exploring.
# Fails on the first finding: the crashing input is left in build/fuzz/findings/<name>/; after
# the fix, add it to the seeds. .ci/run calls this after the test suites.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]
# Needs clang and libclang-rt-14-dev (scripts/install-deps.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

cmake --preset fuzz
cmake --build --preset fuzz

for name in npy case_txt utf8 cli checkpoint tokenizer safetensors; do
  target="build/fuzz/bin/fuzz_${name}"
  work="build/fuzz/corpus/${name}"        # what the run learns (never the committed seeds)
  findings="build/fuzz/findings/${name}"
  mkdir -p "$work" "$findings"
  extra=()
  if [ "$name" = cli ]; then extra+=(-close_fd_mask=3); fi  # its help and errors would flood
  echo "== fuzz_${name}: ${seconds} s"
  # -rss_limit_mb: an input that makes the parser allocate more than 2 GB is a finding too.
  log="build/fuzz/${name}.log"
  status=0
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="${findings}/" "${extra[@]}" \
    "$work" "tests/fuzz/corpus/${name}" > "$log" 2>&1 || status=$?
  # The seeds replayed, the executions, and any finding's report.
  grep -E "^INFO: seed corpus|^Done [0-9]+ runs|ERROR|^SUMMARY|Test unit written" "$log" || true
  if [ "$status" -ne 0 ]; then
    echo "fuzz_${name}: FINDING (exit ${status}); see build/fuzz/${name}.log and ${findings}/" >&2
    exit 1
  fi
done
echo "fuzzing: no finding"
