#!/usr/bin/env bash
# tests/layers: scripts/check-layers.sh passes on the repository, and fails, naming the file, on
# a copy of it where one include or one DEPENDS runs up the layers.
set -euo pipefail
root="$1"
script="$root/scripts/check-layers.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "layers test: $*" >&2
  exit 1
}

# 1. The repository as it is.
bash "$script" "$root" || fail "the repository itself has an include that runs up"

# A fresh copy of what the script reads.
copy() {
  rm -rf "$work/repo"
  mkdir -p "$work/repo/scripts"
  cp -r "$root/common" "$work/repo/common"
}

# expect_caught WHAT FILE-IN-MESSAGE: the check on the copy exits 1 and names the file.
expect_caught() {
  local rc=0
  bash "$script" "$work/repo" > "$work/out" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || { cat "$work/out" >&2; fail "$1: exit $rc, expected 1"; }
  grep -q "$2" "$work/out" || { cat "$work/out" >&2; fail "$1: the message does not name $2"; }
}

# 2. An op that includes a fast kernel's header (ops sits below fast).
copy
sed -i '0,/#include "attn\/core\/xt.hpp"/s//#include "attn\/core\/xt.hpp"\n#include "attn\/fast\/gemm.hpp"/' \
  "$work/repo/common/include/attn/ops/linear.hpp"
grep -q 'attn/fast/gemm.hpp' "$work/repo/common/include/attn/ops/linear.hpp" || fail "injection 2 missed"
expect_caught "ops including fast" "common/include/attn/ops/linear.hpp"

# 3. A model source that includes the terminal (the flags sit on top).
copy
printf '#include "attn/term/cli.hpp"\n' >> "$work/repo/common/src/model/lm_files.cpp"
expect_caught "model including term" "common/src/model/lm_files.cpp"

# 4. A private header of a layer above, by a relative path.
copy
printf '#include "../model/model_internal.hpp"\n' >> "$work/repo/common/src/fast/gemm.cpp"
expect_caught "fast including ../model" "common/src/fast/gemm.cpp"

# 5. A layer that DEPENDS on one above it in common/CMakeLists.txt.
copy
sed -i 's/^attn_layer(ops SOURCES /attn_layer(ops DEPENDS attn::fast SOURCES /' "$work/repo/common/CMakeLists.txt"
grep -q 'attn_layer(ops DEPENDS attn::fast' "$work/repo/common/CMakeLists.txt" || fail "injection 5 missed"
expect_caught "ops depending on fast" "attn_layer(ops"

echo "layers test: the repository passes; 4 injected upward includes or dependencies are caught"
