// tests/exercises/ch13_solution.cpp: chapter 13's exercises answered by the reference library.
// Linked in place of the learner's stubs (ctest solution.ch13) to prove that every test in
// ch13_test.cpp passes against attn/io/bpe.hpp.
#include "attn/io/bpe.hpp"
#include "exercises.hpp"
#include "reference.hpp"

namespace ex13 {

ATTN_REFERENCE std::map<attn::TokenPair, std::size_t> count_pairs(std::span<const int> ids) {
  return attn::count_pairs(ids);
}

ATTN_REFERENCE std::vector<int> merge_pair(std::span<const int> ids, attn::TokenPair pair,
                                           int new_id) {
  return attn::merge_pair(ids, pair, new_id);
}

ATTN_REFERENCE std::vector<int> encode_chunk(const attn::Bpe& bpe, std::string_view chunk) {
  return bpe.encode_chunk(chunk);
}

ATTN_REFERENCE std::string decode(const attn::Bpe& bpe, std::span<const int> ids) {
  return bpe.decode(ids);
}

}  // namespace ex13
