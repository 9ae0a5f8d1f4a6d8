// Byte-level BPE (see attn/io/bpe.hpp), chapter 13: how GPT-2 turns text into tokens.
// Four ideas, in the page's order: cut the text into chunks (pretokenize), count adjacent pairs
// and merge the most frequent one again and again (train), replay the merges by rank on new text
// (encode), and join the bytes back, replacing what is not UTF-8 (decode).
#include "attn/io/bpe.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <queue>
#include <set>
#include <system_error>
#include <tuple>
#include <unordered_set>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "attn/core/limits.hpp"
#include "attn/io/text.hpp"

namespace attn {

namespace {

// ---- Pre-tokenization: GPT-2's pattern, compiled once in PCRE2 ----------------------------------

struct Pattern {
  pcre2_code* code = nullptr;
  ~Pattern() { pcre2_code_free(code); }
};

const pcre2_code* gpt2_pattern() {
  // PCRE2_UTF: the subject is UTF-8; PCRE2_UCP: \s, \p{L}, \p{N} use Unicode properties (as
  // Python's `regex` module does for GPT-2); PCRE2_MATCH_INVALID_UTF: invalid bytes match no
  // item of the pattern instead of failing the whole match.
  static const Pattern pattern = [] {
    Pattern p;
    int error = 0;
    PCRE2_SIZE offset = 0;
    p.code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern.data()), kGpt2Pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
    if (p.code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      throw std::logic_error(std::string("attn::pretokenize: PCRE2 rejects GPT-2's pattern: ") +
                             reinterpret_cast<const char*>(message));
    }
    // The JIT makes matching several times faster; where it is unavailable the interpreter
    // gives the same matches.
    (void)pcre2_jit_compile(p.code, PCRE2_JIT_COMPLETE);
    return p;
  }();
  return pattern.code;
}

// ---- GPT-2's byte alphabet -------------------------------------------------------------------

// bytes_to_unicode() of GPT-2's encoder.py: printable bytes keep their code point, the others
// take U+0100, U+0101, ... in byte order.
struct ByteAlphabet {
  char32_t to_char[256] = {};
  ByteAlphabet() {
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
    }
  }
  // The byte of a character of the alphabet, or -1.
  int byte_of(char32_t c) const {
    if (c < 0x100) return to_char[c] == c ? static_cast<int>(c) : -1;
    if (c < 0x100 + 68) {
      for (int b = 0; b < 256; ++b)
        if (to_char[b] == c) return b;
    }
    return -1;
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

std::uint64_t pair_key(int left, int right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
         static_cast<std::uint32_t>(right);
}

// ---- Files -----------------------------------------------------------------------------------

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

[[noreturn]] void file_error(const std::filesystem::path& path, const std::string& what) {
  throw BpeError("tokenizer file " + quoted(path) + ": " + what);
}

// The whole file, if it is a regular file of at most kMaxTokenizerBytes.
constexpr std::size_t kMaxTokenizerBytes = 64 * limits::kMiB;  // GPT-2's two files: 1.5 MB

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    file_error(path, std::make_error_code(std::errc::no_such_file_or_directory).message());
  }
  if (!std::filesystem::is_regular_file(status)) {
    file_error(path, "not a regular file (a directory, a device or a pipe)");
  }
  errno = 0;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) file_error(path, errno != 0 ? std::strerror(errno) : "cannot open the file");
  std::string text;
  char buffer[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
    text.append(buffer, got);
    if (text.size() > kMaxTokenizerBytes) {
      file_error(path, "more than the limit of " + bytes_text(kMaxTokenizerBytes));
    }
  }
  if (std::ferror(file.get())) file_error(path, errno != 0 ? std::strerror(errno) : "read error");
  return text;
}

// A token as the files spell it -> its bytes; nullopt if a character is outside the alphabet.
std::optional<std::string> bytes_of_token_text(std::string_view text) {
  std::u32string chars;
  try {
    chars = decode_utf8(text);
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
  std::string bytes;
  for (const char32_t c : chars) {
    const int b = alphabet().byte_of(c);
    if (b < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(b));
  }
  return bytes;
}

// For messages: a token as the file spells it, cut to 40 bytes, control characters escaped.
std::string shown(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 40)) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f || c == '\'') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    } else {
      out.push_back(c);
    }
  }
  return "'" + out + (text.size() > 40 ? "...'" : "'");
}

}  // namespace

// ---- Public pieces ---------------------------------------------------------------------------

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> chunks;
  if (text.empty()) return chunks;
  const pcre2_code* code = gpt2_pattern();
  const std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match(
      pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  if (!match) throw std::bad_alloc();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t offset = 0;
  while (offset < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), offset, 0, match.get(), nullptr);
    std::size_t start = text.size();
    std::size_t end = text.size();
    if (rc >= 0) {
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
      start = ovector[0];
      end = ovector[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      throw std::runtime_error("attn::pretokenize: PCRE2 match error " + std::to_string(rc));
    }
    // What the pattern skipped is bytes that are not UTF-8: one chunk, kept so that nothing of
    // the text is lost (every valid character matches one of the pattern's branches).
    if (start > offset) chunks.push_back(text.substr(offset, start - offset));
    if (end > start) chunks.push_back(text.substr(start, end - start));
    offset = std::max(end, start + (end == start ? 1 : 0));
  }
  return chunks;
}

char32_t gpt2_byte_char(unsigned char byte) { return alphabet().to_char[byte]; }

std::string gpt2_token_text(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) out += encode_utf8(gpt2_byte_char(static_cast<unsigned char>(c)));
  return out;
}

std::string utf8_replace(std::string_view bytes) {
  // The ranges are text.cpp's decode_utf8 (Unicode table 3-7). Where a sequence breaks, CPython
  // replaces its "maximal subpart": the lead byte and the continuation bytes that were still
  // valid, as one U+FFFD; the byte that broke it starts the next attempt.
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
  std::string out;
  out.reserve(bytes.size());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 < 0x80u) {
      out.push_back(static_cast<char>(b0));
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char lo = 0x80u;
    unsigned char hi = 0xBFu;
    if (b0 >= 0xC2u && b0 <= 0xDFu) {
      length = 2;
    } else if (b0 >= 0xE0u && b0 <= 0xEFu) {
      length = 3;
      if (b0 == 0xE0u) lo = 0xA0u;
      if (b0 == 0xEDu) hi = 0x9Fu;
    } else if (b0 >= 0xF0u && b0 <= 0xF4u) {
      length = 4;
      if (b0 == 0xF0u) lo = 0x90u;
      if (b0 == 0xF4u) hi = 0x8Fu;
    } else {  // a stray continuation byte, or a byte UTF-8 never uses
      out += kReplacement;
      ++i;
      continue;
    }
    std::size_t valid = 1;  // bytes of the sequence that fit so far
    while (valid < length && i + valid < n) {
      const auto b = static_cast<unsigned char>(bytes[i + valid]);
      const bool fits = valid == 1 ? (b >= lo && b <= hi) : (b & 0xC0u) == 0x80u;
      if (!fits) break;
      ++valid;
    }
    if (valid == length) {
      out.append(bytes.substr(i, length));
    } else {
      out += kReplacement;
    }
    i += valid;
  }
  return out;
}

std::map<TokenPair, std::size_t> count_pairs(std::span<const int> ids) {
  std::map<TokenPair, std::size_t> counts;
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) ++counts[{ids[i], ids[i + 1]}];
  return counts;
}

std::vector<int> merge_pair(std::span<const int> ids, TokenPair pair, int new_id) {
  std::vector<int> out;
  out.reserve(ids.size());
  std::size_t i = 0;
  while (i < ids.size()) {
    if (i + 1 < ids.size() && ids[i] == pair.first && ids[i + 1] == pair.second) {
      out.push_back(new_id);
      i += 2;  // both tokens are used up: [a, a, a] -> [new, a], never [new, new]
    } else {
      out.push_back(ids[i]);
      ++i;
    }
  }
  return out;
}

// ---- Bpe -------------------------------------------------------------------------------------

void Bpe::index() {
  // Single bytes: after a check that each of the 256 is a token, so encoding never fails.
  std::unordered_map<std::string, int> id_of;
  id_of.reserve(tokens_.size());
  for (std::size_t id = 0; id < tokens_.size(); ++id)
    id_of.emplace(tokens_[id], static_cast<int>(id));
  for (int b = 0; b < 256; ++b) {
    const auto it = id_of.find(std::string(1, static_cast<char>(b)));
    byte_ids_[b] = it == id_of.end() ? -1 : it->second;
  }
  rule_.clear();
  rule_.reserve(merges_.size());
  for (std::size_t rank = 0; rank < merges_.size(); ++rank) {
    const Merge& m = merges_[rank];
    rule_.emplace(pair_key(m.left, m.right), std::pair{rank, m.id});
  }
}

std::optional<std::size_t> Bpe::rank_of(TokenPair pair) const {
  const auto it = rule_.find(pair_key(pair.first, pair.second));
  if (it == rule_.end()) return std::nullopt;
  return it->second.first;
}

const std::string& Bpe::token_bytes(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size()) {
    throw std::out_of_range("token id " + std::to_string(id) + " is outside [0, " +
                            std::to_string(tokens_.size()) + ")");
  }
  return tokens_[static_cast<std::size_t>(id)];
}

std::string Bpe::bytes_of(std::span<const int> ids) const {
  std::string out;
  for (const int id : ids) out += token_bytes(id);
  return out;
}

std::string Bpe::decode(std::span<const int> ids) const {
  // Join first, then decode: a character split over two tokens (an emoji is 4 bytes, often 2
  // tokens) is whole again in the joined bytes. Decoding token by token would replace both
  // halves.
  return utf8_replace(bytes_of(ids));
}

std::vector<int> Bpe::encode_chunk(std::string_view chunk) const {
  // 1. Every byte is a token.
  std::vector<int> ids;
  ids.reserve(chunk.size());
  for (const char c : chunk) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
  // 2. Replay the merges in the order they were learned: the adjacent pair with the lowest rank
  //    first, all its occurrences at once. (Rank, not position: in " lower", "er" may be merged
  //    before "lo" because training found it first.)
  while (ids.size() >= 2) {
    std::size_t best_rank = SIZE_MAX;
    int best_left = 0, best_right = 0, best_id = 0;
    for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto it = rule_.find(pair_key(ids[i], ids[i + 1]));
      if (it != rule_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_left = ids[i];
        best_right = ids[i + 1];
        best_id = it->second.second;
      }
    }
    if (best_rank == SIZE_MAX) break;  // no pair left that has a merge
    ids = merge_pair(ids, {best_left, best_right}, best_id);
  }
  return ids;
}

std::vector<int> Bpe::encode(std::string_view text) const {
  std::vector<int> ids;
  for (const std::string_view chunk : pretokenize(text)) {
    const std::vector<int> part = encode_chunk(chunk);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

Bpe Bpe::train(std::string_view text, std::size_t vocab_size,
               const std::function<void(const LearnedMerge&)>& on_merge) {
  if (vocab_size < 256) {
    throw std::invalid_argument("attn::Bpe::train: a vocabulary of " + std::to_string(vocab_size) +
                                " tokens is below the 256 single bytes it starts from");
  }
  Bpe bpe;
  bpe.tokens_.reserve(vocab_size);
  for (int b = 0; b < 256; ++b) bpe.tokens_.emplace_back(1, static_cast<char>(b));
  std::unordered_map<std::string, int> id_of;
  for (int b = 0; b < 256; ++b) id_of.emplace(bpe.tokens_[static_cast<std::size_t>(b)], b);

  // 1. The distinct chunks and how often each occurs: Tiny Shakespeare's 1.1 MB are ~300k
  //    chunks but only ~25k distinct ones, so every count below is done once per distinct chunk.
  std::unordered_map<std::string_view, std::size_t> chunk_count;
  for (const std::string_view chunk : pretokenize(text)) ++chunk_count[chunk];
  std::vector<std::string_view> distinct;
  distinct.reserve(chunk_count.size());
  for (const auto& [chunk, count] : chunk_count) distinct.push_back(chunk);
  std::sort(distinct.begin(), distinct.end());  // a fixed order, whatever the hash map's
  std::vector<std::vector<int>> words(distinct.size());
  std::vector<std::size_t> weight(distinct.size());
  for (std::size_t w = 0; w < distinct.size(); ++w) {
    for (const char c : distinct[w]) words[w].push_back(static_cast<unsigned char>(c));
    weight[w] = chunk_count[distinct[w]];
  }

  // 2. Pair counts over all chunks, which chunks hold each pair, and a heap of (count, pair):
  //    the most frequent pair on top, ties to the smallest pair. A merge changes the counts of
  //    only the pairs in the chunks it touches, so only those are recounted; heap entries whose
  //    count is out of date are skipped when they come to the top.
  std::unordered_map<std::uint64_t, std::size_t> pair_count;
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> where;
  using Entry = std::tuple<std::size_t, std::int64_t, std::int64_t>;  // (count, -left, -right)
  std::priority_queue<Entry> heap;
  const auto push = [&heap](std::uint64_t key, std::size_t count) {
    const auto left = static_cast<std::int64_t>(key >> 32);
    const auto right = static_cast<std::int64_t>(key & 0xFFFFFFFFu);
    heap.emplace(count, -left, -right);
  };
  for (std::size_t w = 0; w < words.size(); ++w) {
    for (std::size_t i = 0; i + 1 < words[w].size(); ++i) {
      const std::uint64_t key = pair_key(words[w][i], words[w][i + 1]);
      pair_count[key] += weight[w];
      auto& list = where[key];
      if (list.empty() || list.back() != w) list.push_back(w);
    }
  }
  for (const auto& [key, count] : pair_count) push(key, count);

  // 3. Merge until the vocabulary is full or no pair is left.
  std::vector<std::size_t> seen(words.size(), SIZE_MAX);  // the step that last touched a word
  while (bpe.tokens_.size() < vocab_size && !heap.empty()) {
    const auto [count, neg_left, neg_right] = heap.top();
    heap.pop();
    const int left = static_cast<int>(-neg_left);
    const int right = static_cast<int>(-neg_right);
    const std::uint64_t key = pair_key(left, right);
    const auto current = pair_count.find(key);
    if (current == pair_count.end() || current->second != count || count == 0) continue;

    // The new token's bytes; an existing token with the same bytes keeps its id.
    std::string bytes =
        bpe.tokens_[static_cast<std::size_t>(left)] + bpe.tokens_[static_cast<std::size_t>(right)];
    int new_id = 0;
    if (const auto it = id_of.find(bytes); it != id_of.end()) {
      new_id = it->second;
    } else {
      new_id = static_cast<int>(bpe.tokens_.size());
      id_of.emplace(bytes, new_id);
      bpe.tokens_.push_back(std::move(bytes));
    }
    const Merge merge{left, right, new_id};
    bpe.merges_.push_back(merge);
    if (on_merge) on_merge(LearnedMerge{merge, count});

    // Recount the chunks that hold the pair: remove their pairs, merge, add their pairs back.
    const std::size_t step = bpe.merges_.size();
    std::unordered_set<std::uint64_t> changed;
    const std::vector<std::size_t> holders = std::move(where[key]);
    where.erase(key);
    for (const std::size_t w : holders) {
      if (seen[w] == step) continue;
      seen[w] = step;
      std::vector<int>& word = words[w];
      std::vector<int> merged = merge_pair(word, {left, right}, new_id);
      if (merged.size() == word.size()) continue;  // an out-of-date entry: pair no longer here
      for (std::size_t i = 0; i + 1 < word.size(); ++i) {
        const std::uint64_t k = pair_key(word[i], word[i + 1]);
        pair_count[k] -= weight[w];
        changed.insert(k);
      }
      word = std::move(merged);
      for (std::size_t i = 0; i + 1 < word.size(); ++i) {
        const std::uint64_t k = pair_key(word[i], word[i + 1]);
        pair_count[k] += weight[w];
        changed.insert(k);
        auto& list = where[k];
        if (list.empty() || list.back() != w) list.push_back(w);
      }
    }
    // Pushed in key order, so the heap (and so the result) never depends on the hash order.
    std::vector<std::uint64_t> keys(changed.begin(), changed.end());
    std::sort(keys.begin(), keys.end());
    for (const std::uint64_t k : keys) {
      const std::size_t c = pair_count[k];
      if (c == 0) {
        pair_count.erase(k);
      } else {
        push(k, c);
      }
    }
  }
  bpe.index();
  return bpe;
}

// ---- Files -----------------------------------------------------------------------------------

Bpe Bpe::load(const std::filesystem::path& dir) {
  // The folder itself first: a file or a missing path is named as such, not as a vocab.json
  // missing inside it (issue 29).
  std::error_code ec;
  const auto st = std::filesystem::status(dir, ec);
  if (!std::filesystem::exists(st)) {
    throw BpeError("tokenizer folder " + quoted(dir) +
                   " does not exist (expected a folder with vocab.json and merges.txt)");
  }
  if (!std::filesystem::is_directory(st)) {
    throw BpeError("tokenizer folder " + quoted(dir) +
                   " is not a folder (expected a folder with vocab.json and merges.txt)");
  }
  const std::string vocab = read_file(dir / "vocab.json");
  const std::string merges = read_file(dir / "merges.txt");
  return parse(vocab, merges, dir);
}

Bpe Bpe::parse(std::string_view vocab_json, std::string_view merges_txt,
               const std::filesystem::path& dir) {
  Bpe bpe;
  const std::filesystem::path vocab_path = dir / "vocab.json";
  const std::filesystem::path merges_path = dir / "merges.txt";

  // 1. vocab.json: {"token": id, ...}. A key given twice is an error (JSON parsers usually keep
  //    the last one silently), so keys are collected while parsing.
  {
    const std::string_view text = vocab_json;
    std::optional<std::string> duplicate;
    std::unordered_set<std::string> keys;
    const nlohmann::json::parser_callback_t on_event =
        [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          if (event == nlohmann::json::parse_event_t::key && depth == 1 && !duplicate) {
            auto key = parsed.get<std::string>();
            if (!keys.insert(key).second) duplicate = std::move(key);
          }
          return true;
        };
    nlohmann::json vocab;
    try {
      vocab = nlohmann::json::parse(text, on_event);
    } catch (const nlohmann::json::parse_error& e) {
      // Where, in the file's terms (the parser's own text names its exception classes).
      file_error(vocab_path, "not valid JSON (error at byte " + std::to_string(e.byte) + ")");
    } catch (const nlohmann::json::exception&) {  // out_of_range: a number too large
      file_error(vocab_path, "not valid JSON (a number out of range)");
    }
    if (!vocab.is_object()) {
      file_error(vocab_path, std::string("expected one JSON object {\"token\": id, ...}, got ") +
                                 vocab.type_name());
    }
    if (duplicate) file_error(vocab_path, "token " + shown(*duplicate) + " appears twice");
    const std::size_t n = vocab.size();
    if (n < 256) {
      file_error(vocab_path, "holds " + std::to_string(n) +
                                 " tokens, fewer than the 256 single bytes every vocabulary has");
    }
    bpe.tokens_.assign(n, std::string());
    std::vector<bool> taken(n, false);
    for (const auto& [token, value] : vocab.items()) {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
          value.get<std::int64_t>() >= static_cast<std::int64_t>(n)) {
        file_error(vocab_path, "token " + shown(token) + " has id " + value.dump() +
                                   ", expected a whole number in [0, " + std::to_string(n) +
                                   ") (ids are 0..N-1 for N tokens)");
      }
      const auto id = static_cast<std::size_t>(value.get<std::int64_t>());
      if (taken[id]) file_error(vocab_path, "id " + std::to_string(id) + " is given twice");
      taken[id] = true;
      auto bytes = bytes_of_token_text(token);
      if (!bytes || bytes->empty()) {
        file_error(vocab_path, "token " + shown(token) +
                                   " is not spelled in GPT-2's byte alphabet (U+0021..U+0143)");
      }
      bpe.tokens_[id] = std::move(*bytes);
    }
  }
  std::unordered_map<std::string, int> id_of;
  id_of.reserve(bpe.tokens_.size());
  for (std::size_t id = 0; id < bpe.tokens_.size(); ++id) {
    id_of.emplace(bpe.tokens_[id], static_cast<int>(id));
  }
  for (int b = 0; b < 256; ++b) {
    if (!id_of.contains(std::string(1, static_cast<char>(b)))) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(b));
      file_error(vocab_path, "the single byte " + std::string(hex) + " ('" +
                                 encode_utf8(gpt2_byte_char(static_cast<unsigned char>(b))) +
                                 "') is not a token; every byte must be");
    }
  }

  // 2. merges.txt: "left right" per line, in rank order.
  {
    const std::string_view text = merges_txt;
    std::unordered_set<std::uint64_t> pairs;
    std::size_t line_no = 0;
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + start, end - start);
      start = end + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line_no == 1 && line.starts_with("#version")) continue;
      const auto where = "line " + std::to_string(line_no) + ": ";
      const std::size_t space = line.find(' ');
      if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
          line.find(' ', space + 1) != std::string_view::npos) {
        file_error(merges_path,
                   where + "expected two tokens separated by one space, got " + shown(line));
      }
      const std::string_view parts[2] = {line.substr(0, space), line.substr(space + 1)};
      int ids[2] = {0, 0};
      std::string joined;
      for (int k = 0; k < 2; ++k) {
        const auto bytes = bytes_of_token_text(parts[k]);
        const auto it = bytes ? id_of.find(*bytes) : id_of.end();
        if (it == id_of.end()) {
          file_error(merges_path, where + "token " + shown(parts[k]) + " is not in vocab.json");
        }
        ids[k] = it->second;
        joined += *bytes;
      }
      const auto merged = id_of.find(joined);
      if (merged == id_of.end()) {
        file_error(merges_path, where + "the merge of " + shown(parts[0]) + " and " +
                                    shown(parts[1]) + " is not in vocab.json");
      }
      if (!pairs.insert(pair_key(ids[0], ids[1])).second) {
        file_error(merges_path, where + "the pair " + shown(line) + " appears twice");
      }
      bpe.merges_.push_back(Merge{ids[0], ids[1], merged->second});
    }
  }
  bpe.index();
  return bpe;
}

void Bpe::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw BpeError("cannot create tokenizer folder " + quoted(dir) + ": " + ec.message());
  // ordered_json keeps the ids in order, as GPT-2's own vocab.json lists them.
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (std::size_t id = 0; id < tokens_.size(); ++id) vocab[gpt2_token_text(tokens_[id])] = id;
  std::string merges = "#version: 0.2\n";
  for (const Merge& m : merges_) {
    merges += gpt2_token_text(tokens_[static_cast<std::size_t>(m.left)]) + " " +
              gpt2_token_text(tokens_[static_cast<std::size_t>(m.right)]) + "\n";
  }
  // C stdio, for the reason of a failure (a full disk, `ulimit -f`): errno, which iostreams do
  // not promise.
  const auto write = [](const std::filesystem::path& path, const std::string& text) {
    errno = 0;
    std::FILE* out = std::fopen(path.c_str(), "wb");
    bool ok = out != nullptr && std::fwrite(text.data(), 1, text.size(), out) == text.size();
    int error = ok ? 0 : errno;
    if (out != nullptr && std::fclose(out) != 0 && ok) {
      ok = false;
      error = errno;
    }
    if (!ok) {
      throw BpeError("cannot write tokenizer file " + quoted(path) + ": " +
                     (error != 0 ? std::strerror(error) : "write error"));
    }
  };
  write(dir / "vocab.json", vocab.dump() + "\n");
  write(dir / "merges.txt", merges);
}

}  // namespace attn
