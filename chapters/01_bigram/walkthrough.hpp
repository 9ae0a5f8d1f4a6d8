// chapters/01_bigram/walkthrough.hpp: what chapter 01's sections compute (main.cpp) and how
// they are shown (show.cpp). Each section is a struct of results, computed by one function of
// main.cpp and printed by one show_ function.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/term/cli.hpp"
#include "attn/io/corpus.hpp"
#include "attn/io/text.hpp"
#include "attn/term/narrate.hpp"
#include "attn/model/bigram.hpp"

namespace ch01 {

// What every section reads: the corpus, its characters, its vocabulary and its two splits.
struct Data {
  attn::Corpus corpus;
  std::u32string text;  // the corpus as characters
  attn::Vocab vocab;    // V characters, sorted
  attn::Split split;    // 90% train, 10% validation tokens
};

// 1. The task. A short phrase from the corpus, encoded and decoded: the start of its first line
// with at least 12 characters (at most 24 of them).
struct Phrase {
  std::u32string text;
  std::vector<int> ids;    // encode(text)
  std::string round_trip;  // decode(ids), UTF-8
};

// 3. Counting: the best bigram table in closed form.
struct Counting {
  attn::Matrix counts;        // (V, V): counts[a, b] = how often b follows a in the train split
  attn::Matrix optimum;       // (V, V): log((counts + 1) / rowsum(counts + 1)), smoothed logits
  double floor_train;         // the train loss of the raw frequencies: no bigram table goes lower
  std::size_t unseen;         // validation pairs that never occur in the train split
  double opt_train, opt_val;  // the losses of `optimum`
};

// 4. Learning: the same table by gradient descent, from a table of zeros.
struct Learning {
  attn::Matrix logits;                    // (V, V), the learned table
  std::vector<attn::BigramReport> curve;  // every report, for the loss-curve figure
  double seconds = 0.0;                   // wall-clock time of the training
};

// Why the step size decays: the same training at constant step sizes, each from a table of zeros
// with the same batches (the same seed). At a constant step SGD does not settle: every batch is a
// noisy estimate of the gradient, and the table jitters around the optimum by an amount that
// grows with the step.
struct ConstantStep {
  float lr;
  double end;    // train loss after the last step
  bool blew_up;  // finite loss more than halfway back up to log V, or not finite
};

// ---- show.cpp: one function per section, in teaching order.
void show_task(const Data& d, const Phrase& phrase, std::size_t n_tokens);                // 1
void show_context_and_target(const Data& d, const attn::Batch& batch);                    // 2
void show_counting(const Data& d, const Counting& c, const attn::CommonOptions& common);  // 3
void show_learning(const Data& d, const Counting& c, const Learning& l,                   // 4
                   const attn::BigramTrainConfig& train, const attn::CommonOptions& common);
void show_constant_steps(const std::vector<ConstantStep>& rows,
                         const attn::BigramTrainConfig& train, double floor_train,
                         const attn::BigramReport& decayed);
void show_sample(const std::string& start, std::size_t length, float temperature,  // 5
                 const std::string& sampled);
using attn::char_name;  // 'a', '\n', ' ' (attn/term/narrate.hpp)

// ---- main.cpp
// The reports at the steps the user asked for (--eval-interval, and the last step).
std::vector<attn::BigramReport> printed_reports(const Learning& l,
                                                const attn::BigramTrainConfig& train);

}  // namespace ch01
