// chapters/07_causal_lm/show.cpp: the narration of chapter 07. Each function prints what one
// section of main.cpp computed, and checks the sentences its numbers could contradict
// (attn::claim).
#include "show.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/check.hpp"
#include "attn/term/narrate.hpp"
#include "attn/term/plot.hpp"
#include "attn/term/print.hpp"
#include "attn/model/block.hpp"
#include "attn/model/sample.hpp"

namespace ch07 {

using attn::chars_of;
using attn::num;
using attn::section;

namespace {

// "1 character", "42 characters".
std::string plural(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// Like attn::max_abs_diff, but tensors of different shapes (a learner's --mine forward may
// return one) differ by infinity instead of throwing, so the sentence can say so.
double max_abs_diff_or_inf(const Tensor<3>& a, const Tensor<3>& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  return attn::max_abs_diff(a, b);
}

// Entropy in nats of a distribution: log V when uniform, 0 when one token is certain.
double entropy(std::span<const float> probs) {
  double h = 0.0;
  for (const float p : probs)
    if (p > 0.0f) h -= static_cast<double>(p) * std::log(static_cast<double>(p));
  return h;
}

// The distribution sample_top_k draws from: softmax(logits / temperature) kept on the k largest
// logits (ties: lower id), renormalised. For the table of section 3 only.
std::vector<float> top_k_probs(std::span<const float> logits, float temperature, std::size_t k) {
  const attn::Vector probs = attn::probs_with_temperature(logits, temperature);  // (V,)
  std::vector<std::size_t> order(logits.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
  std::vector<float> kept(logits.size(), 0.0f);
  double sum = 0.0;
  for (std::size_t r = 0; r < k; ++r) sum += static_cast<double>(probs(order[r]));
  for (std::size_t r = 0; r < k; ++r)
    kept[order[r]] = static_cast<float>(static_cast<double>(probs(order[r])) / sum);
  return kept;
}

std::size_t distinct(std::span<const int> ids) {
  return std::set<int>(ids.begin(), ids.end()).size();
}

}  // namespace

// 1. The architecture and where its parameters are.
void show_architecture(const Model& m, const Parameters& r) {
  const attn::ModelSpec& c = m.config;
  const std::size_t V = c.vocab_size, C = c.n_embd, T_max = c.block_size, L = c.n_layers;
  const std::size_t F = c.ffn_hidden == 0 ? 4 * C : c.ffn_hidden;
  const std::string act = c.activation == attn::Activation::relu   ? "ReLU"
                          : c.activation == attn::Activation::gelu ? "GELU"
                                                                   : "tanh-GELU";
  section(1, "The whole decoder");
  fmt::print(
      "A causal language model reads T tokens and returns, at every position t, V scores\n"
      "(logits) for the token after position t. It is chapters 04-06 stacked:\n"
      "  tokens                           (B, T)      ids in [0, V)\n"
      "  x = wte[tokens] + wpe[0..T)      (B, T, C)   token embedding + learned position\n"
      "  x = block_l(x), l = 0..L-1       (B, T, C)   pre-norm, causal attention, {} FFN\n"
      "{}{}",
      c.ablations.ffn ? act : std::string("no"),
      c.ablations.layer_norm ? "  x = ln_f(x)                      (B, T, C)   final LayerNorm\n"
                             : "",
      c.ablations.tied_head
          ? "  logits = x @ wte^T               (B, T, V)   output projection tied to the "
            "embedding\n"
          : "  logits = x @ lm_head + b         (B, T, V)   a separate output head (C, V)\n");
  fmt::print("Here V = {}, C = {}, T_max = {}, L = {}, H = {} (head size {}), F = {}{}.\n", V, C,
             T_max, L, c.n_heads, C / c.n_heads, F == 4 * C ? "4C = " : "", F);
  const auto row = [&](std::string_view what, std::size_t n) {
    fmt::print("  {:<44} {:>9}  {:>5}%\n", what, n,
               num(100.0 * static_cast<double>(n) / static_cast<double>(r.total), 1));
  };
  fmt::print("\nParameters (counted from the tensors):\n");
  row(fmt::format("token embedding wte ({}, {})", V, C), r.embedding);
  row(fmt::format("positions wpe ({}, {})", T_max, C), r.positions);
  for (std::size_t l = 0; l < L; ++l) row(fmt::format("block {}", l), r.blocks[l]);
  if (r.final_ln > 0) row(fmt::format("final LayerNorm ln_f, gamma and beta ({},)", C), r.final_ln);
  if (r.head > 0) row(fmt::format("output head lm_head ({}, {}) and its bias", C, V), r.head);
  fmt::print("  {:<44} {:>9}\n", "total", r.total);
  const bool standard_blocks = std::all_of(r.blocks.begin(), r.blocks.end(), [&](std::size_t n) {
    return n == attn::block_param_count(C, F);
  });
  if (standard_blocks) {
    fmt::print(
        "A block is 4C^2 (w_q, w_k, w_v, w_o) + 2CF + F + C (FFN) + 4C (two LayerNorms)\n"
        "= {} + {} + {} = {} (attn::block_param_count), so the blocks grow as 12 C^2\n"
        "while the embedding grows as V C.\n",
        4 * C * C, 2 * C * F + F + C, 4 * C, attn::block_param_count(C, F));
  } else {
    fmt::print(
        "These blocks are a variant (chapter 09's ladder): their counts come from the tensors\n"
        "they hold, not from the formula 4C^2 + 2CF + F + C + 4C = {} of the full block.\n",
        attn::block_param_count(C, F));
  }
  if (c.ablations.tied_head) {
    fmt::print(
        "\nTying: there is no separate (C, V) output matrix. The logit of token v is the dot\n"
        "product of the final vector with wte[v], the very row that embeds v: one table both "
        "reads\nand writes tokens. That saves V * C = {} parameters: an untied model would be {}% "
        "larger\nthan this one. In GPT-2 small (V = 50257, C = 768) it saves 38.6 million "
        "parameters on top\nof 124 million.\n",
        V * C, num(100.0 * static_cast<double>(V * C) / static_cast<double>(r.total), 1));
  } else {
    fmt::print(
        "\nThis model's output head is its own (C, V) matrix and a bias, as in the lecture: {}\n"
        "parameters that tying it to wte (GPT-2's choice, the default of this chapter) would "
        "save.\n",
        r.head);
  }
}

// 2. Logits for the prompt, step by step and in one call; the untrained loss.
void show_logits(const Model& m, const attn::Vocab& vocab, const Prompt& p, const Logits& r) {
  const attn::ModelSpec& c = m.config;
  const std::size_t V = c.vocab_size, T_max = c.block_size;
  section(2, "Logits for a prompt");
  fmt::print("prompt {} ({})\n", attn::quote(chars_of(vocab, p.ids)),
             plural(p.ids.size(), "character"));
  if (p.ids.size() > T_max) {
    fmt::print(
        "That is longer than T_max = {}: wpe has no row for position {}, so the model reads\n"
        "the last {} characters only: {}\n",
        T_max, T_max, T_max, attn::quote(chars_of(vocab, p.context)));
  }
  const std::size_t T = p.context.size();
  fmt::print("tokens (B, T) = (1, {}): {}\n", T, attn::format_ids(p.context));

  fmt::print("\nThe forward pass step by step (std = standard deviation of all the values):\n");
  for (const ForwardStep& s : r.steps)
    fmt::print("  {:<26} {:<14} std {}\n", s.what, s.shape, num(s.std));
  const double one_call = max_abs_diff_or_inf(r.logits, r.stepwise);
  fmt::print("lm_forward in one call gives the same logits: max |difference| {}\n",
             attn::difference_text(one_call));
  attn::claim(one_call < 1e-4, "lm_forward gives the same logits");
  if (m.untrained) {
    const double expected = 0.02 * std::sqrt(static_cast<double>(c.n_embd));
    const double spread = r.steps.back().std;
    attn::claim(spread > 0.5 * expected && spread < 2.0 * expected,
                "the logits have a spread of about 0.02 sqrt(C)");
    fmt::print(
        "The weights start as N(0, 0.02^2): the embeddings are tiny, each block adds a little, "
        "and\n"
        "ln_f rescales every vector to mean 0 and variance 1. Its dot product with a row of wte\n"
        "({} terms of size ~0.02) is a logit of size ~0.02 * sqrt({}) = {}: nearly equal scores.\n",
        c.n_embd, c.n_embd, num(expected, 2));
  }

  // The next character: the last position's logits.
  const std::span<const float> last = last_row(r.logits);
  const attn::Vector probs = attn::probs_with_temperature(last, 1.0f);  // (V,)
  std::vector<int> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return probs(static_cast<std::size_t>(a)) > probs(static_cast<std::size_t>(b));
  });
  const char32_t last_char = vocab.char_of(p.context.back());
  fmt::print("\nlogits[0, {}] scores the character after {}. The 5 most likely:\n", T - 1,
             attn::quote(chars_of(
                 vocab, std::span<const int>(p.context).last(std::min<std::size_t>(T, 12)))));
  for (std::size_t rank = 0; rank < std::min<std::size_t>(5, V); ++rank) {
    const auto id = static_cast<std::size_t>(order[rank]);
    fmt::print("  {:>5}  logit {:>7}  p = {}\n", char_name(vocab.char_of(order[rank])),
               num(last[id]), num(probs(id)));
  }
  fmt::print("  uniform over V = {}: p = {}\n", V, num(1.0 / static_cast<double>(V)));
  if (m.untrained && vocab.char_of(order[0]) == last_char) {
    fmt::print(
        "The favourite is {}, the last character of the prompt. That is tying at work: the\n"
        "final vector is still mostly wte[{}] + wpe[{}] (the blocks only added small\n"
        "corrections), and of all the rows of wte the one most aligned with it is wte[{}]\n"
        "itself. Training will change that.\n",
        char_name(last_char), char_name(last_char), T - 1, char_name(last_char));
  }

  // The loss: position t predicts token t+1, over the T-1 positions that have a target.
  if (T < 2) {
    fmt::print("\nA one-character prompt has no target inside it, so there is no loss to show.\n");
    return;
  }
  const double log_v = std::log(static_cast<double>(V));
  fmt::print(
      "\nThe language-model loss on the prompt: position t predicts character t+1, {},\n"
      "mean -log p(target) = {}. A uniform guess scores log V = log {} = {}.\n",
      plural(T - 1, "prediction"), num(r.loss), V, num(log_v));
  if (!m.untrained) return;
  fmt::print(
      "Small random weights give nearly equal logits, so nearly uniform probabilities and a\n"
      "loss near log V: the model knows nothing yet.\n");
  if (r.loss > log_v) {
    fmt::print(
        "Here it is {} above log V, as it must be on average: preferences that have\n"
        "nothing to do with the text cost more on the characters they neglect than they win\n"
        "on the ones they favour.\n",
        num(r.loss - log_v));
  } else {
    fmt::print(
        "Here it is {} below log V, by luck: only on average must random preferences\n"
        "cost more on the characters they neglect than they win on the ones they favour, and\n"
        "this prompt's characters happen to be among the favoured.\n",
        num(log_v - r.loss));
  }
  attn::claim(std::abs(r.loss - log_v) < 0.5, "an untrained model's loss is near log V");
  fmt::print("Training lowers it: it needs a gradient for every weight.\n");
}

// 3. Generation with temperature and top-k.
void show_generation(const Model& m, const attn::Vocab& vocab, const Prompt& p,
                     const Tensor<3>& logits, const Generation& r, bool timing) {
  const attn::ModelSpec& c = m.config;
  const attn::GenerateOptions& g = r.options;
  const std::size_t V = c.vocab_size;
  section(3, "Generation");
  fmt::print(
      "Generating is a loop: crop the text to its last T_max = {} tokens, run the model, take\n"
      "the logits of the last position, divide them by the temperature, keep the k largest\n"
      "(top-k), softmax, draw one token, append it, repeat.\n",
      c.block_size);

  // The next-token distribution under a few settings.
  const std::span<const float> last = last_row(logits);
  fmt::print(
      "\nThe distribution of the next character after the prompt under different settings\n"
      "(entropy in nats; exp(entropy) is the number of equally likely characters it is worth):\n");
  fmt::print("  {:<28} {:>8} {:>14} {:>9}\n", "setting", "entropy", "exp(entropy)", "top p");
  const auto row = [&](const std::string& name, float temperature, std::size_t top_k) {
    const std::vector<float> probs = top_k_probs(last, temperature, top_k);
    const double h = entropy(probs);
    fmt::print("  {:<28} {:>8} {:>14} {:>9}\n", name, num(h), num(std::exp(h), 1),
               num(*std::max_element(probs.begin(), probs.end())));
  };
  fmt::print("  {:<28} {:>8} {:>14} {:>9}\n", "uniform", num(std::log(static_cast<double>(V))),
             num(static_cast<double>(V), 1), num(1.0 / static_cast<double>(V)));
  for (const float t : {0.5f, 1.0f, 1.5f}) row(fmt::format("temperature {}", num(t, 1)), t, V);
  row("temperature 1.0, top-k 5", 1.0f, std::min<std::size_t>(5, V));
  row("temperature 0.1", 0.1f, V);
  if (m.untrained) {
    // The sentence below, measured: the entropies at 0.5 and 1.5 within 10% of log V, and the
    // favourite's probability at 0.1.
    const double log_v = std::log(static_cast<double>(V));
    const double h_cold = entropy(top_k_probs(last, 0.5f, V));
    const double h_hot = entropy(top_k_probs(last, 1.5f, V));
    const std::vector<float> p01 = top_k_probs(last, 0.1f, V);
    const double top01 = *std::max_element(p01.begin(), p01.end());
    if (h_cold > 0.9 * log_v && h_hot > 0.9 * log_v) {
      fmt::print(
          "The logits are so close together that temperatures of 0.5 to 1.5 barely change the\n"
          "distribution (their entropy is within 10% of log V)");
      if (top01 > 0.3) {
        fmt::print(";\nit takes a temperature as low as 0.1 to make the favourite stand out.\n");
      } else {
        fmt::print(";\neven at 0.1 the favourite has only p = {}.\n", num(top01));
      }
    } else {
      fmt::print(
          "The logits are far enough apart that the temperature matters: the entropy goes\n"
          "from {} at 0.5 to {} at 1.5.\n",
          num(h_cold), num(h_hot));
    }
    fmt::print("Top-k changes it at once: k characters remain, whatever their logits.\n");
  }

  // The sample with the flags' settings.
  const std::vector<int>& sample = r.sample;
  const std::string top_k_text = g.top_k == 0 ? "off" : std::to_string(g.top_k);
  fmt::print("\n{} new characters, temperature {}, top-k {} (--tokens, --temperature, --top-k):\n",
             g.max_new_tokens, attn::format_significant(g.temperature), top_k_text);
  fmt::print("\n{}{}\n\n", attn::terminal_safe(chars_of(vocab, p.ids)),
             attn::terminal_safe(chars_of(vocab, sample)));
  fmt::print("attn::lm_generate with the same seed draws the same {} tokens: {}\n", sample.size(),
             sample == r.library ? "yes" : "NO (check ex07.3 and ex07.4)");
  const std::size_t total = p.ids.size() + sample.size();
  if (total - 1 > c.block_size) {  // the last step read the first total - 1 tokens
    fmt::print(
        "The text grew to {} tokens; each step fed the model at most the last {} (the last step\n"
        "saw tokens {} to {}), so anything earlier no longer influences what comes next.\n",
        total, plural(c.block_size, "token"), total - 1 - c.block_size, total - 2);
  }
  if (m.untrained) {
    // How flat the distribution the sample was drawn from is, at these settings (first step).
    const std::vector<float> drawn = top_k_probs(last, g.temperature, g.top_k == 0 ? V : g.top_k);
    const double h = entropy(drawn);
    if (h > 0.9 * std::log(static_cast<double>(V))) {
      fmt::print(
          "It is noise, and honest noise: the weights are random, so every character is drawn\n"
          "from a nearly uniform distribution. Nothing here knows that 'q' wants a 'u'.\n");
    } else {
      fmt::print(
          "It is noise, and honest noise: the weights are random. These settings leave about {}\n"
          "equally likely characters (exp(entropy) at the first step), chosen by random\n"
          "preferences, not by the text. Nothing here knows that 'q' wants a 'u'.\n",
          num(std::exp(h), 1));
    }
  }
  if (timing) {
    fmt::print(
        "(generation took {} ms, {} ms per token)\n", num(r.seconds * 1000.0, 1),
        num(r.seconds * 1000.0 / static_cast<double>(std::max<std::size_t>(sample.size(), 1)), 2));
  }

  // Same prompt, same seed, other settings.
  fmt::print("\nThe same prompt and seed with other settings ({} characters each):\n",
             g.max_new_tokens);
  fmt::print("  {:<26} {:>9} {:>8}  {}\n", "setting", "distinct", "repeats", "start of the sample");
  std::vector<std::size_t> repeats;  // per setting: a character equal to the one before it
  for (const Sample& s : r.others) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.ids.size(); ++i)
      n += s.ids[i] == (i == 0 ? p.ids.back() : s.ids[i - 1]) ? 1 : 0;
    repeats.push_back(n);
    const std::vector<int> head(
        s.ids.begin(),
        s.ids.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(s.ids.size(), 30)));
    fmt::print("  {:<26} {:>9} {:>8}  {}\n", s.setting, distinct(s.ids), n,
               attn::quote(chars_of(vocab, head)));
  }
  fmt::print(
      "distinct: how many different characters the sample uses (the vocabulary has {});\n"
      "repeats: how often a character equals the one before it.\n",
      V);
  if (m.untrained) {
    const std::size_t repeats_hot = repeats[1], repeats_low = repeats[3];  // 1.5 and 0.1
    fmt::print(
        "One seed means one stream of uniform draws, so where the distributions are nearly flat\n"
        "the samples pick the same or neighbouring characters whatever the temperature. Top-k\n"
        "and a low temperature leave few candidates");
    if (repeats_low > repeats_hot) {
      fmt::print(
          ", and the favourite is often the character\n"
          "just written (section 2), hence the repeats: {} at temperature 0.1, {} at 1.5.\n",
          repeats_low, repeats_hot);
    } else {
      fmt::print(", yet here they repeat no more than the others.\n");
    }
  }
}

// 4. The weights as a folder of .npy files; a save/load round trip.
void show_weights(const Model& m, const Tensor<3>& logits, const RoundTrip& r,
                  const std::string& export_dir) {
  section(4, "Saving and loading the weights");
  fmt::print(
      "attn::save_lm writes one .npy file per tensor, the names of model.hpp; attn::load_lm reads\n"
      "them back. For this model, {} files, {} bytes (float32, 4 bytes a number, plus a\n"
      "header of about 128 bytes each):\n",
      r.files.size(), r.bytes);
  for (const NpyFile& f : r.files) {
    const bool other_block = f.name.rfind("h", 0) == 0 && f.name.rfind("h0.", 0) != 0;
    if (other_block) continue;
    fmt::print("  {:<18} {:<10} '{}'\n", f.name, attn::shape_str(f.shape), f.descr);
  }
  fmt::print("  {:<29} the architecture: n_layers, n_heads and the variant (chapter 09)\n",
             "model.txt");
  const auto per_block =
      static_cast<std::size_t>(std::count_if(r.files.begin(), r.files.end(), [](const NpyFile& f) {
        return f.name.rfind("h0.", 0) == 0;
      }));
  if (m.config.n_layers == 2) {
    fmt::print("  {:<29} the same {} names for block 1\n", "h1.*.npy", per_block);
  } else if (m.config.n_layers > 2) {
    fmt::print("  {:<29} the same {} names for blocks 1 to {}\n",
               fmt::format("h1.*.npy ... h{}.*.npy", m.config.n_layers - 1), per_block,
               m.config.n_layers - 1);
  }
  const double difference = max_abs_diff_or_inf(r.again, logits);
  fmt::print(
      "\nRound trip: save_lm to a temporary folder, load it back as the folder describes itself\n"
      "(L, H and the variant from model.txt; V, T_max and C from wte and wpe), the same prompt:\n"
      "  max |difference| of the logits: {}\n",
      attn::difference_text(difference));
  attn::claim(difference == 0.0, "every bit survives the round trip");
  fmt::print(
      "float32 in, float32 out: every bit survives. From the command line, the same is\n"
      "  07_causal_lm --export DIR       then       07_causal_lm --weights DIR\n"
      "and a model exported from PyTorch runs with --weights too (with --n-heads, or with a\n"
      "model.txt beside its tensors). This course computes x @ W with W (in, out), as GPT-2's\n"
      "Conv1D layers store it; PyTorch's nn.Linear stores W as (out, in) and computes x @ W^T,\n"
      "so an exporter transposes nn.Linear weights and copies Conv1D ones as they are\n"
      "(docs/07-causal-lm.md has the script).\n");
  if (!export_dir.empty()) {
    fmt::print("\n--export: the same {} files are in '{}'.\n", r.files.size(), export_dir);
  }
}

// ---------------------------------------------------------------------------------------------
// --svg.
namespace {

// The whole model as a picture.
std::vector<attn::DiagramNode> model_diagram(const attn::ModelSpec& c) {
  using Kind = attn::DiagramNode::Kind;
  const std::string btc = "(B, T, C), C = " + std::to_string(c.n_embd);
  std::vector<attn::DiagramNode> n;
  n.push_back({Kind::text, "tokens", "(B, T) ids in [0, V), V = " + std::to_string(c.vocab_size), 0,
               false});
  n.push_back({Kind::box, "x = wte[tokens] + wpe[0..T)",
               fmt::format("token ({}, {}) + position ({}, {}) tables", c.vocab_size, c.n_embd,
                           c.block_size, c.n_embd),
               0, false});
  const std::string act = c.activation == attn::Activation::relu   ? "ReLU"
                          : c.activation == attn::Activation::gelu ? "GELU"
                                                                   : "tanh-GELU";
  const std::string block_note = fmt::format("pre-norm, causal, {} heads, {} FFN", c.n_heads, act);
  if (c.n_layers <= 4) {
    for (std::size_t l = 0; l < c.n_layers; ++l)
      n.push_back(
          {Kind::box, fmt::format("transformer block {} (chapter 06)", l), block_note, 0, true});
  } else {
    n.push_back({Kind::box, fmt::format("transformer blocks 0 .. {} (chapter 06)", c.n_layers - 1),
                 block_note, 0, true});
  }
  n.push_back({Kind::box, "final LayerNorm ln_f", btc, 0, false});
  // The head the model has: tied to the embedding (this chapter's default) or its own (C, V).
  if (c.ablations.tied_head) {
    n.push_back(
        {Kind::box, "logits = x @ wte^T", "tied: the embedding table scores the tokens", 0, false});
  } else {
    n.push_back({Kind::box, "logits = x @ lm_head + b",
                 "a separate output head (C, V) and its bias", 0, false});
  }
  n.push_back({Kind::text, "logits", "(B, T, V): row t scores the token after t", 0, false});
  return n;
}

// Each head's attention in the last layer, over the prompt's context.
std::vector<std::string> write_head_maps(const std::filesystem::path& dir, const Model& m,
                                         const attn::Vocab& vocab, const Prompt& p,
                                         const Tensor<3>& logits) {
  xt::xtensor<int, 2> tokens({1, p.context.size()});  // (1, T)
  std::copy(p.context.begin(), p.context.end(), tokens.begin());
  const attn::LmForward f = attn::lm_forward_with_weights(tokens, m.weights, m.config);
  attn::claim(max_abs_diff_or_inf(f.logits, logits) == 0.0,
              "keeping the attention weights changes no logit");
  const std::size_t L = m.config.n_layers, T = p.context.size();
  const Tensor<4>& a = f.weights[L - 1];  // (1, H, T, T)
  std::vector<std::string> labels;
  for (const int id : p.context) {
    const char32_t c = vocab.char_of(id);
    labels.push_back(c == U' ' ? "\u2423" : attn::printable(c));  // a visible space
  }
  std::vector<std::string> paths;
  for (std::size_t h = 0; h < m.config.n_heads; ++h) {
    const Matrix w = xt::view(a, 0, h, xt::all(), xt::all());  // (T, T)
    attn::HeatmapOptions o;
    o.title = fmt::format("layer {}, head {}: attention over the prompt (T = {}){}", L - 1, h, T,
                          m.untrained ? ", untrained" : "");
    o.row_labels = labels;
    o.col_labels = labels;
    o.x_label = "key: the character attended to (causal: up to the query's own)";
    o.y_label = "query: the character attending";
    o.vmin = 0.0f;
    o.vmax = 1.0f;
    o.annotate = T <= 12;
    const std::filesystem::path path = dir / fmt::format("attention_l{}_h{}.svg", L - 1, h);
    attn::write_svg(path, attn::heatmap_svg(w, o));
    paths.push_back(path.string());
  }
  return paths;
}

}  // namespace

void write_svgs(const std::filesystem::path& dir, const Model& m, const attn::Vocab& vocab,
                const Prompt& p, const Tensor<3>& logits) {
  const std::filesystem::path model_path = dir / "causal_lm.svg";
  attn::write_svg(model_path, attn::diagram_svg(fmt::format("The causal language model, L = {}",
                                                            m.config.n_layers),
                                                model_diagram(m.config)));
  const std::vector<std::string> maps = write_head_maps(dir, m, vocab, p, logits);
  fmt::print("\nwrote {}, and {} .. {}\n", model_path.string(), maps.front(), maps.back());
}

}  // namespace ch07
