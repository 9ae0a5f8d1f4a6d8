// chapters/09_training/main.cpp: chapter 09, training the character GPT.
// The lesson in six sections, each computed by one function and shown by another: the data as
// the lecture prepares it, the model before training, one training step written out here (and
// checked against the library's attn::train_step_on bit for bit), a run with loss estimates,
// a sample after training, and what every trained head attends to. --ladder rebuilds the
// lecture's loss table row by row. The library pieces: common/src/train/ (train.cpp, optim.cpp,
// data.cpp, checkpoint.cpp) and common/src/model/model.cpp.

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/io/narrate.hpp"
#include "attn/io/plot.hpp"
#include "attn/model/bigram.hpp"
#include "exercises.hpp"
#include "training.hpp"

namespace {

using namespace ch09;
using attn::chars_of;
using attn::num;
using attn::section;
using attn::thousands;
namespace fs = std::filesystem;
using attn::Matrix;

// ---- Limits on what a user can type (the input contract: every size bounded, in --help). The
// training config's bounds are the library's (attn::check_train_config), so train.txt of a
// checkpoint is held to the same.
using attn::train_limits::kMaxBatch;
using attn::train_limits::kMaxBlock;
using attn::train_limits::kMaxEmbd;
using attn::train_limits::kMaxEvalIters;
using attn::train_limits::kMaxHeads;
using attn::train_limits::kMaxLayers;
using attn::train_limits::kMaxSteps;
constexpr std::size_t kMaxTokens = 10000;

// The text of `ids` behind a margin, line by line, control characters escaped.
void print_sample(std::string_view text) {
  const std::u32string chars = attn::decode_utf8(text);
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(chars.find(U'\n', begin), chars.size());
    fmt::print("  | {}\n",
               attn::terminal_safe(std::u32string_view(chars).substr(begin, end - begin)));
    if (end == chars.size()) break;
    begin = end + 1;
  }
}

std::string sample_text(const attn::LmWeights& w, const attn::LmConfig& config,
                        const attn::Vocab& vocab, std::size_t n, std::uint64_t seed) {
  attn::Rng rng(seed, 909);
  attn::GenerateOptions g;
  g.max_new_tokens = n;
  // The lecture starts from a newline (id 0 of its vocabulary); a corpus without one starts from
  // its own id 0, the smallest character.
  const std::vector<int> prompt = {vocab.contains(U'\n') ? vocab.id_of(U'\n') : 0};
  return vocab.decode(attn::lm_generate(w, config, prompt, g, rng));
}

// ---- 1. The data: two windows of a batch, and y is x shifted by one.

void show_data(const Kernels& k, const attn::Corpus& corpus, const Data& d, std::uint64_t seed,
               std::size_t block_size) {
  attn::Rng demo(seed, 7);
  const attn::Batch b = k.get_batch(d.split.train, 2, std::min<std::size_t>(block_size, 24), demo);
  const std::size_t T = b.x.shape()[1];
  bool shifted = true;
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t t = 0; t + 1 < T; ++t) shifted = shifted && b.y(r, t) == b.x(r, t + 1);

  section(1, "The data");
  fmt::print("{}: {} characters, V = {}.\n", corpus.origin,
             d.split.train.size() + d.split.val.size(), d.vocab.size());
  fmt::print(
      "Encoded once, then split like the lecture: the first 90% trains ({} tokens), the last 10%\n"
      "measures ({} tokens). The model never sees the validation text, so its loss there tells\n"
      "learning apart from memorising.\n"
      "A batch is B windows of T + 1 tokens from random places; x is the first T, y the last T.\n"
      "Two of them (T = {}):\n",
      d.split.train.size(), d.split.val.size(), T);
  for (std::size_t r = 0; r < 2; ++r) {
    fmt::print("  x[{}] = {}\n  y[{}] = {}\n", r,
               attn::quote(chars_of(d.vocab, std::span<const int>(b.x.data() + r * T, T))), r,
               attn::quote(chars_of(d.vocab, std::span<const int>(b.y.data() + r * T, T))));
  }
  attn::claim(shifted, "y is x shifted by one");
  attn::print(
      "Every position is an example: after x[0][0..t] the answer is y[0][t]. One window of T\n"
      "tokens teaches T predictions at once, with 1 to T characters of context.\n");
}

// ---- 2. The model before training, and the bar to beat.

struct Before {
  std::size_t params;
  double val_loss;    // untrained (fresh runs only)
  double log_v;       // the loss of a uniform guess
  double bigram_val;  // chapter 01's counting table, trained on the train split
};

Before measure_before(const Kernels& k, const attn::TrainState& s, const attn::TrainConfig& c,
                      const Data& d, bool fresh) {
  const std::size_t V = d.vocab.size();
  const Matrix bigram = attn::bigram_logits_from_counts(attn::bigram_counts(d.split.train, V));
  const double val =
      fresh ? k.estimate_loss(s.weights, c.model, d.split, c.batch_size, c.eval_iters, c.seed, 0)
                  .val_loss
            : 0.0;
  return {attn::lm_parameter_count(s.weights), val, std::log(static_cast<double>(V)),
          attn::bigram_loss(bigram, d.split.val)};
}

void show_before(const Before& b, const attn::TrainConfig& c, std::size_t V, bool fresh) {
  section(2, "The model, before training");
  const attn::LmConfig& m = c.model;
  fmt::print(
      "C = {}, H = {} (head size {}), L = {}, T = {}, {} activation, {} output head,\n"
      "{} initialisation: {} parameters. B = {} windows a step: {} tokens.\n",
      m.n_embd, m.n_heads, m.n_embd / m.n_heads, m.n_layers, m.block_size,
      m.ffn == attn::FfnKind::swiglu ? "SwiGLU" : attn::activation_name(m.activation),
      m.tied_head ? "tied (wte^T)" : "separate", attn::init_name(c.init), b.params, c.batch_size,
      c.batch_size * m.block_size);
  if (!attn::block_default_parts(attn::lm_block_config(m))) {
    // The parts other than the lecture's (a lecture model prints no such line), two lines.
    const std::size_t kv = attn::lm_kv_heads(m);
    const std::string first =
        fmt::format("{}, {}, {} FFN (F = {}),",
                    m.positions == attn::Positions::rope
                        ? fmt::format("RoPE positions (theta {})", m.rope_theta)
                        : std::string("learned positions"),
                    m.normalization == attn::Normalization::rmsnorm ? "RMSNorm" : "LayerNorm",
                    m.ffn == attn::FfnKind::swiglu ? "SwiGLU" : "MLP", attn::lm_ffn_width(m));
    const std::string second = fmt::format(
        "{}, {}, {}.",
        kv == m.n_heads ? std::string("one K/V head per head")
                        : fmt::format("{} K/V head{} (grouped-query)", kv, kv == 1 ? "" : "s"),
        m.window ? fmt::format("window {}", m.window) : std::string("no window"),
        m.bias ? "biases" : "no biases");
    fmt::print("Parts: {}\n{}\n", first, second);
  }
  if (!fresh) return;  // a resumed run: trained already
  fmt::print(
      "Untrained, its val loss is {}; guessing uniformly over V = {} characters scores log V =\n"
      "{}. {}\n",
      num(b.val_loss), V, num(b.log_v),
      std::abs(b.val_loss - b.log_v) < 0.1
          ? "Random weights give nearly uniform predictions, so the two are close."
          : "The random weights already prefer some characters, so the two differ.");
  fmt::print(
      "The bar to beat: chapter 01's bigram table, counted on the train split, scores {}\n"
      "on val. It sees one character of context; this model sees up to {}.\n",
      num(b.bigram_val), m.block_size);
}

// ---- 3. One training step, written out: what attn::train_step_on does.

struct OneStep {
  std::size_t tensors;
  double loss, grad_norm;  // before the update; the norm before clipping
  float lr;
  double loss_after;      // the same batch after the update
  double largest_move;    // max |w_after - w_before| over every weight
  double largest_weight;  // max |w_before|
  double library_diff;    // max |difference| to attn::train_step_on's weights
};

OneStep take_one_step(const Kernels& k, const attn::TrainState& start, const attn::TrainConfig& c,
                      const Data& d) {
  attn::Rng demo(c.seed, 8);
  const attn::Batch b = k.get_batch(d.split.train, c.batch_size, c.model.block_size, demo);
  attn::TrainState s = start;  // a copy: the real run starts from the same weights
  std::vector<attn::NamedTensor> p = attn::lm_parameters(s.weights);
  std::vector<attn::NamedTensor> g = attn::lm_parameters(s.grads);
  std::vector<attn::NamedTensor> m = attn::lm_parameters(s.adam_m);
  std::vector<attn::NamedTensor> v = attn::lm_parameters(s.adam_v);
  std::vector<std::span<float>> grads;
  for (attn::NamedTensor& t : g) grads.push_back(t.values);

  // 1. Zero the gradients: the backward adds into them.
  for (std::span<float> grad : grads) std::fill(grad.begin(), grad.end(), 0.0f);
  const std::size_t t = start.step + 1;
  // (With --dropout, this step's masks come from a generator of their own, as in the library.)
  if (c.model.dropout > 0.0f) s.cache.dropout_rng = attn::dropout_rng_for(c.seed, t);
  // 2. Forward (keeping what the backward needs) and backward: the batch's mean cross-entropy,
  //    and the gradient of every weight.
  const double loss = attn::lm_forward_backward(b.x, b.y, s.weights, c.model, s.grads, s.cache);
  // 3. The global norm of all gradients together, clipped to --grad-clip (0: off).
  const double norm = attn::clip_grad_norm(grads, c.grad_clip);
  // 4. AdamW on every tensor at the schedule's lr; weight decay only on matrices and embeddings.
  //    (--optimizer sgd: p -= lr * g instead.)
  const float lr = attn::learning_rate(c.schedule, t);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (c.optimizer == attn::Optimizer::sgd) {
      for (std::size_t j = 0; j < p[i].values.size(); ++j) p[i].values[j] -= lr * g[i].values[j];
      continue;
    }
    const float decay = attn::decays(p[i].rank) ? c.adam.weight_decay : 0.0f;
    k.adamw_update(p[i].values, g[i].values, m[i].values, v[i].values, lr, decay, t, c.adam);
  }

  // The library's step from the same state on the same batch must give the same weights.
  attn::TrainState library = start;
  (void)attn::train_step_on(library, c, b.x, b.y);
  attn::LmWeights w0 = start.weights;
  const std::vector<attn::NamedTensor> lib = attn::lm_parameters(library.weights);
  const std::vector<attn::NamedTensor> before = attn::lm_parameters(w0);
  OneStep out{p.size(), loss, norm, lr, attn::lm_loss(b.x, b.y, s.weights, c.model), 0, 0, 0};
  for (std::size_t i = 0; i < p.size(); ++i) {
    out.library_diff = std::max(out.library_diff, attn::max_abs_diff(p[i].values, lib[i].values));
    const double moved = attn::max_abs_diff(p[i].values, before[i].values);
    out.largest_move = std::max(out.largest_move, moved);
    for (const float x : before[i].values)
      out.largest_weight = std::max(out.largest_weight, std::abs(static_cast<double>(x)));
  }
  return out;
}

void show_one_step(const OneStep& r, const attn::TrainConfig& c) {
  section(3, "One step, taken apart");
  // "Every weight moves by about lr": on the first step m / sqrt(v) is g / (|g| + eps), so no
  // weight moves by more than lr (plus its decay), and those with a gradient move by nearly lr.
  const double lr = static_cast<double>(r.lr), wd = static_cast<double>(c.adam.weight_decay);
  const bool adam = c.optimizer == attn::Optimizer::adamw;
  if (adam) {
    attn::claim(r.largest_move <= lr * (1.0 + 1e-3) + lr * wd * r.largest_weight &&
                    r.largest_move >= 0.5 * lr,
                "on the first step every weight moves by about lr, never more");
  }
  fmt::print(
      "  1. zero the gradients                 {} tensors, shaped like the weights\n"
      "  2. forward and backward on one batch  loss {}{}\n"
      "  3. clip the global gradient norm      norm {} {}\n"
      "  4. {} at lr {}                 {}\n"
      "The same batch after the step: loss {} ({} {}).\n",
      r.tensors, num(r.loss),
      c.model.dropout > 0.0f ? fmt::format(" (dropout {} on)", num(c.model.dropout, 2)) : "",
      num(r.grad_norm),
      c.grad_clip <= 0.0f ? std::string("(clipping off)")
      : r.grad_norm > static_cast<double>(c.grad_clip)
          ? fmt::format("> {}: scaled down to {}", num(c.grad_clip, 2), num(c.grad_clip, 2))
          : fmt::format("<= {}: left alone", num(c.grad_clip, 2)),
      adam ? "AdamW" : "SGD  ", num(r.lr, 5),
      adam ? "every weight moves by about lr"
           : fmt::format("the largest move is {}", num(r.largest_move, 6)),
      num(r.loss_after), r.loss_after < r.loss ? "down by" : "up by",
      num(std::abs(r.loss_after - r.loss)));
  fmt::print(
      "These four steps, written out in take_one_step (main.cpp), against the library's\n"
      "attn::train_step_on from the same state and batch: every weight {}.\n",
      r.library_diff == 0.0 ? "the same, bit for bit"
                            : "differs, by up to " + attn::difference_text(r.library_diff));
  attn::claim(r.library_diff == 0.0, "the step written out equals attn::train_step_on bit for bit");
  if (c.grad_clip > 0.0f && r.grad_norm > static_cast<double>(c.grad_clip)) {
    fmt::print(
        "Clipping scaled every gradient by the same factor, and on this first step AdamW's move\n"
        "m / sqrt(v) = g / |g| does not depend on the gradient's scale: the step is the one\n"
        "without clipping (to within eps). Clipping changes an Adam step when a spike meets a\n"
        "running second moment v built from smaller gradients, later in a run (see the page).\n");
  }
}

// ---- 4. Training: steps, estimates, a progress line, checkpoints.

// The train/val gap: how many passes over the training text the run made, how far apart the two
// losses ended, and when to stop, each sentence chosen by the numbers.
void show_gap(const attn::TrainState& s, const attn::TrainConfig& c, const Data& d,
              const attn::EvalRecord& best, const attn::EvalRecord& last) {
  const double read = static_cast<double>(s.step) * static_cast<double>(c.batch_size) *
                      static_cast<double>(c.model.block_size);
  const double passes = read / static_cast<double>(d.split.train.size());
  const double gap = last.val_loss - last.train_loss;
  std::string text = fmt::format(
      "{} steps of {} windows of {} tokens read {} tokens: {} passes over the {} training tokens "
      "(a pass over the data is an epoch; the windows are drawn at random).",
      s.step, c.batch_size, c.model.block_size, attn::grouped(read), num(passes, 1),
      attn::grouped(static_cast<double>(d.split.train.size())));
  const bool still_best = last.val_loss <= best.val_loss + 0.005;
  const bool rose = !still_best && last.train_loss < best.train_loss;
  if (std::abs(gap) < 0.05) {
    attn::claim(std::abs(gap) < 0.05, "the train and val losses ended within 0.05");
    text += fmt::format(
        " The two losses ended {} apart: the model does as well on text it never saw as on its "
        "training text, so it is not memorising; more steps or a bigger model can lower both.",
        num(std::abs(gap)));
  } else if (gap > 0.0) {
    attn::claim(gap >= 0.05, "the val loss ended at least 0.05 above the train loss");
    text += fmt::format(
        " The val loss ended {} above the train loss: after {} passes the model fits its "
        "training text better than text it never saw{}{}",
        num(gap), num(passes, 1), gap < 0.2 ? ", the start of memorising" : ": it is memorising",
        c.model.dropout > 0.0f
            ? fmt::format(", even with dropout {} on.", num(c.model.dropout, 2))
            : std::string(". Dropout (--dropout P, the page measures it) works against it."));
  } else {
    attn::claim(gap <= -0.05, "the val loss ended at least 0.05 below the train loss");
    text += fmt::format(
        " The val loss ended {} below the train loss: the validation text is easier for this "
        "model than the training text, which says more about the split than about the model.",
        num(-gap));
  }
  if (still_best && last.step == best.step) {
    attn::claim(last.val_loss <= best.val_loss, "the last estimate is the lowest");
    text +=
        " The val loss is at its lowest at the last estimate: training on may still help; stop "
        "when an estimate comes out higher than the best so far.";
  } else if (still_best) {
    attn::claim(last.val_loss > best.val_loss && last.val_loss <= best.val_loss + 0.005,
                "the last estimate is within 0.005 above the lowest");
    text += fmt::format(
        " The val loss has flattened: the last estimate is {} above the lowest ({} at step {}), "
        "within the noise of an estimate. Training on buys little now; stop once the estimates "
        "climb clearly above the best.",
        num(last.val_loss - best.val_loss), num(best.val_loss), best.step);
  } else {
    attn::claim(last.val_loss > best.val_loss + 0.005, "the val loss ended above its best");
    text += fmt::format(
        " The val loss was lowest at step {} ({}) and ended {} higher{}. Stop at step {}: a run is "
        "deterministic, so the same run stopped at step {} gives that model.",
        best.step, num(best.val_loss), num(last.val_loss - best.val_loss),
        rose ? fmt::format(", while the train loss kept falling ({} to {})", num(best.train_loss),
                           num(last.train_loss))
             : std::string(),
        best.step, best.step);
  }
  fmt::print("{}\n", wrap_text(text, 92));
}

void show_training(const attn::TrainState& s, const RunReport& r, const attn::TrainConfig& c,
                   const Data& d, double bigram_val, bool timing) {
  if (timing) {
    fmt::print("{} steps in {} ({} tokens/s).\n", r.steps_taken, clock_text(r.seconds),
               thousands(static_cast<double>(r.steps_taken * c.batch_size * c.model.block_size) /
                         std::max(r.seconds, 1e-9)));
  }
  const auto best = std::min_element(
      s.evals.begin(), s.evals.end(),
      [](const attn::EvalRecord& a, const attn::EvalRecord& b) { return a.val_loss < b.val_loss; });
  const attn::EvalRecord& last = s.evals.back();
  fmt::print("Best val loss {} at step {}; the bigram table's is {}: {}.\n", num(best->val_loss),
             best->step, num(bigram_val),
             best->val_loss < bigram_val
                 ? fmt::format("{} lower, what the whole model buys over one character of "
                               "context (attention over {} characters, heads, the FFN, residuals, "
                               "LayerNorm, depth: --ladder adds them one at a time)",
                               num(bigram_val - best->val_loss), c.model.block_size)
                 : std::string("not lower yet: train longer or with a higher --lr"));
  show_gap(s, c, d, *best, last);
}

// ---- 6. What the trained heads attend to: a window of validation text through the model.

struct HeadStats {
  double previous = 0.0;    // attention on position t - 1 (queries t >= 1)
  double self = 0.0;        // on position t itself
  double same_char = 0.0;   // on earlier positions holding the same character
  double line_start = 0.0;  // on the first character of the query's line, or the newline before
  double distance = 0.0;    // mean distance t - s, weighted
};

// The habits of one head, from its (T, T) causal attention `p(t, s)` over the window `ids`. The
// window starts at a line start, so position 0 is one.
template <class Weight>
HeadStats head_stats(const Weight& p, std::span<const int> ids, const attn::Vocab& vocab) {
  const std::size_t T = ids.size();
  HeadStats st;
  std::size_t line_begin = 0;
  for (std::size_t t = 0; t < T; ++t) {
    if (t > 0 && vocab.char_of(ids[t - 1]) == U'\n') line_begin = t;
    st.self += p(t, t);
    if (t > 0) st.previous += p(t, t - 1);
    st.line_start += p(t, line_begin) + (line_begin == 0 ? 0.0 : p(t, line_begin - 1));
    for (std::size_t s2 = 0; s2 < t; ++s2) {
      if (ids[s2] == ids[t]) st.same_char += p(t, s2);
      st.distance += p(t, s2) * static_cast<double>(t - s2);
    }
  }
  const double n = static_cast<double>(T);
  st.self /= n;
  st.previous /= static_cast<double>(std::max<std::size_t>(T - 1, 1));
  st.same_char /= n;
  st.line_start /= n;
  st.distance /= n;
  return st;
}

// A habit is named only when the head puts at least this much more of its attention there than
// a head attending uniformly to every visible position would (the chance baseline, measured on
// the same window): at T = 32, uniform attention already gives ~10% to the previous character.
constexpr double kHabitMargin = 0.15;

// One sentence chosen by the numbers: the habit that beats chance by the most, if any does.
std::string describe(const HeadStats& st, const HeadStats& chance) {
  struct Habit {
    double share, chance;
    std::string_view text;
  };
  const Habit habits[] = {{st.previous, chance.previous, "the previous character"},
                          {st.self, chance.self, "its own position"},
                          {st.same_char, chance.same_char, "earlier copies of the same character"},
                          {st.line_start, chance.line_start, "the start of the line"}};
  const Habit* best = &habits[0];
  for (const Habit& h : habits) {
    if (h.share - h.chance > best->share - best->chance) best = &h;
  }
  if (best->share - best->chance < kHabitMargin) {
    return fmt::format("no habit beats chance by {} points; looks back {} characters (uniform: {})",
                       num(100 * kHabitMargin, 0), num(st.distance, 1), num(chance.distance, 1));
  }
  return fmt::format("{} {} ({}%, chance {}%)", best->share >= 0.5 ? "mostly" : "leans on",
                     best->text, num(100 * best->share, 0), num(100 * best->chance, 0));
}

struct HeadMap {
  std::size_t layer, head;
  Matrix weights;  // (T, T): row t, the attention of query t over the keys
  HeadStats stats;
};
struct HeadMaps {
  std::span<const int> ids;  // the window, (T,)
  double loss;               // the model's loss on it
  HeadStats chance;          // uniform causal attention over the same window
  std::vector<HeadMap> heads;
};

HeadMaps measure_heads(const attn::LmWeights& w, const attn::LmConfig& config, const Data& d) {
  // A window of the validation text that starts at a real line start (right after the first
  // newline: the split itself begins mid-line) and holds T = min(T_max, 40) characters, so it
  // crosses line starts of its own.
  const std::span<const int> val = d.split.val;
  const int newline = d.vocab.contains(U'\n') ? d.vocab.id_of(U'\n') : -1;
  std::size_t begin = 0;
  while (begin + 1 < val.size() && val[begin] != newline) ++begin;
  while (begin + 1 < val.size() && val[begin] == newline) ++begin;  // past empty lines too
  if (begin + 1 >= val.size()) begin = 0;  // no line start at all: the window starts at 0
  const std::size_t T = std::min<std::size_t>({config.block_size, 40, val.size() - begin - 1});
  HeadMaps out{val.subspan(begin, T), 0.0, {}, {}};
  out.chance = head_stats(
      [](std::size_t t, std::size_t s) { return s <= t ? 1.0 / static_cast<double>(t + 1) : 0.0; },
      out.ids, d.vocab);
  Tokens x({1, T}), y({1, T});
  std::copy_n(val.begin() + static_cast<std::ptrdiff_t>(begin), T, x.begin());
  std::copy_n(val.begin() + static_cast<std::ptrdiff_t>(begin + 1), T, y.begin());
  attn::LmWeights grads = attn::lm_zeros_like(w);
  attn::LmCache cache;  // keeps every layer's attention weights (chapter 08)
  attn::LmConfig eval = config;
  eval.dropout = 0.0f;  // the trained model as it is used: dropout is for training only
  out.loss = attn::lm_forward_backward(x, y, w, eval, grads, cache);
  for (std::size_t l = 0; l < config.n_layers; ++l) {
    // (1, H, T, T): kept by the attention of every part (chapter 05's or grouped-query)
    const attn::Tensor<4>& weights = cache.blocks[l].attn.weights;
    for (std::size_t h = 0; h < config.n_heads; ++h) {
      Matrix m({T, T});
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t s = 0; s < T; ++s) m(t, s) = weights(0, h, t, s);
      const HeadStats st =
          head_stats([&m](std::size_t t, std::size_t s) { return static_cast<double>(m(t, s)); },
                     out.ids, d.vocab);
      out.heads.push_back({l, h, std::move(m), st});
    }
  }
  return out;
}

void show_heads(const HeadMaps& maps, const attn::Vocab& vocab,
                const std::optional<fs::path>& svg_dir, int number) {
  section(number, "What the trained heads attend to");
  fmt::print(
      "{} characters of the validation split from a line start (loss {} on them):\n  {}\n"
      "Rows: the query character; columns: the keys it may see (causal: only the past;\n"
      "'_' is a space, '$' a newline). Darker = more attention.\n",
      maps.ids.size(), num(maps.loss), attn::quote(chars_of(vocab, maps.ids)));
  const HeadStats& c = maps.chance;
  fmt::print(
      "Chance, a head attending uniformly to every visible position of this text: previous\n"
      "{}%  self {}%  same character {}%  line start {}%  mean distance {}. A habit is named\n"
      "only when a head beats chance by {} points.\n",
      num(100 * c.previous, 0), num(100 * c.self, 0), num(100 * c.same_char, 0),
      num(100 * c.line_start, 0), num(c.distance, 1), num(100 * kHabitMargin, 0));
  // One glyph per character, so the columns stay one character wide.
  std::vector<std::string> labels;
  for (const int id : maps.ids) {
    const char32_t ch = vocab.char_of(id);
    labels.push_back(ch == U' '    ? std::string("_")
                     : ch == U'\n' ? std::string("$")
                                   : attn::printable(ch));
  }
  for (const HeadMap& hm : maps.heads) {
    const HeadStats& st = hm.stats;
    fmt::print("\nlayer {} head {}: {}\n", hm.layer, hm.head, describe(st, c));
    fmt::print("  previous {}%  self {}%  same character {}%  line start {}%  mean distance {}\n",
               num(100 * st.previous, 0), num(100 * st.self, 0), num(100 * st.same_char, 0),
               num(100 * st.line_start, 0), num(st.distance, 1));
    attn::HeatmapOptions opt;
    opt.row_labels = labels;
    opt.col_labels = labels;
    opt.vmin = 0.0f;
    opt.vmax = 1.0f;
    opt.annotate = false;  // the sentence above says which head it is
    fmt::print("{}", attn::heatmap_text(hm.weights, opt, attn::use_color(stdout)));
    if (svg_dir) {
      opt.title = fmt::format("layer {} head {}", hm.layer, hm.head);
      attn::write_svg(*svg_dir / fmt::format("attention_l{}_h{}.svg", hm.layer, hm.head),
                      attn::heatmap_svg(hm.weights, opt));
    }
  }
}

// ---- The walkthrough.

Kernels reference_kernels() {
  return {&attn::adamw_update, &attn::get_batch, &attn::estimate_loss, &attn::train_step_on, true};
}
Kernels learner_kernels() {
  return {&ex09::adamw_update, &ex09::get_batch, &ex09::estimate_loss, &ex09::train_step_on, false};
}

void run(const attn::CommonOptions& common, Options o, int argc, char** argv) {
  o.activation_given = attn::flag_given(argc, argv, "--activation");
  o.rope_theta_given = attn::flag_given(argc, argv, "--rope-theta");
  check_flag_values(o);
  if (common.mine && attn::parse_optimizer(o.optimizer) != attn::Optimizer::adamw) {
    throw attn::UsageError(fmt::format(
        "--mine trains with your AdamW step (ex09.1, ex09.4), not with --optimizer {}: drop one "
        "of the two",
        o.optimizer));
  }
  if (o.ladder) return run_ladder(common, o.ladder_steps, o.ladder_rows);
  const Kernels k = common.mine ? learner_kernels() : reference_kernels();
  const bool resuming = !o.resume_dir.empty();
  // A fresh run reads its corpus before any folder is made; a resumed one after its checkpoint,
  // which names the corpus.
  std::optional<attn::Corpus> fresh_corpus;
  if (!resuming) fresh_corpus = attn::load_corpus(common.data);

  // One trainer per run folder: a resumed run saves to its run folder (never inside one of its
  // checkpoints), and holds the folder's lock before it reads anything from it.
  if (resuming && o.save_dir.empty()) {
    o.save_dir = attn::run_folder_of(o.resume_dir).string();
  }
  if (resuming && !fs::is_directory(o.resume_dir)) {
    attn::load_checkpoint(o.resume_dir);  // says what is missing
  }
  std::optional<attn::RunLock> lock;
  if (!o.save_dir.empty()) lock.emplace(o.save_dir);
  std::error_code ec;
  const bool same_folder =
      resuming && fs::equivalent(attn::run_folder_of(o.resume_dir), o.save_dir, ec);
  if (!same_folder && attn::holds_run(o.save_dir)) {
    if (!o.overwrite) {
      throw attn::UsageError(fmt::format(
          "'{}' already holds a run: continue it with --resume {}, or pass --overwrite to start "
          "over",
          o.save_dir, o.save_dir));
    }
    attn::remove_run(o.save_dir);
  }

  // A run starts fresh, or from a checkpoint (with the corpus it recorded).
  std::optional<attn::Checkpoint> ck;
  std::string corpus_note;
  if (resuming) ck = attn::load_checkpoint(o.resume_dir);
  const attn::Corpus corpus = resuming ? resume_corpus(*ck, o.resume_dir, common.data, corpus_note)
                                       : std::move(*fresh_corpus);
  const Data d = prepare_data(corpus);
  const std::size_t V = d.vocab.size();
  attn::TrainConfig c;
  attn::TrainState s;
  if (resuming) {
    c = ck->config;
    check_resume_flags(o, c, argc, argv);
    // Without --steps the run goes on to the target it was started with.
    if (attn::flag_given(argc, argv, "--steps")) {
      if (o.steps < ck->state.step) {
        throw attn::UsageError(fmt::format(
            "--steps {} is before the checkpoint's step {}: --steps counts from the start of the "
            "run",
            o.steps, ck->state.step));
      }
      // A cosine schedule decays over the run's steps: another target would re-shape it.
      if (o.steps != c.steps && c.schedule.shape == attn::LrShape::cosine) {
        throw attn::UsageError(fmt::format(
            "--steps {} would re-shape the checkpoint's cosine schedule, which decays over {} "
            "steps: drop --steps to finish the run as configured, or start a new run",
            o.steps, c.schedule.total));
      }
      c.steps = o.steps;
      if (c.schedule.shape == attn::LrShape::constant) c.schedule.total = o.steps;
    }
    s = std::move(ck->state);
  } else {
    c = config_from(o, V, common.seed);
    s = attn::train_init(c);
  }
  check_data_fits(d, c.model.block_size);
  const bool fresh = s.step == 0;

  // Like the other chapters: say whose functions run (only with --mine, so that the reference
  // run's output, shown on the page, stays as it is).
  if (common.mine) fmt::print("functions: yours (ex09::, --mine)\n");
  show_data(k, corpus, d, c.seed, c.model.block_size);
  const Before before = measure_before(k, s, c, d, fresh);
  show_before(before, c, V, fresh);
  if (fresh) {
    fmt::print("A sample from the untrained model (seed {}):\n", c.seed);
    print_sample(
        sample_text(s.weights, c.model, d.vocab, std::min<std::size_t>(o.tokens, 80), c.seed));
    show_one_step(take_one_step(k, s, c, d), c);
  } else {
    fmt::print("Resumed from '{}' at step {} of {}.\n{}", o.resume_dir, s.step, c.steps,
               corpus_note);
  }

  section(fresh ? 4 : 3, "Training");
  fmt::print("{} steps, estimates every {} steps over {} batches per split{}.\n", c.steps - s.step,
             c.eval_interval, c.eval_iters,
             o.save_dir.empty() ? "" : fmt::format(", a checkpoint in '{}' at each", o.save_dir));
  stop_on_ctrl_c();
  const RunReport r = run_training(k, s, c, d, o.save_dir, common.timing);
  if (r.interrupted) {
    fmt::print("Interrupted at step {}{}.\n", s.step,
               o.save_dir.empty() ? "" : fmt::format(": saved to '{}'", o.save_dir));
    std::fflush(stdout);
    std::exit(128 + r.signal);  // 130 for SIGINT, 143 for SIGTERM
  }
  if (!o.save_dir.empty()) attn::save_checkpoint(o.save_dir, s, c, d.vocab, d.corpus);
  show_training(s, r, c, d, before.bigram_val, common.timing);
  if (common.svg_dir) attn::write_svg(*common.svg_dir / "loss_curve.svg", loss_curve_svg(s));

  section(fresh ? 5 : 4, "A sample after training");
  print_sample(sample_text(s.weights, c.model, d.vocab, o.tokens, c.seed));
  show_heads(measure_heads(s.weights, c.model, d), d.vocab, common.svg_dir, fresh ? 6 : 5);
}

}  // namespace

int main(int argc, char** argv) {
  attn::Cli cli("09_training",
                "Chapter 09: training the character GPT. AdamW on the decoder of chapter 07, "
                "loss estimates on both splits, checkpoints that survive kill -9, samples before "
                "and after, and what every trained head attends to. --ladder rebuilds the "
                "lecture's loss table step by step.");
  Options o;
  cli.add_size("--n-embd", o.n_embd, "C, the model width", 1, kMaxEmbd);
  cli.add_size("--n-heads", o.n_heads, "H, attention heads, must divide C", 1, kMaxHeads);
  cli.add_size("--n-layers", o.n_layers, "L, transformer blocks", 1, kMaxLayers);
  cli.add_size("--block-size", o.block_size, "T, the context length", 1, kMaxBlock);
  cli.add_size("--batch-size", o.batch_size, "B, windows per step", 1, kMaxBatch);
  cli.add_size("--steps", o.steps, "the run's last step, counted from its start", 1, kMaxSteps);
  cli.add_float("--lr", o.lr, "AdamW learning rate", 0.0f, 1.0f);
  cli.add_float("--weight-decay", o.weight_decay, "AdamW decoupled weight decay (>= 0)", -1e-30f,
                1.0f);
  cli.add_float("--grad-clip", o.grad_clip, "max global gradient norm (0 = off)", -1e-30f, 1e6f);
  cli.add_size("--eval-interval", o.eval_interval, "estimate the losses every N steps", 1,
               kMaxSteps);
  cli.add_size("--eval-iters", o.eval_iters, "batches per split per estimate", 1, kMaxEvalIters);
  cli.add_size("--tokens", o.tokens, "N, characters to sample after training", 0, kMaxTokens);
  cli.add_alias("--sample-length", "--tokens");  // its name before chapter 10's --tokens
  cli.add_string("--activation", o.activation, "FFN activation: gelu, gelu_tanh or relu");
  cli.add_string("--init", o.init, "initial weights: gpt2 (N(0, 0.02)) or pytorch (nn defaults)");
  cli.add_string("--schedule", o.schedule,
                 "learning rate: constant, or cosine (warmup, then down to lr/10)");
  cli.add_size("--warmup", o.warmup, "warmup steps of the cosine schedule", 0, kMaxSteps);
  cli.add_flag("--tied", o.tied,
               "tie the output head to the embedding (logits = x @ wte^T, GPT-2) "
               "instead of the lecture's separate Linear(C, V) with bias");
  cli.add_float("--dropout", o.dropout,
                "P in [0, 1): zero each attention and FFN output with probability P in training "
                "(the lecture's big model: 0.2)");
  cli.add_string("--optimizer", o.optimizer,
                 "adamw (the lecture's) or sgd (plain p -= lr * g, for the comparison)");
  cli.add_string("--positions", o.positions,
                 "learned (a table of T positions, the lecture's) or rope (q and k rotated by "
                 "their position)");
  cli.add_float("--rope-theta", o.rope_theta, "RoPE's base (> 0), with --positions rope", -1e30f,
                1e9f);
  cli.add_string("--normalization", o.normalization, "layernorm (the lecture's) or rmsnorm");
  cli.add_string("--ffn", o.ffn,
                 "mlp (two layers and --activation, the lecture's) or swiglu (F = 2/3 of 4C, up "
                 "to a multiple of 8)");
  cli.add_size("--n-kv-heads", o.n_kv_heads,
               "K/V heads shared by groups of query heads, must divide --n-heads (0: one per "
               "head)",
               0, kMaxHeads);
  cli.add_size("--window", o.window,
               "sliding-window attention: each query sees the last W keys, W <= T (0: all)", 0,
               kMaxBlock);
  cli.add_flag("--no-bias", o.no_bias, "no FFN, LayerNorm or output-head biases (Llama's)");
  cli.add_string("--save", o.save_dir, "DIR: write a checkpoint at every estimate and at the end");
  cli.add_string(
      "--resume", o.resume_dir,
      "DIR: continue the run saved in DIR, DIR/current or DIR/ckpt-N (it keeps saving to DIR), "
      "on the corpus the checkpoint recorded (--data only to point at a copy of it)");
  cli.add_flag(
      "--overwrite", o.overwrite,
      "with --save: start over in a folder that already holds a run (its checkpoints are deleted)");
  cli.add_flag("--ladder", o.ladder,
               "rebuild the lecture's loss table (use the full corpus: --data)");
  cli.add_size("--ladder-steps", o.ladder_steps,
               "steps per ladder row (0: the lecture's 5000 and 3000)", 0, kMaxSteps);
  cli.add_string("--ladder-rows", o.ladder_rows,
                 "only these ladder rows, e.g. 0,5 (default: all six)");
  return cli.run(argc, argv,
                 [&](const attn::CommonOptions& common) { run(common, o, argc, argv); });
}
