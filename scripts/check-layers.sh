#!/usr/bin/env bash
# Checks that the library's layers only look down (common/README.md, "The layers"):
#
#   core < io < ops < fast < model < train < term
#
# A file of common/include/attn/<layer>/ or common/src/<layer>/ may include "attn/<other>/..."
# only when <other> is its own layer or one below it; a quoted include without "attn/" names a
# file of its own folder, or a private header of a layer below ("../core/parallel.hpp"). In common/CMakeLists.txt every attn_layer() compiles sources of
# its own folder and DEPENDS on layers below it only.
#
#   scripts/check-layers.sh [ROOT]     (ROOT: the repository, by default the one holding this script)
#
# Prints one line per upward include ("common/src/ops/linear.cpp:12: ops includes attn/fast/gemm.hpp,
# a layer above it") and exits 1 when there is any; 0 and one summary line when there is none.
set -euo pipefail

root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
layers=(core io ops fast model train term)

rank() {
  local i
  for i in "${!layers[@]}"; do
    if [ "${layers[$i]}" = "$1" ]; then
      echo "$i"
      return
    fi
  done
  echo -1
}

if [ ! -d "$root/common/include/attn" ] || [ ! -f "$root/common/CMakeLists.txt" ]; then
  echo "check-layers: '$root' has no common/include/attn or common/CMakeLists.txt" >&2
  exit 2
fi

bad=0
files=0
for layer in "${layers[@]}"; do
  own=$(rank "$layer")
  for dir in "$root/common/include/attn/$layer" "$root/common/src/$layer"; do
    [ -d "$dir" ] || continue
    while IFS= read -r -d '' file; do
      files=$((files + 1))
      shown="${file#"$root"/}"
      while IFS=: read -r line text; do
        target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/' <<<"$text")
        if [[ "$target" == attn/* ]]; then
          other="${target#attn/}"
          other="${other%%/*}"
          if [[ "$target" != attn/*/* ]]; then
            echo "$shown:$line: $layer includes $target, a path outside the layers (attn/<layer>/...)"
            bad=$((bad + 1))
            continue
          fi
          theirs=$(rank "$other")
          if [ "$theirs" -lt 0 ]; then
            echo "$shown:$line: $layer includes $target, and '$other' is not a layer (${layers[*]})"
            bad=$((bad + 1))
          elif [ "$theirs" -gt "$own" ]; then
            echo "$shown:$line: $layer includes $target, a layer above it (${layers[*]})"
            bad=$((bad + 1))
          fi
        elif [[ "$target" =~ ^\.\./([a-z_]+)/[^/]+$ ]]; then
          # A private header of another layer's folder of src/ ("../core/parallel.hpp").
          other="${BASH_REMATCH[1]}"
          theirs=$(rank "$other")
          if [ ! -f "$(dirname "$file")/$target" ] || [ "$theirs" -lt 0 ]; then
            echo "$shown:$line: $layer includes \"$target\", not a file of a layer's folder"
            bad=$((bad + 1))
          elif [ "$theirs" -gt "$own" ]; then
            echo "$shown:$line: $layer includes \"$target\", a layer above it (${layers[*]})"
            bad=$((bad + 1))
          fi
        elif [[ "$target" == */* ]] || [ ! -f "$(dirname "$file")/$target" ]; then
          echo "$shown:$line: $layer includes \"$target\", not a file of its own folder"
          bad=$((bad + 1))
        fi
      done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
    done < <(find "$dir" -type f \( -name '*.hpp' -o -name '*.cpp' \) -print0 | sort -z)
  done
done

# common/CMakeLists.txt: attn_layer(<name> SOURCES ... DEPENDS ...) calls, joined into one line
# each (they may span lines).
while IFS= read -r call; do
  name=$(sed -E 's/^attn_layer\(([a-z_]+).*/\1/' <<<"$call")
  own=$(rank "$name")
  if [ "$own" -lt 0 ]; then
    echo "common/CMakeLists.txt: attn_layer($name ...) is not a layer (${layers[*]})"
    bad=$((bad + 1))
    continue
  fi
  if grep -q '\.\./' <<<"$call"; then
    echo "common/CMakeLists.txt: attn_layer($name ...) compiles a source of another folder"
    bad=$((bad + 1))
  fi
  for dep in $(grep -oE 'attn::[a-z_]+' <<<"$call" || true); do
    other="${dep#attn::}"
    theirs=$(rank "$other")
    if [ "$theirs" -lt 0 ] || [ "$theirs" -ge "$own" ]; then
      echo "common/CMakeLists.txt: attn_layer($name ...) DEPENDS on $dep, not a layer below it"
      bad=$((bad + 1))
    fi
  done
done < <(awk '/^attn_layer\(/ { call = ""; open = 1 }
              open { sub(/#.*/, ""); call = call " " $0 }
              open && /\)/ { print substr(call, 2); open = 0 }' "$root/common/CMakeLists.txt")

if [ "$bad" -gt 0 ]; then
  echo "check-layers: $bad include(s) or dependencies run up the layers (${layers[*]})"
  exit 1
fi
echo "check-layers: $files files, every include looks down the layers (${layers[*]})"
