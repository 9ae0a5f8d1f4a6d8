#!/usr/bin/env bash
# scripts/get-data.sh: fetch the full Tiny Shakespeare corpus (1,115,394 bytes) used by the
# lecture, into data/tinyshakespeare.txt, and check it byte for byte (size and sha256).
# The chapters run on the shipped data/sonnets.txt without it; see data/README.md.
#
#   scripts/get-data.sh              download with curl (or wget)
#   scripts/get-data.sh --from PATH  copy a file you already have (offline machines)
set -euo pipefail

readonly URL="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
readonly EXPECTED_SHA256="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
readonly EXPECTED_SIZE=1115394

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly target="$repo_root/data/tinyshakespeare.txt"
readonly relative_target="data/tinyshakespeare.txt"

usage() {
  sed -n '2,8s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

die() {
  echo "get-data.sh: error: $*" >&2
  exit 1
}

from=""
kind="downloaded"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --from)
      [[ $# -ge 2 ]] || { echo "get-data.sh: error: --from needs a path" >&2; exit 2; }
      from="$2"
      shift 2
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      echo "get-data.sh: error: unknown argument '$1' (try --help)" >&2
      exit 2
      ;;
  esac
done

# Write to a temporary file next to the target and move it into place only once it is verified,
# so an interrupted or corrupt download never leaves a file that looks valid.
mkdir -p "$(dirname "$target")"
partial="$(mktemp "$target.partial.XXXXXX")"
trap 'rm -f "$partial"' EXIT

if [[ -n "$from" ]]; then
  [[ -f "$from" ]] || die "cannot copy '$from': no such file"
  echo "Copying $from"
  kind="copied"
  cp -- "$from" "$partial"
elif command -v curl >/dev/null 2>&1; then
  echo "Downloading $URL"
  curl --fail --location --silent --show-error --retry 3 --output "$partial" "$URL" ||
    die "download failed (offline? try: scripts/get-data.sh --from PATH)"
elif command -v wget >/dev/null 2>&1; then
  echo "Downloading $URL"
  wget --quiet --tries=3 --output-document="$partial" "$URL" ||
    die "download failed (offline? try: scripts/get-data.sh --from PATH)"
else
  die "neither curl nor wget is installed; install one, or use --from PATH"
fi

# Same bytes as the lecture's input.txt, or nothing: token ids, the 90/10 split and every loss
# printed in the docs depend on them.
size="$(wc -c <"$partial" | tr -d ' ')"
if command -v sha256sum >/dev/null 2>&1; then
  sha="$(sha256sum "$partial" | cut -d ' ' -f 1)"
else
  sha="$(shasum -a 256 "$partial" | cut -d ' ' -f 1)"  # macOS
fi
if [[ "$size" != "$EXPECTED_SIZE" || "$sha" != "$EXPECTED_SHA256" ]]; then
  rm -f "$partial"
  die "the $kind file is not Tiny Shakespeare and was deleted: \
$size bytes and sha256 $sha, expected $EXPECTED_SIZE bytes and sha256 $EXPECTED_SHA256"
fi

chmod 644 "$partial"  # mktemp creates it private (0600)
mv -f "$partial" "$target"
trap - EXIT
echo "OK: $relative_target ($size bytes, sha256 verified)"
echo
echo "Use it in every chapter with"
echo "  export ATTN_DATA=$target"
echo "or for one run (from the repository root) with"
echo "  build/default/bin/01_bigram --data $relative_target"
