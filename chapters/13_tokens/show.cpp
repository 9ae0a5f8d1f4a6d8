// chapters/13_tokens/show.cpp: the narration of chapter 13. Each function prints what one
// section of main.cpp computed, and checks the sentences its numbers could contradict
// (attn::claim).
#include "show.hpp"

#include <fmt/core.h>

#include <cstddef>
#include <string>
#include <vector>

#include "attn/io/text.hpp"
#include "attn/term/narrate.hpp"

namespace ch13 {

namespace {

// [a|b|c]: tokens in GPT-2's alphabet, so that every one is visible (Ġ is a space, Ċ a newline).
std::string bar(const std::vector<std::string>& tokens) {
  std::string out = "[";
  for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? "|" : "") + tokens[i];
  return out + "]";
}

std::string quoted(const std::string& text) { return attn::quote(attn::decode_utf8(text)); }

}  // namespace

void show_header(const std::string& origin, bool mine) {
  fmt::print("Chapter 13: from characters to tokens (byte-pair encoding)\n");
  fmt::print("corpus {}, functions: {}\n", origin,
             mine ? "yours (ex13::, --mine)"
                  : "the library's (attn::count_pairs, attn::merge_pair, "
                    "attn::Bpe::encode_chunk, attn::Bpe::decode)");
}

// ---- 1. Text is bytes.
void show_bytes(const BytesView& v) {
  attn::section(1, "Text is bytes");
  fmt::print("Chapters 01-12 numbered characters. GPT-2 numbers bytes: the UTF-8 encoding of the\n"
             "text, 1 to 4 bytes per character, so 256 tokens can spell any text at all.\n");
  fmt::print("{} is {} characters and {} bytes:\n", quoted(v.text), v.chars.size(), v.n_bytes);
  for (const CharBytes& c : v.chars) {
    fmt::print("  {}  {}  {}\n", attn::align_left(c.shown, 4), attn::align_left(c.hex, 12), c.gpt2);
  }
  attn::claim(v.n_bytes > v.chars.size(), "the sample has more bytes than characters");
  fmt::print("The last column is GPT-2's alphabet for bytes, which vocab.json and merges.txt\n"
             "use: a byte that prints keeps its character, the 68 others (space, newline,\n"
             "control bytes) move to U+0100 and up, so the space is 'Ġ' and '\\n' is 'Ċ'.\n");
}

// ---- 2. Chunks.
void show_chunks(const ChunksView& v) {
  attn::section(2, "Chunks: GPT-2's pattern");
  fmt::print("Before any merge the text is cut into chunks, and merges never cross a chunk's\n"
             "border: a word may take the space before it, never the punctuation after it.\n");
  fmt::print("{} ->\n ", quoted(v.text));
  std::string joined;
  for (const std::string& c : v.chunks) {
    fmt::print(" {}", quoted(c));
    joined += c;
  }
  fmt::print("\n");
  attn::claim(joined == v.text, "the chunks joined give the text back");
  fmt::print("{} chunks. Contractions are lower case only ('S splits as ' and S), numbers and\n"
             "letters never share a chunk, and a run of spaces leaves its last space to the\n"
             "next word.\n",
             v.chunks.size());
}

// ---- 3. Training.
void show_first_step(const FirstStep& s) {
  attn::section(3, "Training: merge the most frequent pair, again and again");
  fmt::print("{}: {} bytes, {} chunks, {} of them distinct.\nEach distinct chunk's pairs "
             "are counted once, weighted by how often the chunk occurs\n(count_pairs), and "
             "summed; pairs never cross a chunk's border. The most frequent:\n",
             s.origin, attn::grouped(static_cast<double>(s.bytes)),
             attn::grouped(static_cast<double>(s.chunks)),
             attn::grouped(static_cast<double>(s.distinct)));
  for (const PairCount& p : s.top) {
    fmt::print("  ({}, {})  {}\n", p.left, p.right, attn::grouped(static_cast<double>(p.count)));
  }
  if (s.top.empty()) return;
  fmt::print("The top pair becomes token 256 everywhere it occurs (merge_pair):\n  {}\n  -> {}\n",
             s.example, s.example_merged);
}

void show_training(const TrainView& t) {
  fmt::print("Repeating that step until V = {}: the first merges learned, most frequent first:\n",
             t.vocab_asked);
  fmt::print("  rank  pair                  ->  token        count\n");
  for (const LearnedRow& r : t.first) {
    fmt::print("  {}  {}  ->  {}  {}\n", attn::align_right(std::to_string(r.rank), 4),
               attn::align_left("(" + r.left + ", " + r.right + ")", 20),
               attn::align_left(r.merged, 11),
               attn::align_right(attn::grouped(static_cast<double>(r.count)), 6));
  }
  if (t.merges > t.first.size()) {
    fmt::print("  ...\n  {}  {}  ->  {}  {}\n", attn::align_right(std::to_string(t.last.rank), 4),
               attn::align_left("(" + t.last.left + ", " + t.last.right + ")", 20),
               attn::align_left(t.last.merged, 11),
               attn::align_right(attn::grouped(static_cast<double>(t.last.count)), 6));
  }
  if (!t.first.empty()) {
    fmt::print("Rank 0 is the pair counted by hand above ({}).\n",
               t.first_is_top ? "same pair, same count" : "NOT the same: a bug");
    attn::claim(t.first_is_top, "training's first merge is the most frequent pair counted by hand");
  }
  if (t.vocab < t.vocab_asked) {
    fmt::print("The corpus ran out of pairs at V = {}: every chunk is one token.\n", t.vocab);
  } else {
    fmt::print("V = {}: 256 bytes and {} merges, each a new token made of two older ones.\n",
               t.vocab, t.merges);
  }
  if (t.timing) fmt::print("Training took {:.3f} s.\n", t.seconds);
}

// ---- 4. Encoding.
void show_encoding(const EncodeView& e) {
  attn::section(4, "Encoding: replay the merges by rank");
  fmt::print("New text is cut into chunks, and each chunk starts as bytes. Then the adjacent\n"
             "pair whose merge was learned first (the lowest rank) is merged, wherever it is,\n"
             "until no adjacent pair has a merge. The chunk {} of\n{}:\n",
             quoted(e.chunk), quoted(e.sentence));
  fmt::print("  start                 {}\n", bar(e.start));
  for (const EncodeStep& s : e.steps) {
    fmt::print("  rank {}  {}  {}\n", attn::align_right(std::to_string(s.rank), 4),
               attn::align_left(s.pair, 14), bar(s.tokens));
  }
  if (e.steps.size() > 1) {
    fmt::print("The first merge is not the first pair of the chunk but the one learned first. The\n"
             "ranks {} from step to step: a merge can only use tokens made before it.\n",
               e.ranks_grow ? "grow" : "do NOT grow");
    attn::claim(e.ranks_grow, "the ranks of the merges applied grow from step to step");
  }
  fmt::print("encode_chunk gives {}.\n", e.same_as_encode_chunk ? "the same tokens"
                                                                : "DIFFERENT tokens: a bug");
  attn::claim(e.same_as_encode_chunk, "encode_chunk gives the tokens of the loop written out");
  fmt::print("The whole sentence, {} characters, is {} tokens:\n  {}\n  ids", e.chars,
             e.ids.size(), bar(e.tokens));
  for (const int id : e.ids) fmt::print(" {}", id);
  fmt::print("\n");
}

// ---- 5. Decoding.
void show_decoding(const DecodeView& d) {
  attn::section(5, "Decoding: join the bytes, then read UTF-8");
  fmt::print("decode(ids) joins the tokens' bytes and reads them as UTF-8: the sentence comes\n"
             "back {}.\n",
             d.round_trip ? "unchanged" : "CHANGED: a bug");
  attn::claim(d.round_trip, "decoding the encoded sentence gives it back");
  fmt::print("A character can be split over tokens: {} (4 bytes) is {} token{} here, {}.\n",
             d.split_text, d.split_ids.size(), d.split_ids.size() == 1 ? "" : "s",
             bar(d.split_tokens));
  fmt::print("  decoded together:          {}\n", quoted(d.together));
  fmt::print("  each token decoded alone:  {} ({} U+FFFD)\n", quoted(d.one_by_one),
             d.replaced_one_by_one);
  fmt::print("  all but the last token:    {}\n", quoted(d.truncated));
  attn::claim(d.together == d.split_text, "the split character decodes whole when joined first");
  if (d.split_ids.size() > 1) {
    fmt::print("Decoding token by token breaks the character; joined first, it is whole. A cut\n"
               "sequence becomes one U+FFFD (the replacement character), as Python's\n"
               "bytes.decode(errors=\"replace\") does: a model may emit any tokens, and the text\n"
               "must still print.\n");
  }
}

// ---- 6. What tokens buy.
void show_measure(const Measure& m) {
  attn::section(6, "What tokens buy");
  fmt::print("Trained on the first 90% of {} ({} bytes), measured on the\n"
             "last 10% ({} characters):\n",
             m.origin, attn::grouped(static_cast<double>(m.train_bytes)),
             attn::grouped(static_cast<double>(m.val_chars)));
  fmt::print("     V  merges  chars/token  val tokens  attention vs bytes{}\n",
             m.timing ? "  training" : "");
  const double base = m.rows.empty() ? 1.0 : m.rows.front().chars_per_token;
  for (const MeasureRow& r : m.rows) {
    // A context of n characters is n / c tokens: (n / c)^2 scores, (n / c^2) per character.
    const double rel = (base * base) / (r.chars_per_token * r.chars_per_token);
    fmt::print("  {}  {}  {}  {}  {}{}\n", attn::align_right(std::to_string(r.vocab), 4),
               attn::align_right(std::to_string(r.merges), 6),
               attn::align_right(attn::num(r.chars_per_token, 2), 11),
               attn::align_right(attn::grouped(static_cast<double>(r.val_tokens)), 10),
               attn::align_right(attn::num(rel, 3), 18),
               m.timing ? fmt::format("  {:.3f} s", r.seconds) : "");
  }
  bool grows = true;
  for (std::size_t i = 1; i < m.rows.size(); ++i)
    grows = grows && m.rows[i].chars_per_token >= m.rows[i - 1].chars_per_token;
  attn::claim(grows, "characters per token grow with the vocabulary");
  fmt::print("Each token carries {} characters as V grows. A context of n characters is n / c\n"
             "tokens for c characters per token, so attention over it costs (n / c)^2 scores:\n"
             "the last column is (c_bytes / c)^2, the scores of the same text against bytes\n"
             "(and a block of T tokens sees c times more text). The price: an embedding row\n"
             "and an output row per token, V x C numbers each, and rarer tokens, each seen\n"
             "less often in training.\n",
             grows ? "more" : "NOT always more");
}

}  // namespace ch13
