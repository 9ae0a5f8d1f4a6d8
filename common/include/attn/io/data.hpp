// attn/io/data.hpp: the data a model trains on (chapter 01's bigram, chapter 09's GPT): the
// tokens split into train and validation text, and batches of random windows drawn from a split.
// The tokens come from a vocabulary (attn/io/text.hpp).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/core/xt.hpp"

namespace attn {

// The first 90% of the tokens train the model; the last 10% measure it.
struct Split {
  std::vector<int> train;
  std::vector<int> val;
};
Split train_val_split(std::span<const int> tokens, double train_fraction = 0.9);

// A batch of B random windows of length T: x = data[i : i+T], y = data[i+1 : i+T+1].
// Throws std::invalid_argument if B or T is 0 or if data has fewer than T + 1 tokens.
struct Batch {
  xt::xtensor<int, 2> x;  // (B, T) inputs
  xt::xtensor<int, 2> y;  // (B, T) targets: the next token at every position
};
Batch get_batch(std::span<const int> data, std::size_t batch_size, std::size_t block_size,
                Rng& rng);
// The same into `out`, reusing its buffers when they already have the shape (the training loop
// of chapter 09 draws a batch every step without allocating).
void get_batch(std::span<const int> data, std::size_t batch_size, std::size_t block_size, Rng& rng,
               Batch& out);

}  // namespace attn
