// chapters/13_tokens/exercises/exercises.hpp: the exercises of chapter 13, byte-pair encoding by
// hand. Each function mirrors a piece of attn/io/bpe.hpp and is written in its own file beside
// this one. Check them with `build/default/bin/attn-check 13`.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/bpe.hpp"

namespace ex13 {

// ex13.1, ex13_1_count_pairs.cpp: how often each adjacent pair of ids occurs, like
// attn::count_pairs. Overlapping pairs all count: [a, a, a] holds (a, a) twice. Fewer than two
// ids: no pairs.
std::map<attn::TokenPair, std::size_t> count_pairs(std::span<const int> ids);

// ex13.2, ex13_2_merge_pair.cpp: one merge, like attn::merge_pair: every occurrence of `pair`,
// scanned left to right without overlap, replaced by `new_id`; [a, a, a] with (a, a) -> [new, a].
std::vector<int> merge_pair(std::span<const int> ids, attn::TokenPair pair, int new_id);

// ex13.3, ex13_3_encode_by_rank.cpp: one chunk's bytes to ids, like attn::Bpe::encode_chunk:
// start from the ids of its bytes (bpe.byte_id), then repeatedly merge the adjacent pair of
// lowest rank (bpe.rank_of; its id: bpe.merges()[rank].id) until no adjacent pair has a merge.
std::vector<int> encode_chunk(const attn::Bpe& bpe, std::string_view chunk);

// ex13.4, ex13_4_decode.cpp: ids back to text, like attn::Bpe::decode: the tokens' bytes
// (bpe.token_bytes) joined, then read as UTF-8 with every maximal invalid piece replaced by one
// U+FFFD, as Python's bytes.decode(errors="replace") does. Throws std::out_of_range for an id
// outside [0, V).
std::string decode(const attn::Bpe& bpe, std::span<const int> ids);

}  // namespace ex13
