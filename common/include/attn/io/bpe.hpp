// attn/io/bpe.hpp: byte-level byte-pair encoding as GPT-2 does it (chapter 13).
// Text -> UTF-8 bytes -> chunks cut by GPT-2's pre-tokenization pattern -> inside each chunk,
// adjacent tokens merged by rank (the order the merges were learned) -> token ids. Decoding joins
// the tokens' bytes and reads them as UTF-8, invalid sequences replaced by U+FFFD as Python's
// bytes.decode(errors="replace") does. Files are GPT-2's: vocab.json + merges.txt (what Hugging
// Face ships), so a real GPT-2's tokenizer loads unchanged. The character vocabulary of chapters
// 01-12 is attn/io/text.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attn {

// A tokenizer file that cannot be used, in one line naming the file and what was wrong:
// "tokenizer file 'gpt2/merges.txt': line 7: token 'Ġqz' is not in vocab.json".
class BpeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// GPT-2's pre-tokenization pattern. Each match is a chunk; merges never cross chunks, so a word
// and the space before it can become one token (" the") but "the" and the "." after it cannot.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The chunks of `text`, in order, views into `text`; joined they give `text` back. The pattern
// runs in PCRE2 with Unicode properties (\p{L} letters, \p{N} numbers, \s Unicode white space).
// Bytes that are not valid UTF-8 match nothing in the pattern: each run of them is its own chunk.
std::vector<std::string_view> pretokenize(std::string_view text);

// GPT-2's printable alphabet for bytes: bytes that print as themselves ('a', '!') keep their
// character, the other 68 (space, newline, control bytes, 0x7f-0xa0, 0xad) are moved to
// U+0100.. so that every token is a visible string: the space 0x20 is 'Ġ' (U+0120), '\n' is 'Ċ'.
// vocab.json and merges.txt spell tokens in this alphabet.
char32_t gpt2_byte_char(unsigned char byte);
// A token's bytes spelled in that alphabet, as UTF-8: " the" -> "Ġthe".
std::string gpt2_token_text(std::string_view bytes);

// Python's bytes.decode("utf-8", errors="replace"): valid sequences decoded, each maximal
// invalid piece replaced by one U+FFFD (a lead byte with some valid continuation bytes and then
// an end or a wrong byte counts once; a stray continuation byte or 0xc0, 0xc1, 0xf5-0xff counts
// once each), as CPython does. "caf\xc3" -> "caf\uFFFD", "\xf0\x9f\x98" -> one U+FFFD.
std::string utf8_replace(std::string_view bytes);

// The pieces of the algorithm, one function each (the chapter's exercises).
using TokenPair = std::pair<int, int>;  // (left, right), two adjacent token ids
// How often each adjacent pair occurs in `ids`, overlapping: [a, a, a] holds (a, a) twice.
std::map<TokenPair, std::size_t> count_pairs(std::span<const int> ids);
// `ids` with every occurrence of `pair`, scanned left to right without overlap, replaced by
// `new_id`: merging (a, a) in [a, a, a] gives [new, a].
std::vector<int> merge_pair(std::span<const int> ids, TokenPair pair, int new_id);

// One merge rule: (left, right) -> id. Its rank is its position in the list.
struct Merge {
  int left;
  int right;
  int id;
};

// What training reports after each merge it learns (for the chapter's narration).
struct LearnedMerge {
  Merge merge;
  std::size_t count;  // occurrences of the pair in the corpus when it was merged
};

class Bpe {
 public:
  // Reads dir/vocab.json (one JSON object: token text in GPT-2's alphabet -> id, ids exactly
  // 0..N-1, the 256 single bytes among them) and dir/merges.txt (one "left right" per line,
  // optionally after a first line "#version: ..."; left, right and left+right all in the vocab).
  // Each file is a regular file of at most 64 MiB. Throws BpeError.
  static Bpe load(const std::filesystem::path& dir);
  // Writes dir/vocab.json (one line, ids in order) and dir/merges.txt ("#version: 0.2" first),
  // creating dir if needed. Throws BpeError when a file cannot be written.
  void save(const std::filesystem::path& dir) const;

  // Learns merges from `text` until the vocabulary holds `vocab_size` tokens (>= 256) or no
  // adjacent pair is left. Start: ids 0..255 are the bytes 0..255. Each step counts adjacent
  // pairs inside the chunks of pretokenize(text) (each distinct chunk once, weighted by how
  // often it occurs), merges the most frequent pair everywhere and gives the result the next id.
  // Ties go to the smallest pair: smaller left id, then smaller right id, so training is
  // deterministic. A merge whose bytes already are a token reuses that token's id (as Hugging
  // Face's trainer does). `on_merge`, if given, hears each merge as it is learned.
  static Bpe train(std::string_view text, std::size_t vocab_size,
                   const std::function<void(const LearnedMerge&)>& on_merge = {});

  // Text -> ids: pretokenize, then each chunk's bytes merged by rank (encode_chunk).
  std::vector<int> encode(std::string_view text) const;
  // One chunk: start from its bytes' ids, then repeatedly merge every occurrence of the adjacent
  // pair whose merge has the lowest rank, until no adjacent pair has a merge.
  std::vector<int> encode_chunk(std::string_view chunk) const;
  // Ids -> text: bytes_of(ids), then utf8_replace. Throws std::out_of_range for an unknown id.
  std::string decode(std::span<const int> ids) const;
  // The raw bytes of the tokens, joined; may cut a UTF-8 character in two.
  std::string bytes_of(std::span<const int> ids) const;
  // One token's bytes. Throws std::out_of_range for an unknown id.
  const std::string& token_bytes(int id) const;

  std::size_t vocab_size() const { return tokens_.size(); }  // V
  const std::vector<Merge>& merges() const { return merges_; }
  // The ids of single bytes (0..255 after training; GPT-2 numbers them in its alphabet's order).
  int byte_id(unsigned char byte) const { return byte_ids_[byte]; }
  // The rank of the merge of (left, right), if there is one.
  std::optional<std::size_t> rank_of(TokenPair pair) const;

 private:
  Bpe() = default;
  void index();  // builds byte_ids_ and rule_ from tokens_ and merges_

  std::vector<std::string> tokens_;  // id -> bytes
  std::vector<Merge> merges_;        // by rank
  int byte_ids_[256] = {};
  // (left << 32 | right) -> (rank, id)
  std::unordered_map<std::uint64_t, std::pair<std::size_t, int>> rule_;
};

}  // namespace attn
