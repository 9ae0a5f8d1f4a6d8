// chapters/09_training/ladder.cpp: --ladder, the lecture's loss table rebuilt row by row: six
// models, each adding one idea, each trained from scratch with the lecture's settings, their val
// loss printed beside the lecture's (docs/09-training.md, "The lecture's ladder").
#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/narrate.hpp"
#include "attn/ops/loss.hpp"
#include "attn/train/optim.hpp"
#include "training.hpp"

namespace ch09 {

namespace {

using attn::Matrix;
using attn::num;
using attn::section;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct LadderRow {
  std::string_view what;
  double lecture_val;   // the val loss the lecture reports for this row
  bool bigram = false;  // row 0: chapter 01's V x V table, no attention at all
  attn::LmConfig model;
};

std::vector<LadderRow> ladder_rows(std::size_t V) {
  // Every attention row: n_embd 32, block 8, the lecture's nn defaults for the initial weights
  // and a separate output head with bias (lm_head = nn.Linear(n_embd, vocab_size)).
  attn::LmConfig base;
  base.vocab_size = V;
  base.block_size = 8;
  base.n_embd = 32;
  base.n_heads = 1;
  base.n_layers = 1;
  base.tied_head = false;
  base.use_layer_norm = false;
  base.residual = false;
  base.use_ffn = false;
  base.attn_proj = false;
  base.activation = attn::Activation::relu;
  std::vector<LadderRow> rows;
  rows.push_back({"bigram table (chapter 01), AdamW", 2.49, true, base});
  attn::LmConfig m = base;
  rows.push_back({"+ positions, one head (hs 32)", 2.40, false, m});
  m.n_heads = 4;
  rows.push_back({"four heads of 8", 2.28, false, m});
  m.use_ffn = true;
  m.ffn_hidden = 32;
  rows.push_back({"+ FFN (C -> C, ReLU)", 2.24, false, m});
  m.residual = true;
  m.attn_proj = true;
  m.ffn_hidden = 0;
  m.n_layers = 3;
  rows.push_back({"+ residuals, projection, 4C FFN, 3 blocks", 2.08, false, m});
  m.use_layer_norm = true;
  rows.push_back({"+ LayerNorm", 2.06, false, m});
  return rows;
}

// The bigram row, the lecture's bigram script: logits = table[token], table (V, V) drawn N(0, 1)
// like nn.Embedding, AdamW (lr 1e-2, torch's default weight decay 0.01), B 32, T 8.
double train_bigram_row(const Data& d, std::size_t steps, std::size_t eval_iters,
                        std::uint64_t seed) {
  const std::size_t V = d.vocab.size(), B = 32, T = 8;
  attn::Rng init(seed);
  Matrix table = attn::randn(init, V, V, 1.0f);  // (V, V)
  Matrix grad = xt::zeros<float>({V, V});
  Matrix m = xt::zeros<float>({V, V}), v = xt::zeros<float>({V, V});
  Matrix logits({B * T, V});
  attn::Rng data_rng(seed, 101);
  const attn::AdamWConfig adam{0.9f, 0.999f, 1e-8f, 0.01f};
  const auto gather = [&](const Tokens& x) {
    for (std::size_t i = 0; i < B * T; ++i)
      std::copy_n(table.data() + static_cast<std::size_t>(x.data()[i]) * V, V,
                  logits.data() + i * V);
  };
  for (std::size_t step = 1; step <= steps; ++step) {
    const attn::Batch b = attn::get_batch(d.split.train, B, T, data_rng);
    gather(b.x);
    const attn::LossGrad lg =
        attn::cross_entropy_with_grad(logits, std::span<const int>(b.y.data(), b.y.size()));
    std::fill(grad.begin(), grad.end(), 0.0f);
    // Row `token` of the table produced logits row i: its gradient collects every such row.
    for (std::size_t i = 0; i < B * T; ++i) {
      float* g = grad.data() + static_cast<std::size_t>(b.x.data()[i]) * V;
      const float* dl = lg.grad.data() + i * V;
      for (std::size_t j = 0; j < V; ++j) g[j] += dl[j];
    }
    attn::adamw_update(std::span<float>(table.data(), table.size()),
                       std::span<const float>(grad.data(), grad.size()),
                       std::span<float>(m.data(), m.size()), std::span<float>(v.data(), v.size()),
                       1e-2f, adam.weight_decay, step, adam);
  }
  attn::Rng eval_rng(seed + steps, 202);
  double sum = 0.0;
  for (std::size_t i = 0; i < eval_iters; ++i) {
    const attn::Batch b = attn::get_batch(d.split.val, B, T, eval_rng);
    gather(b.x);
    sum += attn::cross_entropy(logits, std::span<const int>(b.y.data(), b.y.size()));
  }
  return sum / static_cast<double>(eval_iters);
}

std::vector<std::size_t> parse_rows(const std::string& text, std::size_t n) {
  std::vector<std::size_t> rows;
  if (text.empty()) {
    for (std::size_t i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    std::size_t used = 0;
    unsigned long r = 0;
    try {
      r = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || r >= n) {
      throw attn::UsageError(fmt::format(
          "--ladder-rows expects row numbers 0 to {} separated by commas, got '{}'", n - 1, text));
    }
    rows.push_back(r);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return rows;
}

}  // namespace

void run_ladder(const attn::CommonOptions& common, std::size_t steps, const std::string& which) {
  const attn::Corpus corpus = attn::load_corpus(common.data);
  const Data d = prepare_data(corpus);
  const std::vector<LadderRow> rows = ladder_rows(d.vocab.size());
  const std::vector<std::size_t> chosen = parse_rows(which, rows.size());
  check_data_fits(d, 8);
  const std::size_t eval_iters = 200;
  section(1, "The lecture's ladder");
  fmt::print(
      "Each row is trained from scratch on {} (V = {}): n_embd 32, block 8, batch 32, AdamW\n"
      "lr 1e-3 for {} steps (the bigram row: lr 1e-2, {} steps), then the val loss over {} "
      "batches.\n\n",
      corpus.origin, d.vocab.size(), steps == 0 ? 5000 : steps, steps == 0 ? 3000 : steps,
      eval_iters);
  fmt::print("  {:<3} {:<44} {:>8} {:>9} {:>8} {:>7}\n", "row", "model", "params", "val loss",
             "lecture", "diff");
  std::size_t within = 0;
  for (const std::size_t r : chosen) {
    const LadderRow& row = rows[r];
    const Clock::time_point start = Clock::now();
    double val = 0.0;
    std::size_t params = 0;
    if (row.bigram) {
      val = train_bigram_row(d, steps == 0 ? 3000 : steps, eval_iters, common.seed);
      params = d.vocab.size() * d.vocab.size();
    } else {
      attn::TrainConfig c;
      c.model = row.model;
      c.init = attn::InitScheme::pytorch;
      c.batch_size = 32;
      c.steps = steps == 0 ? 5000 : steps;
      c.schedule.lr = 1e-3f;
      c.adam.weight_decay = 0.01f;  // torch.optim.AdamW's default, as the lecture leaves it
      c.seed = common.seed;
      attn::TrainState s = attn::train_init(c);
      params = attn::lm_parameter_count(s.weights);
      while (s.step < c.steps) attn::train_step(s, c, d.split.train);
      val =
          attn::estimate_loss(s.weights, c.model, d.split, 32, eval_iters, c.seed, s.step).val_loss;
    }
    const double diff = val - row.lecture_val;
    if (std::abs(diff) <= 0.05) ++within;
    fmt::print("  {:<3} {:<44} {:>8} {:>9} {:>8} {:>+7.3f}{}\n", r, row.what, params, num(val),
               num(row.lecture_val, 2), diff,
               common.timing ? fmt::format("  ({:.1f} s)", seconds_since(start)) : std::string());
    std::fflush(stdout);
  }
  fmt::print("\n{} of {} rows within 0.05 of the lecture's number.\n", within, chosen.size());
  if (const char* check = std::getenv("ATTN_LADDER_CHECK");
      check != nullptr && *check == '1' && within != chosen.size()) {
    throw std::runtime_error("a ladder row is further than 0.05 from the lecture's number");
  }
}

}  // namespace ch09
