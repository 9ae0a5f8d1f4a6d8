// bigram.cpp: the bigram language model, counted and learned (chapter 01).
// The counting table is the closed-form optimum of the cross-entropy; gradient descent with the
// hand-derived gradient (softmax - onehot) should walk from a table of zeros to nearly the same
// loss. Evaluation goes through pair counts, so scoring a whole split costs O(V^2), not O(n).
#include "attn/model/bigram.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/check.hpp"
#include "attn/core/limits.hpp"
#include "attn/ops/loss.hpp"
#include "attn/model/sample.hpp"
#include "attn/ops/softmax.hpp"

namespace attn {

namespace {

// How often each pair (a, b) occurs in a token stream: n[a * V + b], and the number of pairs.
struct PairCounts {
  std::size_t V = 0;
  std::vector<double> n;  // (V * V,), exact: whole numbers far below 2^53
  std::size_t pairs = 0;  // = tokens.size() - 1
};

// One O(n) pass over the stream; every token is checked against [0, V) on the way.
PairCounts count_pairs(std::span<const int> tokens, std::size_t V, const char* function,
                       const char* where) {
  PairCounts pc{V, std::vector<double>(V * V, 0.0), 0};
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= V) {
      shape_error(function, fmt::format("token ids in [0, {}){}", V, where),
                  fmt::format("{} at index {}", tokens[i], i));
    }
    if (i == 0) continue;
    const auto a = static_cast<std::size_t>(tokens[i - 1]);
    const auto b = static_cast<std::size_t>(tokens[i]);
    pc.n[a * V + b] += 1.0;
  }
  pc.pairs = tokens.empty() ? 0 : tokens.size() - 1;
  return pc;
}

// Mean cross-entropy of `logits` (V, V) over the pairs:
//   loss = -(1/N) sum_{a,b} n[a, b] * log_softmax(logits[a])[b]
// Grouping the N predictions by pair turns O(N * V) work into O(V^2).
double loss_from_pairs(const Matrix& logits, const PairCounts& pc) {
  const std::size_t V = pc.V;
  double total = 0.0;
  for (std::size_t a = 0; a < V; ++a) {
    const double* n_row = pc.n.data() + a * V;  // (V,) counts of pairs starting with a
    double row_pairs = 0.0;
    for (std::size_t b = 0; b < V; ++b) row_pairs += n_row[b];
    if (row_pairs == 0.0) continue;          // a never precedes anything: its row is never used
    const float* l = logits.data() + a * V;  // (V,)
    // 1. log-sum-exp of row a, shifted by its maximum (stable, as in softmax).
    double m = static_cast<double>(l[0]);
    for (std::size_t b = 1; b < V; ++b) m = std::max(m, static_cast<double>(l[b]));
    double s = 0.0;
    for (std::size_t b = 0; b < V; ++b) s += std::exp(static_cast<double>(l[b]) - m);
    const double lse = m + std::log(s);
    // 2. -sum_b n[a, b] * (l[b] - lse). Skip n = 0 so a -inf logit never meets a zero count
    //    (0 * -inf = NaN).
    for (std::size_t b = 0; b < V; ++b)
      if (n_row[b] > 0.0) total -= n_row[b] * (static_cast<double>(l[b]) - lse);
  }
  return total / static_cast<double>(pc.pairs);
}

// The table must be square: row a (current token) holds one logit per next token b.
std::size_t check_table(const Matrix& logits, const char* function, const char* name) {
  const std::size_t V = logits.shape()[0];
  if (V == 0 || logits.shape()[1] != V) {
    shape_error(function, fmt::format("{} of shape (V, V) with V >= 1", name),
                shape_str(logits.shape()));
  }
  return V;
}

}  // namespace

Matrix bigram_counts(std::span<const int> tokens, std::size_t V) {
  require(V >= 1, "attn::bigram_counts", "V must be at least 1, got 0");
  const PairCounts pc = count_pairs(tokens, V, "attn::bigram_counts", "");
  checked_elements({V, V}, "attn::bigram_counts: (V, V)");
  Matrix counts({V, V});  // (V, V)
  for (std::size_t i = 0; i < V * V; ++i) counts.data()[i] = static_cast<float>(pc.n[i]);
  return counts;
}

Matrix bigram_logits_from_counts(const Matrix& counts, float alpha) {
  const char* fn = "attn::bigram_logits_from_counts";
  const std::size_t V = check_table(counts, fn, "counts");
  require(std::isfinite(alpha) && alpha > 0.0f, fn, [&] {
    return fmt::format("alpha must be > 0 (it keeps unseen pairs finite), got {}", alpha);
  });
  Matrix logits({V, V});  // (V, V)
  for (std::size_t a = 0; a < V; ++a) {
    const float* c = counts.data() + a * V;  // (V,)
    // 1. Smooth: every pair gets alpha extra counts, so none has probability 0 (log 0 = -inf).
    // 2. Normalise the row: P(b | a) = (N[a, b] + alpha) / sum_b' (N[a, b'] + alpha).
    // 3. Take the log: these are logits whose softmax is exactly P(. | a).
    double row_sum = 0.0;
    for (std::size_t b = 0; b < V; ++b) {
      require(c[b] >= 0.0f, fn,
              [&] { return fmt::format("counts must be >= 0, got {} at ({}, {})", c[b], a, b); });
      row_sum += static_cast<double>(c[b]) + static_cast<double>(alpha);
    }
    const double log_row_sum = std::log(row_sum);
    for (std::size_t b = 0; b < V; ++b) {
      const double smoothed = static_cast<double>(c[b]) + static_cast<double>(alpha);
      logits(a, b) = static_cast<float>(std::log(smoothed) - log_row_sum);
    }
  }
  return logits;
}

double bigram_loss(const Matrix& logits, std::span<const int> tokens) {
  const char* fn = "attn::bigram_loss";
  const std::size_t V = check_table(logits, fn, "logits");
  require(tokens.size() >= 2, fn, [&] {
    return fmt::format("need at least 2 tokens (one pair to predict), got {}", tokens.size());
  });
  // 1. Count the pairs once, O(n). 2. Score every pair type once, O(V^2).
  return loss_from_pairs(logits, count_pairs(tokens, V, fn, ""));
}

void train_bigram(Matrix& logits, const Split& split, const BigramTrainConfig& config, Rng& rng,
                  const std::function<void(const BigramReport&)>& on_report,
                  CrossEntropyGradFn grad) {
  const char* fn = "attn::train_bigram";
  const std::size_t V = check_table(logits, fn, "logits");
  const std::size_t B = config.batch_size;
  const std::size_t T = config.block_size;
  require(config.steps >= 1, fn, "steps must be at least 1, got 0");
  require(B >= 1, fn, "batch_size must be at least 1, got 0");
  require(T >= 1, fn, "block_size must be at least 1, got 0");
  require(config.eval_interval >= 1, fn, "eval_interval must be at least 1, got 0");
  require(std::isfinite(config.learning_rate) && config.learning_rate > 0.0f, fn,
          [&] { return fmt::format("learning_rate must be > 0, got {}", config.learning_rate); });
  require(split.train.size() > T, fn, [&] {
    return fmt::format("the training split has {} tokens, but block_size + 1 = {} are needed",
                       split.train.size(), T + 1);
  });
  require(split.val.size() > T, fn, [&] {
    return fmt::format("the validation split has {} tokens, but block_size + 1 = {} are needed",
                       split.val.size(), T + 1);
  });
  if (grad == nullptr) grad = &cross_entropy_grad;

  // Count the pairs of both splits once: every evaluation is then O(V^2), whatever their size.
  const PairCounts train_pairs = count_pairs(split.train, V, fn, " in the training split");
  const PairCounts val_pairs = count_pairs(split.val, V, fn, " in the validation split");
  const auto report = [&](std::size_t step) {
    if (on_report)
      on_report(BigramReport{step, loss_from_pairs(logits, train_pairs),
                             loss_from_pairs(logits, val_pairs)});
  };

  const std::size_t N = checked_mul(B, T, "attn::train_bigram: B * T");  // predictions per step
  checked_elements({N, V}, "attn::train_bigram: the batch's logits (B*T, V)");
  Matrix rows({N, V});          // (B*T, V): the logits of every position of the batch
  std::vector<int> targets(N);  // (B*T,)

  report(0);  // before the first step: a table of zeros scores log(V)
  for (std::size_t step = 1; step <= config.steps; ++step) {
    // 1. A batch of B windows of T tokens: x (B, T) inputs, y (B, T) next tokens.
    const Batch batch = get_batch(split.train, B, T, rng);
    const int* xs = batch.x.data();  // (B * T,)
    const int* ys = batch.y.data();  // (B * T,)

    // 2. Forward: the logits of position i are the table row of its input, logits[x_i] (V,).
    for (std::size_t i = 0; i < N; ++i) {
      const float* row = logits.data() + static_cast<std::size_t>(xs[i]) * V;
      std::copy_n(row, V, rows.data() + i * V);
      targets[i] = ys[i];
    }

    // 3. Backward, the hand-derived gradient of the mean cross-entropy (docs/01-bigram.md):
    //      dloss/drows[i] = (softmax(rows[i]) - onehot(y_i)) / (B * T)      (B*T, V)
    const Matrix row_grad = grad(rows, targets);
    if (row_grad.shape()[0] != N || row_grad.shape()[1] != V)
      shape_error(fn, fmt::format("a gradient of shape ({}, {})", N, V),
                  shape_str(row_grad.shape()));

    // 4. Update: rows[i] is a copy of table row x_i, so its gradient flows back to that row;
    //    positions with the same input add up (scatter-add). logits -= lr * grad, with lr
    //    falling linearly from learning_rate (step 1) to learning_rate / steps (last step).
    //    Why decay: each batch is a noisy estimate of the true gradient, and at a constant step
    //    SGD keeps jittering around the optimum by an amount that grows with the step (chapter
    //    01 prints the measured table). A large step early travels far; a small one late
    //    averages the noise away. With config.decay false the step stays learning_rate.
    const float progress = static_cast<float>(step - 1) / static_cast<float>(config.steps);
    const float lr = config.decay ? config.learning_rate * (1.0f - progress) : config.learning_rate;
    for (std::size_t i = 0; i < N; ++i) {
      float* table_row = logits.data() + static_cast<std::size_t>(xs[i]) * V;  // (V,)
      const float* g = row_grad.data() + i * V;                                // (V,)
      for (std::size_t b = 0; b < V; ++b) table_row[b] -= lr * g[b];
    }

    // 5. Measure on the whole splits every eval_interval steps and after the last step.
    if (step % config.eval_interval == 0 || step == config.steps) report(step);
  }
}

std::vector<int> bigram_generate(const Matrix& logits, int start, std::size_t n, float temperature,
                                 Rng& rng, SampleFn sample) {
  const char* fn = "attn::bigram_generate";
  const std::size_t V = check_table(logits, fn, "logits");
  if (start < 0 || static_cast<std::size_t>(start) >= V)
    shape_error(fn, fmt::format("a start token in [0, {})", V), std::to_string(start));
  require(std::isfinite(temperature) && temperature > 0.0f, fn,
          [&] { return fmt::format("temperature must be > 0, got {}", temperature); });
  if (sample == nullptr) sample = &sample_logits;
  std::vector<int> out;
  out.reserve(n);
  int current = start;
  for (std::size_t i = 0; i < n; ++i) {
    // The next token depends on the current one only: sample from its row of the table.
    const std::span<const float> row(logits.data() + static_cast<std::size_t>(current) * V, V);
    current = sample(row, temperature, rng);
    // A sampler of one's own (chapter 01's exercise) that returns a token outside the table
    // would have the next step read a row past its end: named here instead.
    require(current >= 0 && static_cast<std::size_t>(current) < V, fn, [&] {
      return fmt::format("the sampler returned token {}, outside [0, {}) (the table's rows)",
                         current, V);
    });
    out.push_back(current);
  }
  return out;
}

}  // namespace attn
