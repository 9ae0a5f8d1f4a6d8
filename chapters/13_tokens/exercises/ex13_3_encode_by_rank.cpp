// Exercise ex13.3: encoding by rank (chapter 13, docs/13-tokens.md).
//
// Goal: like attn::Bpe::encode_chunk. A trained tokenizer encodes new text by replaying its
// merges in the order they were learned: among the adjacent pairs present, the one whose merge
// has the lowest rank goes first, wherever it stands in the chunk.
// Input: a tokenizer and one chunk of text (one piece of attn::pretokenize). Output: its ids.
// Contract: start from bpe.byte_id(b) for each byte b; then, while some adjacent pair has a merge
// (bpe.rank_of(pair) is not empty), merge every occurrence of the pair with the lowest rank into
// bpe.merges()[rank].id; stop when no adjacent pair has a merge. An empty chunk gives no ids.
//
// Check: build/default/bin/attn-check 13
#include <stdexcept>

#include "exercises.hpp"

namespace ex13 {

std::vector<int> encode_chunk(const attn::Bpe& bpe, std::string_view chunk) {
  // TODO(ex13.3): bytes to ids; then loop: find the adjacent pair of lowest rank, merge it
  // (ex13::merge_pair), until no pair has a rank.
  throw std::logic_error("TODO ex13.3: encode a chunk by rank");
}

}  // namespace ex13
