// chapters/09_training/show.hpp: what the sections of chapter 09 compute (the structs main.cpp
// fills, in the page's order) and the functions of show.cpp that print them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/corpus.hpp"
#include "attn/io/text.hpp"
#include "attn/io/data.hpp"
#include "attn/train/train.hpp"
#include "training.hpp"

namespace ch09 {

// The text of a sample behind a margin, line by line, control characters escaped.
void print_sample(std::string_view text);

// The first lines of a run: the chapter, the seed, the corpus and whose functions run.
void show_header(std::uint64_t seed, const std::string& corpus_origin, bool mine);

// ---- 1. The data: two windows of a batch, and y is x shifted by one.
struct DataDemo {
  attn::Batch batch;  // x, y (2, T)
  bool shifted;       // y is x shifted by one
};
void show_data(const DataDemo& r, const attn::Corpus& corpus, const Data& d);

// ---- 2. The model before training, and the bar to beat.
struct Before {
  std::size_t params;
  double val_loss;    // untrained (fresh runs only)
  double log_v;       // the loss of a uniform guess
  double bigram_val;  // chapter 01's counting table, trained on the train split
};
void show_before(const Before& b, const attn::TrainConfig& c, std::size_t V, bool fresh);

// ---- 3. One training step, written out (step_by_hand, main.cpp).
struct OneStep {
  std::size_t tensors;
  double loss, grad_norm;  // before the update; the norm before clipping
  float lr;
  double loss_after;      // the same batch after the update
  double largest_move;    // max |w_after - w_before| over every weight
  double largest_weight;  // max |w_before|
  double library_diff;    // max |difference| to attn::train_step_on's weights
  // max |difference| / (1 + |weight|): the measure of ex09.1's tests (doctest's Approx), which
  // accept 1e-6 of it, the float rounding of an update computed in another order.
  double library_rel_diff = 0;
  // Who moved by about lr: on the first step Adam moves a weight by lr * g / (|g| + eps), so
  // every weight with a gradient well above eps moves by nearly lr, and one with a zero gradient
  // (the embedding row of a character absent from the batch) only by its decay.
  std::size_t weights = 0;      // every weight of the model
  std::size_t near_lr = 0;      // moved by at least lr / 2
  std::size_t zero_grad = 0;    // exactly 0 gradient
  std::size_t absent_rows = 0;  // rows of wte with a zero gradient: characters not in the batch
  double zero_grad_move = 0;    // the largest move of a weight with a zero gradient
  std::size_t slow = 0;         // a nonzero gradient, and moved by less than lr / 2
  double slow_grad = 0;         // the largest |g| of those
};
void show_one_step(const OneStep& r, const attn::TrainConfig& c, bool mine);

// ---- 4. Training: the best estimate against the bigram table, and the train/val gap.
void show_training(const attn::TrainState& s, const RunReport& r, const attn::TrainConfig& c,
                   const Data& d, double bigram_val, bool timing);

// ---- 6. What the trained heads attend to.
struct HeadStats {
  double previous = 0.0;    // attention on position t - 1 (queries t >= 1)
  double self = 0.0;        // on position t itself
  double same_char = 0.0;   // on earlier positions holding the same character
  double line_start = 0.0;  // on the first character of the query's line, or the newline before
  double distance = 0.0;    // mean distance t - s, weighted
};

struct HeadMap {
  std::size_t layer, head;
  attn::Matrix weights;  // (T, T): row t, the attention of query t over the keys
  HeadStats stats;
};
struct HeadMaps {
  std::span<const int> ids;  // the window, (T,)
  double loss;               // the model's loss on it
  HeadStats chance;          // uniform causal attention over the same window
  std::vector<HeadMap> heads;
};
void show_heads(const HeadMaps& maps, const attn::Vocab& vocab,
                const std::optional<std::filesystem::path>& svg_dir, int number);

}  // namespace ch09
