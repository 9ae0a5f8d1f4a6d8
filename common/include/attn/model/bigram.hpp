// attn/model/bigram.hpp: the bigram language model, two ways (chapter 01).
// A bigram model predicts the next character from the current one only: a (V, V) table whose
// row a holds the scores (logits) for every next character b.
//   1. Counting: N[a, b] = how often b follows a. The maximum-likelihood table is
//      log((N + alpha) / rowsum) -- the closed-form optimum of the cross-entropy.
//   2. Learning: start from zeros and follow the hand-derived gradient (softmax - onehot) of the
//      cross-entropy with mini-batch gradient descent. It should approach the counting optimum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/io/text.hpp"
#include "attn/io/data.hpp"  // Split, get_batch
#include "attn/core/xt.hpp"

namespace attn {

// (V, V) counts: counts(a, b) = number of i with tokens[i] == a and tokens[i+1] == b.
// Throws std::invalid_argument for a token outside [0, V).
Matrix bigram_counts(std::span<const int> tokens, std::size_t V);

// The counting model as logits: log((counts + alpha) / rowsum(counts + alpha)). alpha > 0 keeps
// unseen pairs finite (add-alpha smoothing).
Matrix bigram_logits_from_counts(const Matrix& counts, float alpha = 1.0f);

// Mean cross-entropy of a bigram logits table on a token stream: predict tokens[i+1] from
// tokens[i] for every i.
double bigram_loss(const Matrix& logits, std::span<const int> tokens);

// Mini-batch gradient descent on the (V, V) logits table.
struct BigramTrainConfig {
  std::size_t steps = 3000;     // optimizer steps, e.g. the lecture's 3000
  std::size_t batch_size = 32;  // B windows per step
  std::size_t block_size = 8;   // T characters per window
  // Plain SGD step size at step 1, decayed linearly toward 0 by the last step. Large because the
  // gradient of a mean over B*T positions is small per row. At a constant rate SGD stalls above
  // the optimum by an amount that grows with the step (chapter 01 measures it); the decay lets
  // the late, small steps average the batch noise away.
  float learning_rate = 64.0f;
  bool decay = true;                // false: the same step size at every step
  std::size_t eval_interval = 500;  // report train/val loss every this many steps (and at the end)
};

struct BigramReport {
  std::size_t step;
  double train_loss;  // on the whole training split
  double val_loss;    // on the whole validation split
};

// The gradient of the mean cross-entropy with respect to (N, V) logits, given N targets: by
// default attn::cross_entropy_grad; chapter 01's --mine passes the learner's ex01.3 instead.
using CrossEntropyGradFn = Matrix (*)(const Matrix& logits, std::span<const int> targets);
// One token drawn from softmax(logits / temperature): by default attn::sample_logits.
using SampleFn = int (*)(std::span<const float> logits, float temperature, Rng& rng);

// Trains `logits` (V, V) in place and calls `on_report` before the first step (step 0), every
// eval_interval steps and after the last one. Each step gathers the table rows of the batch's
// inputs, asks `grad` for the gradient of the loss on those rows, and scatter-adds it back into
// the table. Throws std::invalid_argument for zero sizes or splits shorter than block_size + 1.
void train_bigram(Matrix& logits, const Split& split, const BigramTrainConfig& config, Rng& rng,
                  const std::function<void(const BigramReport&)>& on_report = {},
                  CrossEntropyGradFn grad = nullptr);

// Generates `n` tokens starting after `start`, sampling each from the table row of the previous
// token (with temperature) with `sample` (default attn::sample_logits).
std::vector<int> bigram_generate(const Matrix& logits, int start, std::size_t n, float temperature,
                                 Rng& rng, SampleFn sample = nullptr);

}  // namespace attn
