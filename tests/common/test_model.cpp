// Tests for attn/model.hpp: the causal language model of chapter 07.
// lm_forward is checked against a composition of the library's pieces written out by hand, for
// causality and for its errors; load_lm/save_lm round-trip and report broken folders;
// lm_generate is reproducible and crops its context. PyTorch itself checks the model in
// tests/golden (cases lm_*).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "attn/block.hpp"
#include "attn/layernorm.hpp"
#include "attn/matmul.hpp"
#include "attn/model.hpp"
#include "attn/npy.hpp"
#include "attn/random.hpp"
#include "test_helpers.hpp"

namespace {

namespace fs = std::filesystem;

// A fresh folder per test binary, removed at exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("attn_test_model_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& temp() {
  static const TempDir dir;
  return dir.path;
}

attn::LmConfig tiny_config() {
  attn::LmConfig c;
  c.vocab_size = 11;  // V
  c.block_size = 6;   // T_max
  c.n_embd = 8;       // C
  c.n_heads = 2;      // H, hs = 4
  c.n_layers = 2;     // L
  return c;
}

// lm_init's 0.02 weights make nearly uniform logits; these scales make every part matter.
attn::LmWeights random_model(attn::Rng& rng, const attn::LmConfig& config) {
  attn::LmWeights w = attn::lm_init(rng, config);
  const std::size_t C = config.n_embd;
  const float s = 1.0f / std::sqrt(static_cast<float>(C));
  w.wte = attn::randn(rng, config.vocab_size, C, 0.5f);
  w.wpe = attn::randn(rng, config.block_size, C, 0.5f);
  for (attn::BlockWeights& b : w.blocks) {
    b.attn = attn::mha_init(rng, C, s);
    b.ffn = attn::ffn_init(rng, C, 4 * C, s);
    b.ffn.b1 = attn::randn<1>(rng, {4 * C}, 0.1f);
    b.ffn.b2 = attn::randn<1>(rng, {C}, 0.1f);
    b.ln1_gamma = 1.0f + attn::randn<1>(rng, {C}, 0.1f);
    b.ln1_beta = attn::randn<1>(rng, {C}, 0.1f);
    b.ln2_gamma = 1.0f + attn::randn<1>(rng, {C}, 0.1f);
    b.ln2_beta = attn::randn<1>(rng, {C}, 0.1f);
  }
  w.ln_f_gamma = 1.0f + attn::randn<1>(rng, {C}, 0.1f);
  w.ln_f_beta = attn::randn<1>(rng, {C}, 0.1f);
  return w;
}

// The model written out step by step from the pieces, one sequence at a time, with the plain
// three-loop matmul for the output projection.
attn::Tensor<3> naive_lm(const xt::xtensor<int, 2>& tokens, const attn::LmWeights& w,
                         const attn::LmConfig& config) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
  const std::size_t C = config.n_embd, V = config.vocab_size;
  attn::BlockConfig bc;
  bc.n_heads = config.n_heads;
  bc.causal = true;
  bc.norm = attn::NormPlacement::pre;
  bc.activation = attn::Activation::gelu;
  bc.eps = 1e-5f;
  const attn::Matrix wte_t = xt::transpose(w.wte);  // (C, V)
  attn::Tensor<3> logits(std::array<std::size_t, 3>{B, T, V});
  for (std::size_t b = 0; b < B; ++b) {
    attn::Tensor<3> x(std::array<std::size_t, 3>{1, T, C});
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c)
        x(0, t, c) = w.wte(static_cast<std::size_t>(tokens(b, t)), c) + w.wpe(t, c);
    for (const attn::BlockWeights& blk : w.blocks) x = attn::block_forward(x, blk, bc).out;
    const attn::Matrix x2 = xt::view(x, 0, xt::all(), xt::all());                    // (T, C)
    const attn::Matrix h = attn::layer_norm<2>(x2, w.ln_f_gamma, w.ln_f_beta, 1e-5f);  // (T, C)
    const attn::Matrix l = attn::matmul(h, wte_t);                   // (T, V)
    xt::view(logits, b, xt::all(), xt::all()) = l;
  }
  return logits;
}

xt::xtensor<int, 2> random_tokens(attn::Rng& rng, std::size_t B, std::size_t T, std::size_t V) {
  xt::xtensor<int, 2> t(std::array<std::size_t, 2>{B, T});
  for (int& id : t) id = static_cast<int>(rng.below(V));
  return t;
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

// A saved model in a fresh folder under temp().
fs::path saved_model(const std::string& name, const attn::LmWeights& w) {
  const fs::path dir = temp() / name;
  fs::remove_all(dir);
  attn::save_lm(dir, w);
  return dir;
}

}  // namespace

TEST_SUITE("model") {

TEST_CASE("lm_init gives every tensor its shape, 0.02-scale tables and identity ln_f") {
  attn::Rng rng(1);
  attn::LmConfig config;  // the defaults: V 65, T_max 64, C 64, H 4, L 2
  const attn::LmWeights w = attn::lm_init(rng, config);
  CHECK(w.wte.shape() == std::array<std::size_t, 2>{65, 64});
  CHECK(w.wpe.shape() == std::array<std::size_t, 2>{64, 64});
  REQUIRE(w.blocks.size() == 2);
  for (const attn::BlockWeights& b : w.blocks) {
    CHECK(b.attn.w_q.shape() == std::array<std::size_t, 2>{64, 64});
    CHECK(b.ffn.w1.shape() == std::array<std::size_t, 2>{64, 256});
    CHECK(b.ffn.w2.shape() == std::array<std::size_t, 2>{256, 64});
  }
  CHECK(w.ln_f_gamma == xt::ones<float>({64}));
  CHECK(w.ln_f_beta == xt::zeros<float>({64}));
  const double sd = std::sqrt(xt::mean(xt::square(xt::cast<double>(w.wte)))());
  CHECK(sd == doctest::Approx(0.02).epsilon(0.05));

  attn::Rng again(1);
  CHECK(attn::lm_init(again, config).wpe == w.wpe);

  config.n_heads = 5;
  CHECK_THROWS_WITH_AS(attn::lm_init(rng, config),
                       "attn::lm_init: n_heads = 5 does not divide n_embd = 64",
                       std::invalid_argument);
}

TEST_CASE("lm_forward equals the pieces composed by hand") {
  attn::Rng rng(7);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  SUBCASE("B 2, T 5") {
    const auto tokens = random_tokens(rng, 2, 5, config.vocab_size);
    const attn::Tensor<3> logits = attn::lm_forward(tokens, w, config);
    CHECK(logits.shape() == std::array<std::size_t, 3>{2, 5, 11});
    CHECK_TENSOR_NEAR(logits, naive_lm(tokens, w, config), 1e-5, 1e-4);
    CHECK(xt::amax(xt::abs(logits))() > 1.0f);  // not a degenerate model
  }
  SUBCASE("T = T_max") {
    const auto tokens = random_tokens(rng, 1, 6, config.vocab_size);
    CHECK_TENSOR_NEAR(attn::lm_forward(tokens, w, config), naive_lm(tokens, w, config), 1e-5, 1e-4);
  }
  SUBCASE("T = 1") {
    const xt::xtensor<int, 2> tokens = {{3}, {10}};
    CHECK_TENSOR_NEAR(attn::lm_forward(tokens, w, config), naive_lm(tokens, w, config), 1e-5, 1e-4);
  }
}

TEST_CASE("lm_forward_with_weights gives lm_forward's logits and each layer's causal weights") {
  attn::Rng rng(11);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  const auto tokens = random_tokens(rng, 2, 5, config.vocab_size);
  const attn::LmForward f = attn::lm_forward_with_weights(tokens, w, config);
  const attn::Tensor<3> logits = attn::lm_forward(tokens, w, config);
  CHECK(f.logits == logits);  // bit for bit: keeping the weights changes no number
  REQUIRE(f.weights.size() == config.n_layers);
  for (const attn::Tensor<4>& a : f.weights) {
    REQUIRE(a.shape() == std::array<std::size_t, 4>{2, config.n_heads, 5, 5});
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t h = 0; h < config.n_heads; ++h)
        for (std::size_t t = 0; t < 5; ++t) {
          double sum = 0.0;
          for (std::size_t s = 0; s < 5; ++s) {
            sum += static_cast<double>(a(b, h, t, s));
            if (s > t) CHECK(a(b, h, t, s) == 0.0f);  // causal: the future gets nothing
          }
          CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
        }
  }
  // The two layers attend differently (different weights): not one tensor copied twice.
  if (config.n_layers >= 2) CHECK(xt::amax(xt::abs(f.weights[0] - f.weights[1]))() > 1e-4f);
}

TEST_CASE("future tokens do not change the logits of earlier positions") {
  attn::Rng rng(3);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  const xt::xtensor<int, 2> a = {{1, 4, 9, 2, 7, 0}};
  const xt::xtensor<int, 2> b = {{1, 4, 9, 5, 5, 10}};  // same first 3 tokens
  const attn::Tensor<3> la = attn::lm_forward(a, w, config);
  const attn::Tensor<3> lb = attn::lm_forward(b, w, config);
  const attn::Tensor<3> first_a = xt::view(la, xt::all(), xt::range(0, 3), xt::all());
  const attn::Tensor<3> first_b = xt::view(lb, xt::all(), xt::range(0, 3), xt::all());
  // Equal up to rounding (BLAS may sum in another order for another number of rows); a leak
  // from the future would change them by ~0.1.
  CHECK_TENSOR_NEAR(first_a, first_b, 1e-5, 1e-5);
  // The prefix alone gives the same logits too.
  const xt::xtensor<int, 2> prefix = {{1, 4, 9}};
  CHECK_TENSOR_NEAR(attn::lm_forward(prefix, w, config), first_a, 1e-5, 1e-5);
  // And position 3 does see its own (different) token.
  CHECK(std::abs(la(0, 3, 0) - lb(0, 3, 0)) > 1e-3f);
}

TEST_CASE("lm_forward rejects empty, too long and out-of-vocabulary input") {
  attn::Rng rng(5);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  const xt::xtensor<int, 2> empty(std::array<std::size_t, 2>{1, 0});
  CHECK_THROWS_WITH_AS(attn::lm_forward(empty, w, config),
                       "attn::lm_forward: empty sequence: tokens of shape (1, 0)",
                       std::invalid_argument);
  const xt::xtensor<int, 2> long_seq = xt::zeros<int>({2, 7});
  CHECK_THROWS_WITH_AS(
      attn::lm_forward(long_seq, w, config),
      "attn::lm_forward: sequence of 7 tokens is longer than the position table (block_size 6)",
      std::invalid_argument);
  const xt::xtensor<int, 2> too_big = {{1, 2, 3}, {4, 11, 0}};
  CHECK_THROWS_WITH_AS(attn::lm_forward(too_big, w, config),
                       "attn::lm_forward: token id 11 at (1, 1) is outside [0, 11)",
                       std::invalid_argument);
  const xt::xtensor<int, 2> negative = {{-1}};
  CHECK_THROWS_WITH_AS(attn::lm_forward(negative, w, config),
                       "attn::lm_forward: token id -1 at (0, 0) is outside [0, 11)",
                       std::invalid_argument);
  attn::LmConfig wrong = config;
  wrong.vocab_size = 12;
  CHECK_THROWS_WITH_AS(attn::lm_forward(xt::xtensor<int, 2>{{1}}, w, wrong),
                       "attn::lm_forward: expected wte of shape (V, C) = (12, 8), got (11, 8)",
                       std::invalid_argument);
  wrong = config;
  wrong.n_layers = 3;
  CHECK_THROWS_WITH_AS(attn::lm_forward(xt::xtensor<int, 2>{{1}}, w, wrong),
                       "attn::lm_forward: config has n_layers = 3 but the weights hold 2 blocks",
                       std::invalid_argument);
}

TEST_CASE("save_lm then load_lm gives the same model and the same logits") {
  attn::Rng rng(11);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  const fs::path dir = saved_model("round_trip", w);
  CHECK(fs::exists(dir / "h1.ln2_beta.npy"));
  CHECK(fs::exists(dir / "ln_f_gamma.npy"));

  attn::LmConfig loaded_config;
  loaded_config.vocab_size = 999;  // overwritten
  const attn::LmWeights loaded = attn::load_lm(dir, 2, 2, loaded_config);
  CHECK(loaded_config.vocab_size == 11);
  CHECK(loaded_config.block_size == 6);
  CHECK(loaded_config.n_embd == 8);
  CHECK(loaded_config.n_heads == 2);
  CHECK(loaded_config.n_layers == 2);
  CHECK(loaded.blocks[1].ffn.w2 == w.blocks[1].ffn.w2);
  const auto tokens = random_tokens(rng, 2, 6, 11);
  const attn::Tensor<3> before = attn::lm_forward(tokens, w, config);
  const attn::Tensor<3> after = attn::lm_forward(tokens, loaded, loaded_config);
  CHECK(before == after);  // bit for bit
}

TEST_CASE("load_lm names the first missing, mis-shaped or corrupt tensor") {
  attn::Rng rng(13);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  attn::LmConfig out;

  SUBCASE("a missing tensor") {
    const fs::path dir = saved_model("missing", w);
    fs::remove(dir / "h0.b1.npy");
    fs::remove(dir / "h1.w_q.npy");  // later in the order: not the one reported
    CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 2, out),
                         ("model '" + dir.string() + "': missing h0.b1.npy").c_str(),
                         std::runtime_error);
  }
  SUBCASE("a mis-shaped tensor") {
    const fs::path dir = saved_model("misshaped", w);
    attn::save_npy(dir / "h1.w_q.npy", attn::Matrix(xt::zeros<float>({8, 4})));
    CHECK_THROWS_WITH_AS(
        attn::load_lm(dir, 2, 2, out),
        ("model '" + dir.string() + "': h1.w_q.npy has shape (8, 4), expected (8, 8)").c_str(),
        std::runtime_error);
    attn::save_npy(dir / "h1.w_q.npy", attn::Matrix(xt::zeros<float>({8, 8})));
    attn::save_npy(dir / "h0.b1.npy", attn::Matrix(xt::zeros<float>({1, 32})));
    CHECK_THROWS_WITH_AS(
        attn::load_lm(dir, 2, 2, out),
        ("model '" + dir.string() + "': h0.b1.npy has shape (1, 32), expected (32,)").c_str(),
        std::runtime_error);
  }
  SUBCASE("a corrupt .npy file") {
    const fs::path dir = saved_model("corrupt", w);
    write_text(dir / "h0.w_k.npy", "this is not numpy\n");
    CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 2, out),
                         ((dir / "h0.w_k.npy").string() + ": not a .npy file (bad magic)").c_str(),
                         std::runtime_error);
  }
  SUBCASE("an integer tensor") {
    const fs::path dir = saved_model("ints", w);
    // A valid int64 .npy of shape (8,) in place of ln_f_beta.
    std::string bytes = "\x93NUMPY";
    bytes += std::string("\x01\x00", 2);
    std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (8,), }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    bytes += static_cast<char>(header.size());  // < 256
    bytes += '\0';
    bytes += header + std::string(64, '\0');
    write_text(dir / "ln_f_beta.npy", bytes);
    CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 2, out),
                         ("model '" + dir.string() +
                          "': ln_f_beta.npy holds '<i8', expected float32 ('<f4') or float64 ('<f8')")
                             .c_str(),
                         std::runtime_error);
  }
  SUBCASE("sizes that do not fit") {
    const fs::path dir = saved_model("sizes", w);
    const std::string prefix = "model '" + dir.string() + "': ";
    CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 3, out),
                         (prefix + "n_heads = 3 does not divide C = 8 (from wte.npy)").c_str(),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(attn::load_lm(dir, 0, 2, out),
                         (prefix + "n_layers must be at least 1, got 0").c_str(), std::runtime_error);
    CHECK_THROWS_WITH_AS(attn::load_lm(dir, 3, 2, out), (prefix + "missing h2.w_q.npy").c_str(),
                         std::runtime_error);
    attn::save_npy(dir / "wpe.npy", attn::Matrix(xt::zeros<float>({6, 4})));
    CHECK_THROWS_WITH_AS(
        attn::load_lm(dir, 2, 2, out),
        (prefix + "wpe.npy has shape (6, 4), expected (T_max, 8) with C = 8 from wte.npy").c_str(),
        std::runtime_error);
    attn::save_npy(dir / "wte.npy", attn::Vector(xt::zeros<float>({8})));
    CHECK_THROWS_WITH_AS(
        attn::load_lm(dir, 2, 2, out),
        (prefix + "wte.npy has shape (8,), expected a non-empty (V, C) table").c_str(),
        std::runtime_error);
  }
  SUBCASE("no folder") {
    const fs::path dir = temp() / "no_such_model";
    CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 2, out),
                         ("model '" + dir.string() + "': no such folder").c_str(),
                         std::runtime_error);
  }
}

TEST_CASE("lm_generate is reproducible with a seed and returns only the new tokens") {
  attn::Rng init(17);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(init, config);
  const std::vector<int> prompt = {1, 2, 3};
  attn::GenerateOptions options;
  options.max_new_tokens = 20;  // beyond T_max = 6: the context is cropped as it grows
  attn::Rng a(99), b(99), c(100);
  const std::vector<int> ga = attn::lm_generate(w, config, prompt, options, a);
  const std::vector<int> gb = attn::lm_generate(w, config, prompt, options, b);
  const std::vector<int> gc = attn::lm_generate(w, config, prompt, options, c);
  CHECK(ga.size() == 20);
  CHECK(ga == gb);
  CHECK(ga != gc);
  for (const int t : ga) CHECK((t >= 0 && t < 11));
  options.max_new_tokens = 0;
  CHECK(attn::lm_generate(w, config, prompt, options, a).empty());
}

TEST_CASE("top_k = 1 is greedy decoding: each token is the argmax of the cropped context") {
  attn::Rng init(19);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(init, config);
  const std::vector<int> prompt = {4, 4, 0, 9, 1, 3, 7, 2};  // longer than T_max = 6
  attn::GenerateOptions options;
  options.max_new_tokens = 8;
  options.top_k = 1;
  attn::Rng rng(1);
  const std::vector<int> got = attn::lm_generate(w, config, prompt, options, rng);
  std::vector<int> context = prompt;
  for (const int token : got) {
    xt::xtensor<int, 2> tokens(std::array<std::size_t, 2>{1, 6});
    std::copy(context.end() - 6, context.end(), tokens.data());
    const attn::Tensor<3> logits = attn::lm_forward(tokens, w, config);
    int best = 0;  // the first largest logit of the last position (top-k's tie rule)
    for (int v = 1; v < 11; ++v) {
      if (logits(0, 5, static_cast<std::size_t>(v)) > logits(0, 5, static_cast<std::size_t>(best))) best = v;
    }
    CHECK(token == best);
    context.push_back(token);
  }
}

TEST_CASE("a prompt longer than T_max is cropped to its last T_max tokens") {
  attn::Rng init(23);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(init, config);
  const std::vector<int> long_prompt = {10, 9, 8, 1, 2, 3, 4, 5, 6};
  const std::vector<int> last6 = {1, 2, 3, 4, 5, 6};
  attn::GenerateOptions options;
  options.max_new_tokens = 10;
  options.top_k = 4;
  options.temperature = 0.8f;
  attn::Rng a(5), b(5);
  CHECK(attn::lm_generate(w, config, long_prompt, options, a) ==
        attn::lm_generate(w, config, last6, options, b));
}

TEST_CASE("lm_generate rejects an empty prompt, bad options and unknown prompt tokens") {
  attn::Rng init(29);
  const attn::LmConfig config = tiny_config();
  const attn::LmWeights w = random_model(init, config);
  attn::Rng rng(1);
  attn::GenerateOptions options;
  options.max_new_tokens = 3;
  const std::vector<int> prompt = {1};
  CHECK_THROWS_WITH_AS(attn::lm_generate(w, config, std::vector<int>{}, options, rng),
                       "attn::lm_generate: empty prompt (give at least one token)",
                       std::invalid_argument);
  options.top_k = 12;
  CHECK_THROWS_WITH_AS(attn::lm_generate(w, config, prompt, options, rng),
                       "attn::lm_generate: top_k must be in [0, 11] (0 = all tokens), got 12",
                       std::invalid_argument);
  options.top_k = 11;  // every token: allowed
  CHECK(attn::lm_generate(w, config, prompt, options, rng).size() == 3);
  options.top_k = 0;
  options.temperature = 0.0f;
  CHECK_THROWS_WITH_AS(attn::lm_generate(w, config, prompt, options, rng),
                       "attn::lm_generate: temperature must be > 0, got 0", std::invalid_argument);
  options.temperature = 1.0f;
  CHECK_THROWS_WITH_AS(attn::lm_generate(w, config, std::vector<int>{3, 11}, options, rng),
                       "attn::lm_generate: prompt token 11 at position 1 is outside [0, 11)",
                       std::invalid_argument);
}

}  // TEST_SUITE
