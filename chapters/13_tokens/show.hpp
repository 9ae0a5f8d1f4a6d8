// chapters/13_tokens/show.hpp: what chapter 13's sections compute (main.cpp fills these structs,
// in the page's order) and the functions of show.cpp that print them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ch13 {

// 1. Text is bytes: each character of a sample and its UTF-8 bytes.
struct CharBytes {
  std::string shown;  // the character as it prints
  std::string hex;    // its bytes, "c3 b6"
  std::string gpt2;   // the same bytes in GPT-2's alphabet, "Ã¶"
};
struct BytesView {
  std::string text;
  std::vector<CharBytes> chars;
  std::size_t n_bytes = 0;
};

// 2. The chunks of GPT-2's pattern.
struct ChunksView {
  std::string text;
  std::vector<std::string> chunks;
};

// 3. Training: the first step by hand, then the merges learned.
struct PairCount {
  std::string left, right;  // the two tokens in GPT-2's alphabet
  std::size_t count = 0;
};
struct FirstStep {
  std::string origin;           // the corpus
  std::size_t bytes = 0;        // its size
  std::size_t chunks = 0;       // pretokenize's chunks
  std::size_t distinct = 0;     // of which distinct
  std::vector<PairCount> top;   // the most frequent pairs, counted with count_pairs
  std::string example;          // a chunk holding the top pair, its tokens before the merge
  std::string example_merged;   // ... and after merge_pair
};
struct LearnedRow {
  std::size_t rank = 0;
  std::string left, right, merged;  // GPT-2's alphabet
  std::size_t count = 0;
};
struct TrainView {
  std::size_t vocab_asked = 0, vocab = 0, merges = 0;
  std::vector<LearnedRow> first;  // the first merges
  LearnedRow last;                // and the last one
  bool first_is_top = false;      // training's first merge is the top pair of the hand count
  double seconds = 0.0;
  bool timing = false;
};

// 4. Encoding a sentence, one chunk step by step.
struct EncodeStep {
  std::size_t rank = 0;
  std::string pair, merged;           // "(Ġcom, pare)", "Ġcompare"
  std::vector<std::string> tokens;  // the chunk's tokens after the step
};
struct EncodeView {
  std::string sentence;
  std::string chunk;                // the chunk taken apart
  std::vector<std::string> start;   // its bytes as tokens
  std::vector<EncodeStep> steps;
  bool ranks_grow = true;           // each step's rank is above the one before
  bool same_as_encode_chunk = false;
  std::vector<std::string> tokens;  // the whole sentence's tokens
  std::vector<int> ids;
  std::size_t chars = 0;
};

// 5. Decoding, and a character split over tokens.
struct DecodeView {
  bool round_trip = false;        // decode(encode(sentence)) == sentence
  std::string split_text;         // the character ("🙂")
  std::vector<int> split_ids;     // its tokens
  std::vector<std::string> split_tokens;
  std::string together;           // decode(all ids)
  std::string one_by_one;         // each token decoded alone, joined
  std::size_t replaced_one_by_one = 0;  // U+FFFD in one_by_one
  std::string truncated;          // decode of all but the last token
};

// 6. What tokens buy.
struct MeasureRow {
  std::size_t vocab = 0, merges = 0;
  std::size_t val_tokens = 0;
  double chars_per_token = 0.0;
  double seconds = 0.0;  // training time, with --timing
};
struct Measure {
  std::string origin;
  std::size_t train_bytes = 0, val_chars = 0;
  std::vector<MeasureRow> rows;
  bool timing = false;
};

void show_header(const std::string& origin, bool mine);
void show_bytes(const BytesView& v);
void show_chunks(const ChunksView& v);
void show_first_step(const FirstStep& s);
void show_training(const TrainView& t);
void show_encoding(const EncodeView& e);
void show_decoding(const DecodeView& d);
void show_measure(const Measure& m);

}  // namespace ch13
