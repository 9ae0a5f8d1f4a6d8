// chapters/09_training/ladder.cpp: --ladder, the lecture's loss table rebuilt row by row: six
// models, each adding one idea, each trained from scratch with the lecture's settings, their val
// loss printed beside the lecture's (docs/09-training.md, "The lecture's ladder").
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/term/narrate.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/ops/loss.hpp"
#include "attn/ops/optim.hpp"
#include "training.hpp"

namespace ch09 {

namespace {

using attn::Matrix;
using attn::num;
using attn::section;
using Clock = std::chrono::steady_clock;

// The lecture's numbers are val losses on Tiny Shakespeare (1,115,394 bytes, the file
// scripts/get-data.sh fetches and checks): its FNV-1a 64-bit hash, to know when a comparison holds.
constexpr std::uint64_t kTinyShakespeareFnv1a64 = 0x4016c93c3be74c18;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct LadderRow {
  std::string_view what;
  double lecture_val;   // the val loss the lecture reports for this row
  bool bigram = false;  // row 0: chapter 01's V x V table, no attention at all
  attn::ModelSpec model;
};

std::vector<LadderRow> ladder_rows(std::size_t V) {
  // Every attention row: n_embd 32, block 8, the lecture's nn defaults for the initial weights
  // and a separate output head with bias (lm_head = nn.Linear(n_embd, vocab_size)).
  attn::ModelChoices base;
  base.vocab_size = V;
  base.block_size = 8;
  base.n_embd = 32;
  base.n_heads = 1;
  base.n_layers = 1;
  base.ablations.tied_head = false;
  base.ablations.layer_norm = false;
  base.ablations.residual = false;
  base.ablations.ffn = false;
  base.ablations.attn_proj = false;
  base.activation = attn::Activation::relu;
  std::vector<LadderRow> rows;
  rows.push_back({"bigram table (chapter 01), AdamW", 2.49, true, attn::resolve_spec(base)});
  attn::ModelChoices m = base;
  rows.push_back({"+ positions, one head (hs 32)", 2.40, false, attn::resolve_spec(m)});
  m.n_heads = 4;
  rows.push_back({"four heads of 8", 2.28, false, attn::resolve_spec(m)});
  m.ablations.ffn = true;
  m.ffn_hidden = 32;
  rows.push_back({"+ FFN (C -> C, ReLU)", 2.24, false, attn::resolve_spec(m)});
  m.ablations.residual = true;
  m.ablations.attn_proj = true;
  m.ffn_hidden.reset();  // 4 C
  m.n_layers = 3;
  rows.push_back({"+ residuals, projection, 4C FFN, 3 blocks", 2.08, false, attn::resolve_spec(m)});
  m.ablations.layer_norm = true;
  rows.push_back({"+ LayerNorm", 2.06, false, attn::resolve_spec(m)});
  return rows;
}

// The bigram row, the lecture's bigram script: logits = table[token], table (V, V) drawn N(0, 1)
// like nn.Embedding, AdamW (lr 1e-2, torch's default weight decay 0.01), B 32, T 8.
double train_bigram_row(const Data& d, std::size_t steps, std::size_t eval_iters,
                        std::uint64_t seed, double* train_loss) {
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
  // The val estimate first, from the same generator as before; then the train split's.
  const auto mean_loss = [&](std::span<const int> data, attn::Rng& rng) {
    double sum = 0.0;
    for (std::size_t i = 0; i < eval_iters; ++i) {
      const attn::Batch b = attn::get_batch(data, B, T, rng);
      gather(b.x);
      sum += attn::cross_entropy(logits, std::span<const int>(b.y.data(), b.y.size()));
    }
    return sum / static_cast<double>(eval_iters);
  };
  attn::Rng eval_rng(seed + steps, 202);
  const double val = mean_loss(d.split.val, eval_rng);
  attn::Rng train_rng(seed + steps, 203);
  *train_loss = mean_loss(d.split.train, train_rng);
  return val;
}

// ---- Why each row helps: measured on the row's model (its reason, in numbers).
struct RowWhy {
  bool measured = false;
  double train = 0.0, val = 0.0;        // the estimates of both splits
  std::vector<double> head_distance;    // layer 0: how far back each head looks, on average
  double grad_ratio = 0.0;              // at init: |grad of block 0| / |grad of block L-1|
  double grad_ratio_no_residual = 0.0;  // the same model without its skip connections
  std::vector<double> stream_rms;       // trained: the embeddings' rms, then after each block
};

// The mean distance t - s a head's attention looks back, over a batch of val windows: for each
// head of layer 0, sum_s p(t, s) (t - s) averaged over every query.
std::vector<double> head_distances(const attn::LmWeights& w, const attn::ModelSpec& m,
                                   const attn::Batch& b) {
  const attn::LmForward f = attn::lm_forward_with_weights(b.x, w, m);
  const attn::Tensor<4>& p = f.weights[0];  // (B, H, T, T)
  const std::size_t B = p.shape()[0], H = p.shape()[1], T = p.shape()[2];
  std::vector<double> out(H, 0.0);
  for (std::size_t h = 0; h < H; ++h) {
    for (std::size_t bi = 0; bi < B; ++bi)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t u = 0; u <= t; ++u)
          out[h] += static_cast<double>(p(bi, h, t, u)) * static_cast<double>(t - u);
    out[h] /= static_cast<double>(B * T);
  }
  return out;
}

// At initialisation, on one batch: the gradient norm of the first block over the last's.
double first_over_last_gradient(const attn::ModelSpec& m, std::uint64_t seed,
                                const attn::Batch& b) {
  attn::TrainConfig c;
  c.model = m;
  c.init = attn::InitScheme::pytorch;
  c.seed = seed;
  attn::TrainState s = attn::train_init(c);
  (void)attn::lm_forward_backward(b.x, b.y, s.weights, m, s.grads, s.cache);
  const auto norm = [](attn::BlockWeights& g) {
    double sq = 0.0;
    for (attn::Matrix* t :
         {&g.attn.w_q, &g.attn.w_k, &g.attn.w_v, &g.attn.w_o, &g.ffn.w1, &g.ffn.w2})
      for (const float x : *t) sq += static_cast<double>(x) * static_cast<double>(x);
    return std::sqrt(sq);
  };
  return norm(s.grads.blocks.front()) / std::max(norm(s.grads.blocks.back()), 1e-30);
}

// The rms of the residual stream: after the embeddings, then after each block (evaluation).
std::vector<double> stream_rms(const attn::LmWeights& w, const attn::ModelSpec& m,
                               const attn::Batch& b) {
  const std::size_t B = b.x.shape()[0], T = b.x.shape()[1], C = m.n_embd;
  attn::Tensor<3> x(std::array<std::size_t, 3>{B, T, C});
  for (std::size_t i = 0; i < B * T; ++i)
    for (std::size_t c = 0; c < C; ++c)
      x.data()[i * C + c] =
          w.wte(static_cast<std::size_t>(b.x.data()[i]), c) + w.wpe(i % T, c);  // (B, T, C)
  const auto rms = [](const attn::Tensor<3>& t) {
    double sq = 0.0;
    for (const float v : t) sq += static_cast<double>(v) * static_cast<double>(v);
    return std::sqrt(sq / static_cast<double>(t.size()));
  };
  std::vector<double> out{rms(x)};
  const attn::BlockConfig bc = attn::lm_block_config(m);
  for (const attn::BlockWeights& block : w.blocks) {
    x = attn::block_forward(x, block, bc).out;
    out.push_back(rms(x));
  }
  return out;
}

std::string list_text(const std::vector<double>& v, int precision, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out += (i == 0 ? "" : std::string(sep)) + num(v[i], precision);
  return out;
}

// One line per row: what the idea it adds does, in the numbers measured on it.
void show_why(const std::vector<std::size_t>& chosen, const std::vector<RowWhy>& why,
              std::size_t T) {
  fmt::print("\nWhy each row helps, measured on its trained model:\n");
  // Uniform attention over the t + 1 visible positions looks back t / 2 on average.
  const double uniform = static_cast<double>(T - 1) / 4.0;
  for (const std::size_t r : chosen) {
    const RowWhy& y = why[r];
    const std::string fit = fmt::format("train {} / val {}", num(y.train), num(y.val));
    std::string line;
    if (r == 0) {
      line = "one character of context: the table only knows which character came last";
    } else if (r == 1) {
      const double d = y.head_distance.at(0);
      const bool mostly_current = d < 0.5;
      attn::claim(mostly_current == (d < 0.5), "the head's distance sentence");
      line =
          fmt::format("its head looks back {} characters on average ({} for uniform attention): {}",
                      num(d, 2), num(uniform, 2),
                      mostly_current ? "mostly the current character, with a little of the "
                                       "ones before it, which the bigram cannot see"
                                     : "context the bigram cannot see");
    } else if (r == 2) {
      const auto [lo, hi] = std::minmax_element(y.head_distance.begin(), y.head_distance.end());
      line = fmt::format("its four heads look back {} characters: {}",
                         list_text(y.head_distance, 2, ", "),
                         *hi - *lo >= 0.5 ? "different heads, different distances, read at once"
                                          : "four views of the past, read at once");
    } else if (r == 3) {
      line = "a per-token computation on what attention gathered";
      if (why[2].measured) {
        const bool lower = y.train < why[2].train;
        line += fmt::format(
            ": train loss {} against {} for row 2, {}", num(y.train), num(why[2].train),
            lower ? "so it fits the text better" : "no better fit yet at this number of steps");
      }
    } else if (r == 4) {
      attn::claim(y.grad_ratio > y.grad_ratio_no_residual,
                  "residuals bring more gradient to the first block");
      line = fmt::format(
          "at init the first block gets {}x the last block's gradient norm; "
          "without the skip connections {}x: residuals carry the gradient down "
          "through 3 blocks",
          num(y.grad_ratio, 2), num(y.grad_ratio_no_residual, 3));
    } else {
      const double growth = y.stream_rms.back() / y.stream_rms.front();
      line = fmt::format(
          "the residual stream's rms goes {} from the embeddings through the 3 blocks "
          "({}x); each LayerNorm hands its sub-layer rms 1 whatever that drift",
          list_text(y.stream_rms, 2, " -> "), num(growth, 1));
      if (why[4].measured) {
        const double change = y.val - why[4].val;
        line += std::abs(change) < 0.02
                    ? fmt::format(
                          ", a drift too small at 3 blocks for LayerNorm to matter here: "
                          "val {} against {} without",
                          num(y.val), num(why[4].val))
                    : fmt::format(": val {} against {} without", num(y.val), num(why[4].val));
      }
    }
    // Wrapped at 92 columns under the row number.
    std::string text = wrap_text(fmt::format("{} ({})", line, fit), 86);
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
      text.insert(at + 1, 6, ' ');
    fmt::print("  {:<3} {}\n", r, text);
  }
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
  // The lecture's column is for Tiny Shakespeare: on another text the two are not comparable.
  const bool tiny_shakespeare = attn::fnv1a64(corpus.text) == kTinyShakespeareFnv1a64;
  fmt::print("Chapter 09: training the character GPT (--ladder)\nseed {}, corpus {}\n", common.seed,
             corpus.origin);
  section(1, "The lecture's ladder");
  fmt::print(
      "Each row is trained from scratch on {} (V = {}),\n"
      "with n_embd 32, block 8, batch 32, AdamW lr 1e-3 for {} steps (the bigram row: lr 1e-2,\n"
      "{} steps), then the val loss over {} batches.\n{}\n",
      corpus.origin, d.vocab.size(), steps == 0 ? 5000 : steps, steps == 0 ? 3000 : steps,
      eval_iters,
      tiny_shakespeare
          ? "The lecture column is the val loss the lecture reports for the same row on Tiny\n"
            "Shakespeare, this corpus.\n"
          : "The lecture column is the val loss the lecture reports on Tiny Shakespeare, not on\n"
            "this corpus: a different text has different losses, so no diff is shown (run with\n"
            "--data and Tiny Shakespeare, scripts/get-data.sh, to compare).\n");
  fmt::print("  {:<3} {:<44} {:>8} {:>9} {:>8} {:>7}\n", "row", "model", "params", "val loss",
             "lecture", "diff");
  std::size_t within = 0;
  std::vector<RowWhy> why(rows.size());
  attn::Rng probe_rng(common.seed, 404);
  const attn::Batch probe = attn::get_batch(d.split.val, 32, 8, probe_rng);  // (32, 8) windows
  for (const std::size_t r : chosen) {
    const LadderRow& row = rows[r];
    const Clock::time_point start = Clock::now();
    double val = 0.0;
    std::size_t params = 0;
    if (row.bigram) {
      val = train_bigram_row(d, steps == 0 ? 3000 : steps, eval_iters, common.seed, &why[r].train);
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
      const attn::EvalRecord e =
          attn::estimate_loss(s.weights, c.model, d.split, 32, eval_iters, c.seed, s.step);
      val = e.val_loss;
      why[r].train = e.train_loss;
      why[r].head_distance = head_distances(s.weights, c.model, probe);
      if (c.model.n_layers > 1) {
        why[r].grad_ratio = first_over_last_gradient(c.model, c.seed, probe);
        const attn::ModelSpec no_res = attn::with_choices(
            c.model, [](attn::ModelChoices& m) { m.ablations.residual = false; });
        why[r].grad_ratio_no_residual = first_over_last_gradient(no_res, c.seed, probe);
        why[r].stream_rms = stream_rms(s.weights, c.model, probe);
      }
    }
    why[r].val = val;
    why[r].measured = true;
    const double diff = val - row.lecture_val;
    if (std::abs(diff) <= 0.05) ++within;
    fmt::print("  {:<3} {:<44} {:>8} {:>9} {:>8} {:>7}{}\n", r, row.what, params, num(val),
               num(row.lecture_val, 2),
               tiny_shakespeare ? fmt::format("{:+.3f}", diff) : std::string("-"),
               common.timing ? fmt::format("  ({:.1f} s)", seconds_since(start)) : std::string());
    std::fflush(stdout);
  }
  if (tiny_shakespeare) {
    fmt::print("\n{} of {} rows within 0.05 of the lecture's number.\n", within, chosen.size());
  } else {
    fmt::print("\nNot compared with the lecture: its numbers are for Tiny Shakespeare.\n");
  }
  show_why(chosen, why, 8);
  if (const char* check = std::getenv("ATTN_LADDER_CHECK"); check != nullptr && *check == '1') {
    if (!tiny_shakespeare) {
      throw std::runtime_error(
          "ATTN_LADDER_CHECK compares with the lecture: it needs Tiny Shakespeare");
    }
    if (within != chosen.size()) {
      throw std::runtime_error("a ladder row is further than 0.05 from the lecture's number");
    }
  }
}

}  // namespace ch09
