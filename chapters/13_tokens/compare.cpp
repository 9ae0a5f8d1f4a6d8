// chapters/13_tokens/compare.cpp: --compare. Chapter 09's default model (C 64, 4 heads, 2 layers,
// T 32, B 16, AdamW at 2e-3) trained twice on the same text for the same number of steps: once
// on characters (chapter 01's vocabulary), once on BPE tokens learned from the training split.
// Both see B x T tokens a step; a loss per token is not comparable across vocabularies, so each
// validation loss is turned into bits per character: nats per token x tokens / characters / ln 2.
#include "compare.hpp"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/bpe.hpp"
#include "attn/io/corpus.hpp"
#include "attn/io/data.hpp"
#include "attn/io/text.hpp"
#include "attn/model/model.hpp"
#include "attn/model/spec.hpp"
#include "attn/term/narrate.hpp"
#include "attn/train/train.hpp"

namespace ch13 {

namespace {

constexpr std::size_t kBlock = 32, kBatch = 16, kEvalIters = 50;

struct Run {
  std::string name;
  std::size_t vocab = 0, parameters = 0, val_tokens = 0, val_chars = 0;
  double val_loss = 0.0;         // nats per token
  double bits_per_char = 0.0;    // val_loss * tokens / chars / ln 2
  double chars_per_token = 0.0;  // of the validation text
  double seconds = 0.0;
};

Run train_one(const std::string& name, std::size_t V, const attn::Split& split,
              std::size_t val_chars, std::size_t steps, std::uint64_t seed) {
  attn::ModelChoices choices;  // chapter 09's defaults
  choices.vocab_size = V;
  choices.block_size = kBlock;
  attn::TrainConfig c;
  c.model = attn::resolve_spec(choices);
  c.batch_size = kBatch;
  c.steps = steps;
  c.schedule.lr = 2e-3f;
  c.seed = seed;
  const auto start = std::chrono::steady_clock::now();
  attn::TrainState s = attn::train_init(c);
  while (s.step < steps) (void)attn::train_step(s, c, split.train);
  const attn::EvalRecord e =
      attn::estimate_loss(s.weights, c.model, split, kBatch, kEvalIters, seed, steps);
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.name = name;
  r.vocab = V;
  r.parameters = attn::lm_parameter_count(s.weights);
  r.val_tokens = split.val.size();
  r.val_chars = val_chars;
  r.val_loss = e.val_loss;
  r.chars_per_token = static_cast<double>(val_chars) / static_cast<double>(r.val_tokens);
  r.bits_per_char = e.val_loss / r.chars_per_token / std::log(2.0);
  return r;
}

}  // namespace

void run_compare(const attn::CommonOptions& common, std::size_t vocab_size, std::size_t steps) {
  const attn::Corpus corpus = attn::load_corpus(common.data);
  // 1. Characters: chapter 01's vocabulary, the first 90% of the characters to train on.
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const std::vector<int> char_ids = vocab.encode(corpus.text);
  const attn::Split char_split = attn::train_val_split(char_ids);
  const std::size_t val_chars = char_split.val.size();
  // 2. BPE: the same cut (as a byte offset), merges learned on the training text only.
  const std::u32string chars = attn::decode_utf8(corpus.text);
  const std::size_t cut =
      attn::encode_utf8(std::u32string_view(chars).substr(0, char_split.train.size())).size();
  const std::string_view train_text = std::string_view(corpus.text).substr(0, cut);
  const std::string_view val_text = std::string_view(corpus.text).substr(cut);
  const attn::Bpe bpe = attn::Bpe::train(train_text, vocab_size);
  attn::Split bpe_split;
  bpe_split.train = bpe.encode(train_text);
  bpe_split.val = bpe.encode(val_text);

  // Each split must hold a window of T + 1 tokens, in both vocabularies (checked before any
  // output, so a corpus that is too short gives one line).
  for (const attn::Split* split : {&char_split, static_cast<const attn::Split*>(&bpe_split)}) {
    if (split->train.size() <= kBlock || split->val.size() <= kBlock) {
      throw std::runtime_error(
          "--compare: the corpus " + corpus.origin + " is too short: each split needs more than " +
          std::to_string(kBlock) + (split == &char_split ? " characters" : " BPE tokens"));
    }
  }
  fmt::print("Chapter 13: characters against BPE tokens (--compare)\n");
  fmt::print("seed {}, corpus {}\n", common.seed, corpus.origin);
  attn::section(1, "The same model, the same steps, two vocabularies");
  fmt::print(
      "Chapter 09's model (C 64, 4 heads, 2 layers, T {}, B {}, AdamW lr 2e-3), {} steps\n"
      "of B x T = {} tokens each, trained on the first 90% of the text and measured on\n"
      "the last 10% ({} characters, {} batches):\n",
      kBlock, kBatch, steps, kBlock * kBatch, attn::grouped(static_cast<double>(val_chars)),
      kEvalIters);
  const Run runs[2] = {
      train_one("characters", vocab.size(), char_split, val_chars, steps, common.seed),
      train_one("BPE tokens", bpe.vocab_size(), bpe_split, val_chars, steps, common.seed)};
  fmt::print("  {}     V  parameters  chars/token  val loss  bits/char{}\n",
             attn::align_left("", 10), common.timing ? "  time" : "");
  for (const Run& r : runs) {
    fmt::print("  {}  {}  {}  {}  {}  {}{}\n", attn::align_left(r.name, 10),
               attn::align_right(std::to_string(r.vocab), 4),
               attn::align_right(attn::grouped(static_cast<double>(r.parameters)), 10),
               attn::align_right(attn::num(r.chars_per_token, 2), 11),
               attn::align_right(attn::num(r.val_loss, 4), 8),
               attn::align_right(attn::num(r.bits_per_char, 3), 9),
               common.timing ? fmt::format("  {:.1f} s", r.seconds) : "");
  }
  const bool bpe_better = runs[1].bits_per_char < runs[0].bits_per_char;
  fmt::print(
      "A loss per token is not comparable across vocabularies (a token of {} characters\n"
      "is harder to guess than one character); bits per character are: the loss times\n"
      "tokens per character, over ln 2. Here the BPE model is {} by {} bits per\n"
      "character. Each of its windows covers {} times more text, and attention over\n"
      "the same text costs {} of the character model's scores. The same steps of the\n"
      "same B x T tokens are not quite the same compute: the BPE model has {} more\n"
      "parameters (a row of C per extra token) and its output layer is V = {} wide.\n",
      attn::num(runs[1].chars_per_token, 2), bpe_better ? "better" : "worse",
      attn::num(std::abs(runs[0].bits_per_char - runs[1].bits_per_char), 3),
      attn::num(runs[1].chars_per_token, 2),
      attn::num(1.0 / (runs[1].chars_per_token * runs[1].chars_per_token), 3),
      attn::grouped(static_cast<double>(runs[1].parameters) -
                    static_cast<double>(runs[0].parameters)),
      runs[1].vocab);
  attn::claim(std::isfinite(runs[0].bits_per_char) && std::isfinite(runs[1].bits_per_char),
              "both runs end with a finite loss");
}

}  // namespace ch13
