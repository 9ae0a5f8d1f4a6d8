// chapters/09_training/show.cpp: how chapter 09 prints what main.cpp computes, section by
// section; every sentence that depends on a number is chosen by it (attn::claim).
#include "show.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/model/model.hpp"

namespace ch09 {

using attn::chars_of;
using attn::num;
using attn::section;
using attn::thousands;
namespace fs = std::filesystem;

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

void show_header(std::uint64_t seed, const std::string& corpus_origin, bool mine) {
  fmt::print("Chapter 09: training the character GPT\n");
  fmt::print("seed {}, corpus {}, functions: {}\n", seed, corpus_origin,
             mine ? "yours (ex09.1 to ex09.6, --mine)" : "the reference (attn::)");
}

// ---- 1. The data.

void show_data(const DataDemo& r, const attn::Corpus& corpus, const Data& d) {
  const attn::Batch& b = r.batch;
  const std::size_t T = b.x.shape()[1];
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
  for (std::size_t row = 0; row < 2; ++row) {
    fmt::print("  x[{}] = {}\n  y[{}] = {}\n", row,
               attn::quote(chars_of(d.vocab, std::span<const int>(b.x.data() + row * T, T))), row,
               attn::quote(chars_of(d.vocab, std::span<const int>(b.y.data() + row * T, T))));
  }
  attn::claim(r.shifted, "y is x shifted by one");
  fmt::print(
      "Every position is an example: after x[0][0..t] the answer is y[0][t]. One window of T\n"
      "tokens teaches T predictions at once, with 1 to T characters of context.\n");
}

// ---- 2. The model before training.

void show_before(const Before& b, const attn::TrainConfig& c, std::size_t V, bool fresh) {
  section(2, "The model, before training");
  const attn::ModelSpec& m = c.model;
  fmt::print(
      "C = {}, H = {} (head size {}), L = {}, T = {}, {} activation, {} output head,\n"
      "{} initialisation: {} parameters. B = {} windows a step: {} tokens.\n",
      m.n_embd, m.n_heads, m.n_embd / m.n_heads, m.n_layers, m.block_size,
      m.ffn == attn::FfnKind::swiglu ? "SwiGLU" : attn::activation_name(m.activation),
      m.ablations.tied_head ? "tied (wte^T)" : "separate", attn::init_name(c.init), b.params,
      c.batch_size, c.batch_size * m.block_size);
  if (!m.default_parts() || !m.learned_positions()) {
    // The parts other than the lecture's (a lecture model prints no such line), two lines.
    const std::size_t kv = m.n_kv_heads;
    const std::string first =
        fmt::format("{}, {}, {} FFN (F = {}),",
                    m.rope()    ? fmt::format("RoPE positions (theta {})", m.rope_theta)
                    : m.alibi() ? std::string("ALiBi positions (no table: a bias on the scores)")
                    : m.positions == attn::Positions::none ? std::string("no positions")
                                                           : std::string("learned positions"),
                    m.normalization == attn::Normalization::rmsnorm ? "RMSNorm" : "LayerNorm",
                    m.ffn == attn::FfnKind::swiglu ? "SwiGLU" : "MLP", m.ffn_hidden);
    const std::string second = fmt::format(
        "{}, {}, {}.",
        kv == m.n_heads ? std::string("one K/V head per head")
                        : fmt::format("{} K/V head{} (grouped-query)", kv, kv == 1 ? "" : "s"),
        m.window ? fmt::format("window {}", *m.window) : std::string("no window"),
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

// ---- 3. One step, taken apart.

void show_one_step(const OneStep& r, const attn::TrainConfig& c, bool mine) {
  section(3, "One step, taken apart");
  // On the first step m / sqrt(v) is g / (|g| + eps): no weight moves by more than lr (plus its
  // decay), those with a gradient far above eps by nearly lr, those with none only by the decay.
  const double lr = static_cast<double>(r.lr), wd = static_cast<double>(c.adam.weight_decay);
  const bool adam = c.optimizer == attn::Optimizer::adamw;
  if (adam) {
    attn::claim(r.largest_move <= lr * (1.0 + 1e-3) + lr * wd * r.largest_weight,
                "on the first step no weight moves by more than lr and its decay");
    attn::claim(r.zero_grad_move <= lr * wd * r.largest_weight * (1.0 + 1e-3) + 1e-12,
                "a weight with a zero gradient moves only by its decay");
    attn::claim(r.zero_grad >= r.absent_rows * c.model.n_embd,
                "the wte rows of absent characters have a zero gradient");
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
      adam ? "a weight moves by at most lr (and its decay)"
           : fmt::format("the largest move is {}", num(r.largest_move, 6)),
      num(r.loss_after), r.loss_after < r.loss ? "down by" : "up by",
      num(std::abs(r.loss_after - r.loss)));
  if (adam) {
    // Who moved by about lr, and who did not: measured on this step's weights.
    const auto sci = [](double x) {
      return x == 0.0 ? std::string("0") : fmt::format("{:.1e}", x);
    };
    std::string text = fmt::format(
        "On this first step AdamW moves a weight by lr |g| / (|g| + eps) plus its decay: {} of "
        "the {} weights moved by lr / 2 or more.",
        attn::grouped(static_cast<double>(r.near_lr)),
        attn::grouped(static_cast<double>(r.weights)));
    const std::size_t absent = r.absent_rows * c.model.n_embd;  // weights of the absent rows
    if (r.zero_grad == 0) {
      text += " Every weight had a gradient.";
    } else {
      text += " " + attn::grouped(static_cast<double>(r.zero_grad));
      if (r.absent_rows > 0) {
        text += fmt::format("{} the wte rows of the {} character{} absent from the batch,",
                            r.zero_grad == absent ? "," : ", among them", r.absent_rows,
                            r.absent_rows == 1 ? "" : "s");
      }
      text += wd > 0.0 ? " had a zero gradient and moved by the decay alone, at most " +
                             sci(r.zero_grad_move) + "."
                       : std::string(" had a zero gradient and, with no decay, did not move.");
    }
    if (r.slow > 0) {
      // lr |g| / (|g| + eps) < lr / 2 means |g| < eps, give or take the decay.
      const double eps = static_cast<double>(c.adam.eps);
      attn::claim(r.slow_grad <= 2.0 * eps,
                  "a weight with a gradient that moved less than lr / 2 has |g| near eps or below");
      text += fmt::format(" The other {}, {} eps = {}, and moved less.",
                          r.slow == 1 ? "one had a gradient of " + sci(r.slow_grad)
                                      : attn::grouped(static_cast<double>(r.slow)) +
                                            " had gradients of at most " + sci(r.slow_grad),
                          r.slow_grad < eps ? "below" : "about", sci(eps));
    }
    fmt::print("{}\n", wrap_text(text, 92));
  }
  fmt::print(
      "These four steps, written out in step_by_hand (main.cpp), against {} from the same "
      "state and batch: every weight {}.\n",
      mine ? "your\ntrain_step_on (ex09.4)" : "the library's\nattn::train_step_on",
      r.library_diff == 0.0 ? "the same, bit for bit"
                            : fmt::format("differs, by up to {:.1e}", r.library_diff));
  attn::claim(r.library_diff == 0.0 || mine,
              "the step written out equals attn::train_step_on bit for bit");
  if (mine && r.library_diff > 0.0) {
    // With --mine the written-out step runs your ex09.1, ex09.5 and ex09.6, and your
    // train_step_on (ex09.4) the library's pieces: a right ex09.1 that rounds in another order
    // gives other last bits, as much as its tests accept (1e-6 of 1 + |weight|).
    fmt::print(
        "{}\n",
        wrap_text(r.library_rel_diff <= 1e-6
                      ? fmt::format("That is float rounding: at most {:.1e} of 1 + |weight|, "
                                    "within the 1e-6 attn-check accepts for one update "
                                    "(ex09.1). The written-out step runs your "
                                    "adamw_update, your train_step_on the library's; "
                                    "they round in other orders.",
                                    r.library_rel_diff)
                      : fmt::format("That is {:.1e} of 1 + |weight|, more than the 1e-6 "
                                    "of float rounding attn-check accepts for one "
                                    "update: check ex09.1, ex09.4, ex09.5 and ex09.6 with "
                                    "attn-check 09.",
                                    r.library_rel_diff),
                  92));
  }
  if (c.grad_clip > 0.0f && r.grad_norm > static_cast<double>(c.grad_clip)) {
    fmt::print(
        "Clipping scaled every gradient by the same factor, and on this first step AdamW's move\n"
        "m / sqrt(v) = g / |g| does not depend on the gradient's scale: the step is the one\n"
        "without clipping (to within eps). Clipping changes an Adam step when a spike meets a\n"
        "running second moment v built from smaller gradients, later in a run (see the page).\n");
  }
}

// ---- 4. Training.

namespace {

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

}  // namespace

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

// ---- 6. What the trained heads attend to.

namespace {

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

}  // namespace

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
      opt.title =
          fmt::format("layer {} head {}: the trained model's attention over {} val characters",
                      hm.layer, hm.head, maps.ids.size());
      opt.x_label = "key: the character attended to (causal: up to the query's own)";
      opt.y_label = "query: the character attending";
      attn::write_svg(*svg_dir / fmt::format("attention_l{}_h{}.svg", hm.layer, hm.head),
                      attn::heatmap_svg(hm.weights, opt));
    }
  }
}

}  // namespace ch09
