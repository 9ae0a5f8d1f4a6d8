// Tests for attn/model/model.hpp: the causal language model of chapter 07.
// lm_forward is checked against a composition of the library's pieces written out by hand, for
// causality and for its errors; load_lm/save_lm round-trip and report broken folders;
// lm_generate is reproducible and crops its context. PyTorch itself checks the model in
// tests/golden (cases lm_*).
#include <doctest/doctest.h>

#include <limits>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "attn/model/block.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/model/model.hpp"
#include "attn/term/model_flags.hpp"
#include "attn/model/reference.hpp"
#include "attn/io/npy.hpp"
#include "attn/core/random.hpp"
#include "attn/train/gradcheck.hpp"
#include "attn/ops/loss.hpp"
#include "attn/core/threads.hpp"
#include "gradcheck_helpers.hpp"
#include "test_fixtures.hpp"
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

// V 11, T_max 6, C 8, H 2 (hs = 4), L 2.
attn::ModelSpec tiny_config() { return attn::testing::lm_config(11, 6, 8, 2, 2); }

using attn::testing::random_ids;
using attn::testing::random_lm;
using attn::testing::random_model;

// The model written out step by step from the pieces, one sequence at a time, with the plain
// three-loop matmul for the output projection.
attn::Tensor<3> naive_lm(const xt::xtensor<int, 2>& tokens, const attn::LmWeights& w,
                         const attn::ModelSpec& config) {
  const std::size_t B = tokens.shape()[0], T = tokens.shape()[1];
  const std::size_t C = config.n_embd, V = config.vocab_size;
  attn::BlockConfig bc = attn::testing::block_config(
      C, config.n_heads, [](attn::ModelChoices& m) { m.activation = attn::Activation::gelu; });
  bc.causal = true;
  bc.norm = attn::NormPlacement::pre;
  bc.eps = 1e-5f;
  const attn::Matrix wte_t = xt::transpose(w.wte);  // (C, V)
  attn::Tensor<3> logits(std::array<std::size_t, 3>{B, T, V});
  for (std::size_t b = 0; b < B; ++b) {
    attn::Tensor<3> x(std::array<std::size_t, 3>{1, T, C});
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < C; ++c)
        x(0, t, c) = w.wte(static_cast<std::size_t>(tokens(b, t)), c) + w.wpe(t, c);
    for (const attn::BlockWeights& blk : w.blocks) x = attn::block_forward(x, blk, bc).out;
    const attn::Matrix x2 = xt::view(x, 0, xt::all(), xt::all());                      // (T, C)
    const attn::Matrix h = attn::layer_norm<2>(x2, w.ln_f_gamma, w.ln_f_beta, 1e-5f);  // (T, C)
    const attn::Matrix l = attn::matmul(h, wte_t);                                     // (T, V)
    xt::view(logits, b, xt::all(), xt::all()) = l;
  }
  return logits;
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
  attn::ModelSpec config;  // the defaults: V 65, T_max 64, C 64, H 4, L 2
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

  // A spec that does not fit is refused once, by resolve_spec (lm_init takes a resolved spec).
  attn::ModelChoices five_heads = config.choices();
  five_heads.n_heads = 5;
  CHECK_THROWS_WITH_AS(
      attn::resolve_spec(five_heads),
      "n_heads 5 does not divide n_embd 64 (every head gets n_embd / n_heads channels)",
      attn::SpecError);
}

TEST_CASE("lm_forward equals the pieces composed by hand") {
  attn::Rng rng(7);
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  SUBCASE("B 2, T 5") {
    const auto tokens = random_ids(rng, 2, 5, config.vocab_size);
    const attn::Tensor<3> logits = attn::lm_forward(tokens, w, config);
    CHECK(logits.shape() == std::array<std::size_t, 3>{2, 5, 11});
    CHECK_TENSOR_NEAR(logits, naive_lm(tokens, w, config), 1e-5, 1e-4);
    CHECK(xt::amax(xt::abs(logits))() > 1.0f);  // not a degenerate model
  }
  SUBCASE("T = T_max") {
    const auto tokens = random_ids(rng, 1, 6, config.vocab_size);
    CHECK_TENSOR_NEAR(attn::lm_forward(tokens, w, config), naive_lm(tokens, w, config), 1e-5, 1e-4);
  }
  SUBCASE("T = 1") {
    const xt::xtensor<int, 2> tokens = {{3}, {10}};
    CHECK_TENSOR_NEAR(attn::lm_forward(tokens, w, config), naive_lm(tokens, w, config), 1e-5, 1e-4);
  }
}

TEST_CASE("lm_forward_with_weights gives lm_forward's logits and each layer's causal weights") {
  attn::Rng rng(11);
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  const auto tokens = random_ids(rng, 2, 5, config.vocab_size);
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
  const attn::ModelSpec config = tiny_config();
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
  const attn::ModelSpec config = tiny_config();
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
  attn::ModelSpec wrong =
      attn::with_choices(config, [](attn::ModelChoices& m) { m.vocab_size = 12; });
  CHECK_THROWS_WITH_AS(attn::lm_forward(xt::xtensor<int, 2>{{1}}, w, wrong),
                       "attn::lm_forward: wte is (11, 8), expected (12, 8)", std::invalid_argument);
  wrong = attn::with_choices(config, [](attn::ModelChoices& m) { m.n_layers = 3; });
  CHECK_THROWS_WITH_AS(attn::lm_forward(xt::xtensor<int, 2>{{1}}, w, wrong),
                       "attn::lm_forward: config has n_layers = 3 but the weights hold 2 blocks",
                       std::invalid_argument);
}

TEST_CASE("lm_forward names the tensor outside the blocks that does not fit the config") {
  attn::Rng rng(5);
  const xt::xtensor<int, 2> one = {{1}};
  SUBCASE("an untied head without biases has no lm_head_bias") {
    const attn::ModelSpec config = attn::with_choices(tiny_config(), [](attn::ModelChoices& m) {
      m.ablations.tied_head = false;
      m.bias = false;
    });
    attn::LmWeights w = attn::lm_init(rng, config);  // the table's tensors
    CHECK(attn::lm_forward(one, w, config).shape()[2] == 11);
    w.lm_head_bias = xt::zeros<float>({std::size_t{11}});
    CHECK_THROWS_WITH_AS(
        attn::lm_forward(one, w, config),
        "attn::lm_forward: lm_head_bias is (11,), expected empty (this model has no lm_head_bias)",
        std::invalid_argument);
  }
  SUBCASE("without LayerNorm, ln_f is empty or of the norm's shapes, nothing else") {
    const attn::ModelSpec config = attn::with_choices(
        tiny_config(), [](attn::ModelChoices& m) { m.ablations.layer_norm = false; });
    attn::LmWeights w = attn::lm_init(rng, config);  // the table's tensors
    const auto logits = attn::lm_forward(one, w, config);
    // The tolerance: the weights of the same model with norms give the same logits (ln_f unread).
    w.ln_f_gamma = xt::ones<float>({std::size_t{8}});
    w.ln_f_beta = xt::zeros<float>({std::size_t{8}});
    CHECK_TENSOR_NEAR(attn::lm_forward(one, w, config), logits, 0.0, 0.0);
    w.ln_f_gamma = xt::ones<float>({std::size_t{3}});
    CHECK_THROWS_WITH_AS(attn::lm_forward(one, w, config),
                         "attn::lm_forward: ln_f_gamma is (3,), expected (8,)",
                         std::invalid_argument);
  }
}

TEST_CASE("save_lm then load_lm gives the same model and the same logits") {
  attn::Rng rng(11);
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  const fs::path dir = saved_model("round_trip", w);
  CHECK(fs::exists(dir / "h1.ln2_beta.npy"));
  CHECK(fs::exists(dir / "ln_f_gamma.npy"));

  attn::ModelChoices other;
  other.vocab_size = 999;
  attn::ModelSpec loaded_config = attn::resolve_spec(other);  // overwritten
  const attn::LmWeights loaded = attn::load_lm(dir, 2, 2, loaded_config);
  CHECK(loaded_config.vocab_size == 11);
  CHECK(loaded_config.block_size == 6);
  CHECK(loaded_config.n_embd == 8);
  CHECK(loaded_config.n_heads == 2);
  CHECK(loaded_config.n_layers == 2);
  CHECK(loaded.blocks[1].ffn.w2 == w.blocks[1].ffn.w2);
  const auto tokens = random_ids(rng, 2, 6, 11);
  const attn::Tensor<3> before = attn::lm_forward(tokens, w, config);
  const attn::Tensor<3> after = attn::lm_forward(tokens, loaded, loaded_config);
  CHECK(before == after);  // bit for bit
}

TEST_CASE("load_lm names the first missing, mis-shaped or corrupt tensor") {
  attn::Rng rng(13);
  const attn::ModelSpec config = tiny_config();
  const attn::LmWeights w = random_model(rng, config);
  attn::ModelSpec out;

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
  SUBCASE("a NaN or an infinity is named with its tensor and first index (issue 7)") {
    const fs::path dir = saved_model("nonfinite", w);
    attn::Matrix bad = w.blocks[1].attn.w_v;  // (8, 8)
    bad(2, 3) = std::numeric_limits<float>::quiet_NaN();
    bad(5, 0) = std::numeric_limits<float>::infinity();
    attn::save_npy(dir / "h1.w_v.npy", bad);
    CHECK_THROWS_WITH_AS(
        attn::load_lm(dir, 2, 2, out),
        ("model '" + dir.string() +
         "': h1.w_v.npy holds nan at flat index 19: weights must be finite numbers")
            .c_str(),
        std::runtime_error);
    bad(2, 3) = 0.0f;
    attn::save_npy(dir / "h1.w_v.npy", bad);
    CHECK_THROWS_WITH_AS(
        attn::load_lm(dir, 2, 2, out),
        ("model '" + dir.string() +
         "': h1.w_v.npy holds inf at flat index 40: weights must be finite numbers")
            .c_str(),
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
    CHECK_THROWS_WITH_AS(
        attn::load_lm(dir, 2, 2, out),
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
                         (prefix + "n_layers must be at least 1, got 0").c_str(),
                         std::runtime_error);
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
  const attn::ModelSpec config = tiny_config();
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
  const attn::ModelSpec config = tiny_config();
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
      if (logits(0, 5, static_cast<std::size_t>(v)) > logits(0, 5, static_cast<std::size_t>(best)))
        best = v;
    }
    CHECK(token == best);
    context.push_back(token);
  }
}

TEST_CASE("a prompt longer than T_max is cropped to its last T_max tokens") {
  attn::Rng init(23);
  const attn::ModelSpec config = tiny_config();
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
  const attn::ModelSpec config = tiny_config();
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

TEST_SUITE("model.backward") {

using attn::testing::check_gradients;
using attn::testing::cspan_of;
using attn::testing::span_of;

// V 7, T_max 5, C 4, H 2 (hs = 2), L 2.
attn::ModelSpec small_config() { return attn::testing::lm_config(7, 5, 4, 2, 2); }

std::string describe(const attn::ModelSpec& c) {
  return "lm L=" + std::to_string(c.n_layers) + (c.ablations.tied_head ? "" : " untied") +
         (c.ablations.layer_norm ? "" : " noLN") + (c.ablations.residual ? "" : " noRes") +
         (c.ablations.ffn ? "" : " noFFN") + (c.ablations.attn_proj ? "" : " noProj") +
         (c.choices().ffn_hidden ? " F=" + std::to_string(c.ffn_hidden) : "") + " " +
         std::string(attn::activation_name(c.activation)) +
         (c.positions == attn::Positions::rope ? " rope" : "") +
         (c.normalization == attn::Normalization::rmsnorm ? " rmsnorm" : "") +
         (c.ffn == attn::FfnKind::swiglu ? " swiglu" : "") +
         (c.n_kv_heads != c.n_heads ? " KV=" + std::to_string(c.n_kv_heads) : "") +
         (c.window ? " W=" + std::to_string(*c.window) : "") + (c.bias ? "" : " no-bias");
}

std::vector<attn::ModelSpec> lm_variants() {
  std::vector<attn::ModelSpec> v;
  const attn::ModelSpec c = small_config();
  v.push_back(c);  // the default model
  for (std::size_t L : {1, 3})
    v.push_back(attn::with_choices(c, [&](attn::ModelChoices& d) { d.n_layers = L; }));
  auto with = [&](auto change) { v.push_back(attn::with_choices(c, change)); };
  with([](attn::ModelChoices& d) { d.ablations.tied_head = false; });
  with([](attn::ModelChoices& d) { d.ablations.layer_norm = false; });
  with([](attn::ModelChoices& d) { d.ablations.residual = false; });
  with([](attn::ModelChoices& d) { d.ablations.ffn = false; });
  with([](attn::ModelChoices& d) { d.ablations.attn_proj = false; });
  with([](attn::ModelChoices& d) {
    d.ffn_hidden = 5;
    d.activation = attn::Activation::gelu_tanh;
  });
  with([](attn::ModelChoices& d) { d.activation = attn::Activation::relu; });
  with([](attn::ModelChoices& d) {  // the bottom of chapter 09's ladder: attention only, untied
    d.ablations.tied_head = false;
    d.ablations.layer_norm = false;
    d.ablations.residual = false;
    d.ablations.ffn = false;
    d.ablations.attn_proj = false;
    d.n_layers = 1;
  });
  // Chapter 11's parts, each alone and all together (the Llama recipe, with and without a
  // window).
  with([](attn::ModelChoices& d) { d.positions = attn::Positions::rope; });
  with([](attn::ModelChoices& d) { d.normalization = attn::Normalization::rmsnorm; });
  with([](attn::ModelChoices& d) { d.ffn = attn::FfnKind::swiglu; });
  with([](attn::ModelChoices& d) { d.n_kv_heads = 1; });
  with([](attn::ModelChoices& d) { d.window = 2; });
  with([](attn::ModelChoices& d) {
    d.bias = false;
    d.ablations.tied_head = false;
  });
  const auto llama = [](attn::ModelChoices& d) {
    d.positions = attn::Positions::rope;
    d.normalization = attn::Normalization::rmsnorm;
    d.ffn = attn::FfnKind::swiglu;
    d.n_kv_heads = 1;
    d.bias = false;
  };
  with(llama);
  with([&](attn::ModelChoices& d) {
    llama(d);
    d.window = 3;
    d.n_layers = 3;
  });
  return v;
}

TEST_CASE("lm_forward_backward matches central differences for every parameter of every variant") {
  std::uint64_t seed = 600;
  for (const attn::ModelSpec& config : lm_variants()) {
    attn::Rng rng(seed++);
    attn::LmWeights w = random_lm(rng, config);
    const auto tokens = random_ids(rng, 2, 4, config.vocab_size);  // T = 4 < T_max = 5
    const auto targets = random_ids(rng, 2, 4, config.vocab_size);
    attn::LmWeights g = attn::lm_zeros_like(w);
    attn::LmCache cache;
    double loss = attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    // ReLU: redraw until no pre-activation is within 0.005 of the kink, where a central
    // difference (h = 5e-4 below, moving a pre-activation by ~1e-3 at most) would straddle it.
    auto near_kink = [&] {
      for (const attn::BlockCache& b : cache.blocks)
        if (b.ffn.pre.size() != 0 && xt::amin(xt::abs(b.ffn.pre))() < 0.005f) return true;
      return false;
    };
    for (int tries = 0; config.activation == attn::Activation::relu && near_kink() && tries < 50;
         ++tries) {
      w = random_lm(rng, config);
      attn::lm_zero(g);
      loss = attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    }
    if (config.activation == attn::Activation::relu) CHECK(!near_kink());
    CHECK(loss == doctest::Approx(attn::lm_loss(tokens, targets, w, config)).epsilon(1e-12));
    attn::LmWeights g_view = g;  // lm_parameters wants a mutable struct; spans into g_view
    const std::vector<attn::NamedTensor> params = attn::lm_parameters(w);
    const std::vector<attn::NamedTensor> grads = attn::lm_parameters(g_view);
    REQUIRE(params.size() == grads.size());
    std::vector<attn::GradTensor> tensors;
    for (std::size_t i = 0; i < params.size(); ++i) {
      CHECK(params[i].name == grads[i].name);
      tensors.push_back({params[i].name, params[i].values, grads[i].values});
    }
    // h = 1e-3: two or three blocks deep (and without residuals) the loss curves more than one
    // op does; at the default 3e-3 the truncation error of wte's difference quotient reached
    // 2.4% (measured: it falls 9x at h = 1e-3, as h^2 says), while the rounding noise stays far
    // below the tolerance.
    attn::GradCheckOptions options;
    options.h = config.activation == attn::Activation::relu ? 5e-4 : 1e-3;
    const auto results = attn::grad_check([&] { return attn::lm_loss(tokens, targets, w, config); },
                                          tensors, options);
    check_gradients(describe(config), results);
    // wpe's last row (position 4) is never used with T = 4: its gradient is exactly 0.
    if (config.positions == attn::Positions::learned) {
      for (std::size_t c = 0; c < config.n_embd; ++c) CHECK(g.wpe(4, c) == 0.0f);
    } else {
      CHECK(w.wpe.size() == 0);  // rope: no table
    }
  }
}

TEST_CASE("the tied wte collects both uses: embedding rows plus the output projection") {
  // An untied model whose lm_head is wte^T computes the same loss; there wte only gets the
  // embedding's gradient and lm_head the projection's. Tied, wte must get their sum.
  attn::Rng rng(700);
  attn::ModelSpec tied = small_config();
  attn::LmWeights w = random_lm(rng, tied);
  const attn::ModelSpec untied =
      attn::with_choices(tied, [](attn::ModelChoices& m) { m.ablations.tied_head = false; });
  attn::LmWeights wu = w;
  wu.lm_head = xt::transpose(w.wte);
  wu.lm_head_bias = xt::zeros<float>({tied.vocab_size});
  const auto tokens = random_ids(rng, 3, 5, tied.vocab_size);
  const auto targets = random_ids(rng, 3, 5, tied.vocab_size);
  attn::LmWeights g = attn::lm_zeros_like(w), gu = attn::lm_zeros_like(wu);
  attn::LmCache cache, cache_u;
  const double loss = attn::lm_forward_backward(tokens, targets, w, tied, g, cache);
  const double loss_u = attn::lm_forward_backward(tokens, targets, wu, untied, gu, cache_u);
  CHECK(loss == doctest::Approx(loss_u).epsilon(1e-6));
  const attn::Matrix sum = gu.wte + xt::transpose(gu.lm_head);
  CHECK_TENSOR_NEAR(g.wte, sum, 1e-6, 1e-4);
  CHECK(xt::amax(xt::abs(gu.lm_head))() > 0.0f);  // both parts are really there
  CHECK(xt::amax(xt::abs(gu.wte))() > 0.0f);
}

TEST_CASE("lm_forward_backward accumulates, reuses its buffers, and is thread-count independent") {
  attn::Rng rng(701);
  const attn::ModelSpec config = attn::with_choices(small_config(), [](attn::ModelChoices& m) {
    m.n_embd = 16;
    m.block_size = 40;
    m.n_heads = 4;
  });
  const attn::LmWeights w = random_lm(rng, config);
  const auto tokens = random_ids(rng, 4, 40, config.vocab_size);
  const auto targets = random_ids(rng, 4, 40, config.vocab_size);
  const std::size_t saved = attn::num_threads();
  std::vector<attn::LmWeights> results;
  for (std::size_t threads : {1, 3}) {
    attn::set_num_threads(threads);
    attn::LmWeights g = attn::lm_zeros_like(w);
    attn::LmCache cache;
    const double l1 = attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    const attn::LmWeights once = g;
    const float* logits = cache.logits.data();
    const float* qkv = cache.blocks[1].attn.qkv.data();
    const float* pre = cache.blocks[0].ffn.pre.data();
    const float* h = cache.h.data();
    const float* gw = g.wte.data();
    const double l2 = attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    CHECK(l1 == l2);
    // Same buffers on the second step: nothing of the cache was reallocated.
    CHECK(cache.logits.data() == logits);
    CHECK(cache.blocks[1].attn.qkv.data() == qkv);
    CHECK(cache.blocks[0].ffn.pre.data() == pre);
    CHECK(cache.h.data() == h);
    CHECK(g.wte.data() == gw);
    // Gradients add up: twice the first step's.
    CHECK_TENSOR_NEAR(g.wte, attn::Matrix(2.0f * once.wte), 1e-6, 1e-6);
    CHECK_TENSOR_NEAR(g.blocks[0].attn.w_q, attn::Matrix(2.0f * once.blocks[0].attn.w_q), 1e-6,
                      1e-6);
    attn::lm_zero(g);
    CHECK(xt::amax(xt::abs(g.wte))() == 0.0f);
    CHECK(xt::amax(xt::abs(g.blocks[1].ffn.w1))() == 0.0f);
    (void)attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    results.push_back(g);
  }
  attn::set_num_threads(saved);
  attn::LmWeights a = results[0], b = results[1];
  const auto pa = attn::lm_parameters(a), pb = attn::lm_parameters(b);
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i].name);
    CHECK(std::equal(pa[i].values.begin(), pa[i].values.end(), pb[i].values.begin()));
  }
}

TEST_CASE("lm_batch_shards: whole sequences, at least 128 tokens a shard, at most 16 shards") {
  CHECK(attn::lm_batch_shards(32, 64, 207'296) == 16);  // chapter 09's model: 2 sequences each
  CHECK(attn::lm_batch_shards(16, 32, 5'000) == 4);
  CHECK(attn::lm_batch_shards(12, 64, 5'000) == 6);            // a divisor of B: 2 sequences each
  CHECK(attn::lm_batch_shards(7, 128, 5'000) == 7);            // B prime: one sequence each
  CHECK(attn::lm_batch_shards(4, 40, 5'000) == 1);             // 160 tokens: no room for two shards
  CHECK(attn::lm_batch_shards(1, 4096, 5'000) == 1);           // one sequence cannot be split
  CHECK(attn::lm_batch_shards(64, 256, 2'000'000) == 9 - 1);   // 64 MiB of extra gradients
  CHECK(attn::lm_batch_shards(64, 256, 10'788'929) == 1 + 1);  // the lecture's model
  CHECK(attn::lm_batch_shards(64, 256, 20'000'000) == 1);
}

// The shard tests' model: C 16, 4 heads, 2 layers, T 32 (a batch of 8 or 16 sequences shards).
attn::ModelSpec shard_config(float dropout) {
  return attn::with_choices(small_config(), [&](attn::ModelChoices& m) {
    m.n_embd = 16;
    m.block_size = 32;
    m.n_heads = 4;
    m.n_layers = 2;
    m.dropout = dropout;
  });
}

TEST_CASE(
    "lm_forward_backward in shards: the double reference's gradients, the same bits on any "
    "thread count, and one line for a shard count that does not divide B") {
  attn::Rng rng(717);
  const attn::ModelSpec config = shard_config(0.0f);
  const std::size_t B = 16, T = 32;
  const attn::LmWeights w = random_lm(rng, config);
  const auto tokens = random_ids(rng, B, T, config.vocab_size);
  const auto targets = random_ids(rng, B, T, config.vocab_size);
  REQUIRE(attn::lm_batch_shards(B, T, attn::lm_parameter_count(w)) == 4);
  const attn::ref::LmWeights<double> w64 = attn::ref::cast<double>(w);
  attn::ref::LmWeights<double> g64 = attn::ref::zeros_like(w64);
  const double loss64 = attn::ref::lm_forward_backward(tokens, targets, w64, config, g64);
  attn::LmWeights g64f = attn::lm_zeros_like(w);  // the reference's gradients of the sum, float
  {
    attn::ref::LmWeights<double> g64_copy = g64;
    std::vector<attn::NamedTensor> to = attn::lm_parameters(g64f);
    std::size_t i = 0;
    const auto put = [&](const auto& t) {  // lm_parameters' order, empty tensors skipped
      if (t.size() == 0) return;
      REQUIRE(to.at(i).values.size() == t.size());
      for (std::size_t j = 0; j < t.size(); ++j)
        to[i].values[j] = static_cast<float>(t.data()[j] * static_cast<double>(B * T));
      ++i;
    };
    put(g64_copy.wte);
    put(g64_copy.wpe);
    for (const auto& b : g64_copy.blocks) {
      for (const auto* t : {&b.attn.w_q, &b.attn.w_k, &b.attn.w_v, &b.attn.w_o}) put(*t);
      for (const auto* t : {&b.ln1_gamma, &b.ln1_beta, &b.ln2_gamma, &b.ln2_beta}) put(*t);
      put(b.ffn.w1);
      put(b.ffn.b1);
      put(b.ffn.w2);
      put(b.ffn.b2);
      put(b.swiglu.w_gate);
      put(b.swiglu.w_up);
      put(b.swiglu.w_down);
    }
    put(g64_copy.ln_f_gamma);
    put(g64_copy.ln_f_beta);
    put(g64_copy.lm_head);
    put(g64_copy.lm_head_bias);
    REQUIRE(i == to.size());
  }
  const std::size_t saved = attn::num_threads();
  for (std::size_t shards : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{16}}) {
    CAPTURE(shards);
    std::vector<attn::LmWeights> by_threads;
    for (std::size_t threads : {1, 2, 3}) {
      attn::set_num_threads(threads);
      attn::LmWeights g = attn::lm_zeros_like(w);
      attn::LmCache cache;
      const double loss = attn::lm_forward_backward(tokens, targets, w, config, g, cache, shards);
      CHECK(std::abs(loss - loss64) <= 1e-5 + 1e-4 * std::abs(loss64));
      by_threads.push_back(g);
    }
    attn::set_num_threads(saved);
    auto pg = attn::lm_parameters(by_threads[0]);
    auto pr = attn::lm_parameters(g64f);
    for (std::size_t i = 0; i < pg.size(); ++i) {
      CAPTURE(pg[i].name);
      // The loss is a mean over B*T tokens: the gradients of the sum are compared, each element
      // within 1e-4 of its tensor's largest (float sums of 512 rows, some of which cancel).
      float largest = 0.0f;
      for (const float v : pr[i].values) largest = std::max(largest, std::abs(v));
      for (std::size_t j = 0; j < pg[i].values.size(); ++j) {
        const double got = static_cast<double>(pg[i].values[j]) * static_cast<double>(B * T);
        const double want = pr[i].values[j];
        if (std::abs(got - want) > 1e-4 * static_cast<double>(largest) + 1e-4 * std::abs(want)) {
          CHECK(got == doctest::Approx(want));
          break;
        }
      }
      for (std::size_t k = 1; k < by_threads.size(); ++k) {
        auto pk = attn::lm_parameters(by_threads[k]);
        CHECK(std::equal(pg[i].values.begin(), pg[i].values.end(), pk[i].values.begin()));
      }
    }
  }
  // The rule's shards and the explicit count are the same computation.
  attn::LmWeights ga = attn::lm_zeros_like(w), gb = attn::lm_zeros_like(w);
  attn::LmCache ca, cb;
  CHECK(attn::lm_forward_backward(tokens, targets, w, config, ga, ca) ==
        attn::lm_forward_backward(tokens, targets, w, config, gb, cb, 4));
  CHECK(ca.shards.size() == 4);
  CHECK_TENSOR_NEAR(ga.blocks[1].ffn.w2, gb.blocks[1].ffn.w2, 0.0, 0.0);
  // Gradients add up across calls in shards too.
  const attn::LmWeights once = ga;
  (void)attn::lm_forward_backward(tokens, targets, w, config, ga, ca);
  CHECK_TENSOR_NEAR(ga.blocks[0].attn.w_v, attn::Matrix(2.0f * once.blocks[0].attn.w_v), 1e-6,
                    1e-6);
  CHECK_THROWS_WITH_AS(attn::lm_forward_backward(tokens, targets, w, config, ga, ca, 3),
                       "attn::lm_forward_backward: 3 shards do not divide a batch of 16 sequences",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attn::lm_forward_backward(tokens, targets, w, config, ga, ca, 0),
                       "attn::lm_forward_backward: 0 shards do not divide a batch of 16 sequences",
                       std::invalid_argument);
}

TEST_CASE("one cache for two models in shards: each call's gradients are a fresh cache's") {
  // The cache keeps the shards' own gradients between calls; a model whose tensors are shaped
  // otherwise (here a narrower FFN) must get new ones, and the first model again its own.
  attn::Rng rng(719);
  const attn::ModelSpec wide = shard_config(0.0f);
  const attn::ModelSpec narrow =
      attn::with_choices(wide, [&](attn::ModelChoices& m) { m.ffn_hidden = 2 * wide.n_embd; });
  const attn::LmWeights w_wide = random_lm(rng, wide), w_narrow = random_lm(rng, narrow);
  const auto tokens = random_ids(rng, 8, 32, wide.vocab_size);
  const auto targets = random_ids(rng, 8, 32, wide.vocab_size);
  attn::LmCache shared;
  for (const bool use_wide : {true, false, true}) {
    CAPTURE(use_wide);
    const attn::LmWeights& w = use_wide ? w_wide : w_narrow;
    const attn::ModelSpec& config = use_wide ? wide : narrow;
    attn::LmWeights g = attn::lm_zeros_like(w), g_fresh = attn::lm_zeros_like(w);
    attn::LmCache fresh;
    CHECK(attn::lm_forward_backward(tokens, targets, w, config, g, shared, 4) ==
          attn::lm_forward_backward(tokens, targets, w, config, g_fresh, fresh, 4));
    const std::vector<attn::NamedTensor> a = attn::lm_parameters(g),
                                         b = attn::lm_parameters(g_fresh);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i].name);
      CHECK(std::equal(a[i].values.begin(), a[i].values.end(), b[i].values.begin()));
    }
  }
  // The narrow model's gradients for the wide model, in shards: one line (this crashed before
  // the gradients were checked tensor for tensor).
  attn::LmWeights wrong = attn::lm_zeros_like(w_narrow);
  CHECK_THROWS_WITH_AS(attn::lm_forward_backward(tokens, targets, w_wide, wide, wrong, shared, 4),
                       doctest::Contains("grads must be shaped like the weights"),
                       std::invalid_argument);
}

TEST_CASE(
    "lm_forward_backward in shards with dropout: the masks depend on the generator's seed "
    "alone, not on the thread count") {
  attn::Rng rng(718);
  const attn::ModelSpec config = shard_config(0.2f);
  const attn::LmWeights w = random_lm(rng, config);
  const auto tokens = random_ids(rng, 8, 32, config.vocab_size);
  const auto targets = random_ids(rng, 8, 32, config.vocab_size);
  const std::size_t saved = attn::num_threads();
  std::vector<double> losses;
  std::vector<attn::LmWeights> grads;
  for (std::size_t threads : {1, 2, 3}) {
    attn::set_num_threads(threads);
    attn::LmWeights g = attn::lm_zeros_like(w);
    attn::LmCache cache;
    cache.dropout_rng = attn::Rng(99, 303);
    losses.push_back(attn::lm_forward_backward(tokens, targets, w, config, g, cache, 2));
    grads.push_back(g);
  }
  attn::set_num_threads(saved);
  CHECK(losses[0] == losses[1]);
  CHECK(losses[0] == losses[2]);
  CHECK_TENSOR_NEAR(grads[0].blocks[0].attn.w_q, grads[2].blocks[0].attn.w_q, 0.0, 0.0);
  attn::LmWeights g = attn::lm_zeros_like(w);
  attn::LmCache cache;
  cache.dropout_rng = attn::Rng(100, 303);  // another seed: other masks
  CHECK(attn::lm_forward_backward(tokens, targets, w, config, g, cache, 2) != losses[0]);
}

TEST_CASE("lm_parameters: the .npy names in order, variants skip their empty tensors") {
  attn::Rng rng(702);
  const attn::ModelSpec config =
      attn::with_choices(small_config(), [](attn::ModelChoices& m) { m.n_layers = 1; });
  attn::LmWeights w = attn::lm_init(rng, config);
  std::vector<std::string> names;
  std::size_t total = 0;
  for (const attn::NamedTensor& t : attn::lm_parameters(w)) {
    names.push_back(t.name);
    total += t.values.size();
    CHECK(t.rank ==
          (t.name == "wte" || t.name == "wpe" || t.name.find(".w") != std::string::npos ? 2u : 1u));
  }
  const std::vector<std::string> want = {
      "wte",          "wpe",         "h0.w_q",       "h0.w_k",      "h0.w_v", "h0.w_o",
      "h0.ln1_gamma", "h0.ln1_beta", "h0.ln2_gamma", "h0.ln2_beta", "h0.w1",  "h0.b1",
      "h0.w2",        "h0.b2",       "ln_f_gamma",   "ln_f_beta"};
  CHECK(names == want);
  CHECK(total == attn::lm_parameter_count(w));
  const std::size_t V = 7, T = 5, C = 4, F = 16;
  CHECK(total == V * C + T * C + attn::block_param_count(C, F) + 2 * C);
  const attn::ModelSpec ladder = attn::with_choices(config, [](attn::ModelChoices& m) {
    m.ablations.tied_head = false;
    m.ablations.layer_norm = false;
    m.ablations.ffn = false;
    m.ablations.attn_proj = false;
  });
  attn::LmWeights wl = attn::lm_init(rng, ladder);
  names.clear();
  for (const attn::NamedTensor& t : attn::lm_parameters(wl)) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"wte", "wpe", "h0.w_q", "h0.w_k", "h0.w_v", "lm_head",
                                          "lm_head_bias"});
  CHECK(attn::lm_parameter_count(wl) == V * C + T * C + 3 * C * C + C * V + V);
}

TEST_CASE("lm_init: a variant shares the default model's draws; default logits unchanged") {
  const attn::ModelSpec config = small_config();
  attn::Rng r1(703), r2(703);
  const attn::LmWeights def = attn::lm_init(r1, config);
  const attn::ModelSpec variant = attn::with_choices(config, [](attn::ModelChoices& m) {
    m.ablations.attn_proj = false;
    m.ablations.tied_head = false;
  });
  const attn::LmWeights var = attn::lm_init(r2, variant);
  CHECK_TENSOR_NEAR(var.wte, def.wte, 0.0, 0.0);
  CHECK_TENSOR_NEAR(var.blocks[1].ffn.w2, def.blocks[1].ffn.w2, 0.0, 0.0);
  CHECK(var.blocks[0].attn.w_o.size() == 0);
  CHECK(var.lm_head.shape()[0] == config.n_embd);
  CHECK(var.lm_head.shape()[1] == config.vocab_size);
  // Logits of the variant model are lm_forward's (shape (B, T, V)).
  attn::Rng rng(704);
  const auto tokens = random_ids(rng, 2, 3, config.vocab_size);
  CHECK(attn::lm_forward(tokens, var, variant).shape()[2] == config.vocab_size);
}

TEST_CASE("save_lm / load_lm(dir, config) round-trip a variant") {
  attn::Rng rng(705);
  const attn::ModelSpec config = attn::with_choices(small_config(), [](attn::ModelChoices& m) {
    m.ablations.tied_head = false;
    m.ablations.layer_norm = false;
    m.ffn_hidden = 6;
  });
  const attn::LmWeights w = random_lm(rng, config);
  const fs::path dir = temp() / "variant";
  attn::save_lm(dir, w);
  CHECK(fs::exists(dir / "lm_head.npy"));
  CHECK(!fs::exists(dir / "ln_f_gamma.npy"));
  // What is asked for: the variant's choices, with the default sizes (V, C and T_max come from
  // the files).
  attn::ModelChoices asked;
  asked.n_layers = 2;
  asked.n_heads = 2;
  asked.ablations.tied_head = false;
  asked.ablations.layer_norm = false;
  asked.ffn_hidden = 6;
  attn::ModelSpec loaded = attn::resolve_spec(asked);
  const attn::LmWeights back = attn::load_lm(dir, loaded);
  CHECK(loaded.vocab_size == 7);
  CHECK(loaded.n_embd == 4);
  CHECK(loaded.block_size == 5);
  const auto tokens = random_ids(rng, 2, 5, 7);
  CHECK_TENSOR_NEAR(attn::lm_forward(tokens, back, loaded), attn::lm_forward(tokens, w, config),
                    0.0, 0.0);
  // Asking for the tied default finds no ln_f.
  attn::ModelSpec wrong;
  CHECK_THROWS_AS(attn::load_lm(dir, 2, 2, wrong), std::runtime_error);
}

TEST_CASE("a folder saved with its config carries the variant: model.txt, read by both loaders") {
  attn::Rng rng(716);
  const attn::ModelSpec config = attn::with_choices(small_config(), [](attn::ModelChoices& m) {
    m.ablations.tied_head = false;
    m.activation = attn::Activation::relu;
    m.ffn_hidden = 6;
  });
  const attn::LmWeights w = random_lm(rng, config);
  const fs::path dir = temp() / "with_model_txt";
  attn::save_lm(dir, w, config);
  REQUIRE(fs::exists(dir / "model.txt"));
  // The chapter 07 / 10 loader passes only n_layers and n_heads: the rest comes from model.txt.
  attn::ModelSpec loaded;
  const attn::LmWeights back = attn::load_lm(dir, 2, 2, loaded);
  CHECK_FALSE(loaded.ablations.tied_head);
  CHECK(loaded.activation == attn::Activation::relu);
  CHECK(loaded.ffn_hidden == 6);
  const auto tokens = random_ids(rng, 2, 5, 7);
  CHECK_TENSOR_NEAR(attn::lm_forward(tokens, back, loaded), attn::lm_forward(tokens, w, config),
                    0.0, 0.0);
  // A layer or head count that contradicts model.txt is refused, naming the flag to pass.
  attn::ModelSpec other;
  CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 1, other),
                       doctest::Contains("model.txt says n_heads 2"), std::runtime_error);
  // A damaged model.txt is named: a key given twice (which one would count?), a bad value.
  std::ostringstream read;
  read << std::ifstream(dir / "model.txt").rdbuf();
  std::string text = read.str();
  std::ofstream(dir / "model.txt", std::ios::app) << "activation swish\n";
  CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 2, other),
                       doctest::Contains("key 'activation' appears twice"), std::runtime_error);
  const std::size_t at = text.find("activation ");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find('\n', at) - at, "activation swish");
  std::ofstream(dir / "model.txt", std::ios::trunc) << text;
  CHECK_THROWS_WITH_AS(attn::load_lm(dir, 2, 2, other), doctest::Contains("activation is 'swish'"),
                       std::runtime_error);
}

TEST_CASE("lm_forward_backward and lm_loss name bad targets") {
  attn::Rng rng(706);
  const attn::ModelSpec config = small_config();
  const attn::LmWeights w = attn::lm_init(rng, config);
  attn::LmWeights g = attn::lm_zeros_like(w);
  attn::LmCache cache;
  const auto tokens = random_ids(rng, 2, 3, 7);
  auto targets = random_ids(rng, 2, 3, 7);
  targets(1, 2) = 7;
  using E = std::invalid_argument;
  CHECK_THROWS_WITH_AS(attn::lm_forward_backward(tokens, targets, w, config, g, cache),
                       "attn::lm_forward_backward: target id 7 at (1, 2) is outside [0, 7)", E);
  CHECK_THROWS_WITH_AS(attn::lm_loss(tokens, targets, w, config),
                       "attn::lm_loss: target id 7 at (1, 2) is outside [0, 7)", E);
  const auto short_targets = random_ids(rng, 2, 2, 7);
  CHECK_THROWS_WITH_AS(attn::lm_forward_backward(tokens, short_targets, w, config, g, cache),
                       "attn::lm_forward_backward: expected targets of the same shape as tokens "
                       "(2, 3), got targets (2, 2)",
                       E);
  const std::string shaped =
      "attn::lm_forward_backward: grads must be shaped like the weights, tensor for tensor (make "
      "them with lm_zeros_like)";
  attn::LmWeights wrong_grads = attn::lm_zeros_like(w);
  wrong_grads.blocks.pop_back();
  CHECK_THROWS_WITH_AS(
      attn::lm_forward_backward(tokens, random_ids(rng, 2, 3, 7), w, config, wrong_grads, cache),
      shaped.c_str(), E);
  // The gradients of another model with as many blocks and the same embeddings, head and final
  // LayerNorm, but a narrower FFN: the backward would write past their w1.
  const attn::ModelSpec narrow =
      attn::with_choices(config, [&](attn::ModelChoices& m) { m.ffn_hidden = 2 * config.n_embd; });
  attn::LmWeights narrow_grads = attn::lm_zeros_like(attn::lm_init(rng, narrow));
  REQUIRE(narrow_grads.wte.shape() == w.wte.shape());
  REQUIRE(narrow_grads.blocks.size() == w.blocks.size());
  CHECK_THROWS_WITH_AS(
      attn::lm_forward_backward(tokens, random_ids(rng, 2, 3, 7), w, config, narrow_grads, cache),
      shaped.c_str(), E);
}

TEST_CASE("float64 check: lm_forward_backward with parts against the reference model in double") {
  std::vector<attn::ModelSpec> configs;
  attn::ModelChoices c = small_config().choices();  // C 4, H 2: hs 2
  c.positions = attn::Positions::rope;
  configs.push_back(attn::resolve_spec(c));
  c = small_config().choices();
  c.bias = false;
  c.ablations.tied_head = false;
  configs.push_back(attn::resolve_spec(c));
  c = small_config().choices();
  c.positions = attn::Positions::rope;
  c.normalization = attn::Normalization::rmsnorm;
  c.ffn = attn::FfnKind::swiglu;
  c.n_kv_heads = 1;
  c.bias = false;
  configs.push_back(attn::resolve_spec(c));
  c.window = 2;
  configs.push_back(attn::resolve_spec(c));
  std::uint64_t seed = 660;
  for (const attn::ModelSpec& config : configs) {
    attn::Rng rng(seed++);
    const attn::LmWeights w = random_lm(rng, config);
    const auto tokens = random_ids(rng, 2, 4, config.vocab_size);
    const auto targets = random_ids(rng, 2, 4, config.vocab_size);
    attn::LmWeights g = attn::lm_zeros_like(w);
    attn::LmCache cache;
    (void)attn::lm_forward_backward(tokens, targets, w, config, g, cache);
    // The reference model in double, and the float gradients in double beside its tensors.
    attn::ref::LmWeights<double> m = attn::ref::cast<double>(w);
    attn::ref::LmWeights<double> g64 = attn::ref::cast<double>(g);
    const auto values = attn::ref::parameters(m), grads = attn::ref::parameters(g64);
    REQUIRE(values.size() == attn::lm_parameters(g).size());
    std::vector<attn::GradTensor64> tensors;
    for (std::size_t i = 0; i < grads.size(); ++i)
      tensors.push_back({grads[i].name, values[i].values, grads[i].values});
    const auto loss = [&] { return attn::ref::lm_loss(tokens, targets, m, config); };
    CHECK(loss() == doctest::Approx(attn::lm_loss(tokens, targets, w, config)).epsilon(1e-5));
    attn::GradCheckOptions64 o;
    o.floor = 1e-2;  // a float backward
    check_gradients("lm64 " + describe(config), attn::check_gradients(loss, tensors, o));
    std::vector<double> wrong(grads[0].values.begin(), grads[0].values.end());  // wte's, 0.1% off
    for (double& v : wrong) v *= 1.001;
    CHECK_FALSE(attn::all_pass(attn::check_gradients(
        loss, {{"wte x 1.001", values[0].values, std::span<const double>(wrong)}}, o)));
  }
}

TEST_CASE("a window bounds what a logit sees: L (W - 1) tokens back, and rope has no T_max") {
  const attn::ModelSpec c = attn::with_choices(small_config(), [](attn::ModelChoices& m) {
    m.positions = attn::Positions::rope;
    m.window = 3;
    m.n_layers = 2;
    m.normalization = attn::Normalization::rmsnorm;
    m.ffn = attn::FfnKind::swiglu;
  });
  attn::Rng rng(650);
  const attn::LmWeights w = random_lm(rng, c);
  // T = 12 > T_max = 5: no position table limits a rope model.
  xt::xtensor<int, 2> ids = random_ids(rng, 1, 12, c.vocab_size);
  const attn::Tensor<3> base = attn::lm_forward(ids, w, c);
  // Position 11 sees positions 11 - L (W - 1) = 7 .. 11 through the stack: token 6 cannot
  // reach it, token 7 can.
  const auto last_row_changes = [&](std::size_t t) {
    xt::xtensor<int, 2> other = ids;
    other(0, t) = (other(0, t) + 1) % static_cast<int>(c.vocab_size);
    const attn::Tensor<3> l = attn::lm_forward(other, w, c);
    double diff = 0.0;
    for (std::size_t v = 0; v < c.vocab_size; ++v)
      diff = std::max(diff, static_cast<double>(std::abs(l(0, 11, v) - base(0, 11, v))));
    return diff;
  };
  CHECK(last_row_changes(6) == 0.0);
  CHECK(last_row_changes(7) > 1e-4);
  // Learned positions keep their table's limit.
  const attn::ModelSpec learned = small_config();
  const attn::LmWeights wl = attn::lm_init(rng, learned);
  CHECK_THROWS_AS(attn::lm_forward(ids, wl, learned), std::invalid_argument);
}

TEST_CASE("resolve_spec names each bad combination in one line") {
  // check_parts' rules, now checked once by resolve_spec: a SpecError (an
  // std::invalid_argument) naming the field, its value and what is expected.
  const auto error = [](const attn::ModelChoices& c) {
    try {
      (void)attn::resolve_spec(c);
    } catch (const attn::SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const attn::ModelChoices c = small_config().choices();  // C 4, H 2
  CHECK(error(c) == "no error");
  attn::ModelChoices d = c;
  d.n_kv_heads = 3;
  CHECK(error(d) ==
        "n_kv_heads 3 does not divide n_heads 2 (each K/V head serves an equal group of query "
        "heads)");
  d = c;
  d.n_heads = 4;  // hs = 1
  d.positions = attn::Positions::rope;
  CHECK(error(d) ==
        "positions rope rotates pairs of features, but the head size n_embd 4 / n_heads 4 = 1 is "
        "odd");
  d = c;
  d.rope_theta = 0.0;
  CHECK(error(d) == "rope_theta must be a number > 0 (RoPE's base, 10000 by default), got 0");
  d = c;
  d.window = 6;
  CHECK(error(d) ==
        "window 6 is above block_size 5: a query sees at most the T keys of its window (0: no "
        "window)");
  d = c;
  d.n_heads = 3;
  CHECK(error(d) ==
        "n_heads 3 does not divide n_embd 4 (every head gets n_embd / n_heads channels)");
  d = c;
  d.dropout = 1.0f;
  CHECK(error(d) == "dropout must be in [0, 1), the probability of zeroing a value, got 1");
  d = c;
  d.ablations.attn_proj = false;
  CHECK(error(d) == "no error");  // chapter 09's ladder, on chapter 05's attention
  d.n_kv_heads = 1;
  // (The rest of the line lists the other attentions: grouped K/V heads, RoPE, ...)
  CHECK(error(d).starts_with(
      "attn_proj 0 (chapter 09's ladder) runs chapter 05's attention only: no grouped K/V heads"));
  // Named by the flag a learner typed, for a command line.
  d = c;
  d.n_kv_heads = 3;
  try {
    (void)attn::resolve_spec(d, attn::SpecNames::flags);
    FAIL("no error");
  } catch (const attn::SpecError& e) {
    CHECK(std::string(e.what()).rfind("--n-kv-heads 3 does not divide --n-heads 2", 0) == 0);
  }
  // A SpecError is an std::invalid_argument.
  CHECK_THROWS_AS(attn::resolve_spec(d), std::invalid_argument);
}

// A small text file's lines, each ending in a newline.
std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::string text, line;
  while (std::getline(in, line)) text += line + "\n";
  return text;
}

TEST_CASE("a model folder records its parts: model.txt keys, --weights DIR alone loads it") {
  attn::Rng rng(717);
  const attn::ModelSpec config = attn::with_choices(small_config(), [](attn::ModelChoices& m) {
    m.positions = attn::Positions::rope;
    m.rope_theta = 500.0;
    m.normalization = attn::Normalization::rmsnorm;
    m.ffn = attn::FfnKind::swiglu;
    m.n_kv_heads = 1;
    m.window = 3;
    m.bias = false;
  });
  const attn::LmWeights w = random_lm(rng, config);
  const fs::path dir = temp() / "llama";
  attn::save_lm(dir, w, config);
  CHECK(!fs::exists(dir / "wpe.npy"));
  CHECK(fs::exists(dir / "h1.w_gate.npy"));
  CHECK(!fs::exists(dir / "h0.w1.npy"));
  CHECK(!fs::exists(dir / "ln_f_beta.npy"));
  // Every choice resolved, one `key value` line each (F = swiglu_width(4) = 16).
  const std::string text = text_of(dir / "model.txt");
  CHECK(text == attn::model_txt(config));
  CHECK(text ==
        "# the model this folder holds (attn::save_lm), every choice resolved\n"
        "vocab_size 7\nblock_size 5\nn_embd 4\nn_heads 2\nn_layers 2\n"
        "tied_head 1\nuse_layer_norm 1\nresidual 1\nuse_ffn 1\nattn_proj 1\n"
        "ffn_hidden 16\nactivation gelu\ndropout 0\n"
        "positions rope\nrope_theta 500\nnormalization rmsnorm\nffn swiglu\n"
        "n_kv_heads 1\nwindow 3\nbias 0\n");
  const std::optional<attn::ModelChoices> described = attn::read_model_file(dir);
  REQUIRE(described);
  CHECK(described->positions == attn::Positions::rope);
  CHECK(described->rope_theta == 500.0);
  CHECK(described->block_size == 5);
  CHECK(described->window == std::optional<std::size_t>(3));
  CHECK(attn::resolve_spec(*described) == config);  // the file is the whole spec
  attn::ModelSpec loaded;
  bool had_txt = false;
  const attn::LmWeights back = attn::load_lm_as_described(dir, {}, 4, loaded, had_txt);
  CHECK(had_txt);
  CHECK(loaded.n_kv_heads == 1);
  CHECK(loaded.window == std::optional<std::size_t>(3));
  CHECK(loaded == config);
  CHECK(!loaded.bias);
  CHECK(loaded.ffn == attn::FfnKind::swiglu);
  CHECK(loaded.normalization == attn::Normalization::rmsnorm);
  const auto tokens = random_ids(rng, 2, 9, 7);  // longer than T_max: rope
  CHECK_TENSOR_NEAR(attn::lm_forward(tokens, back, loaded), attn::lm_forward(tokens, w, config),
                    0.0, 0.0);
  // A default model's model.txt names the default parts too, and no window (it has none).
  const fs::path plain = temp() / "plain";
  const attn::LmWeights plain_w = random_lm(rng, small_config());
  attn::save_lm(plain, plain_w, small_config());
  const std::string text2 = text_of(plain / "model.txt");
  CHECK(text2.find("\npositions learned\nrope_theta 10000\nnormalization layernorm\nffn mlp\n"
                   "n_kv_heads 2\nbias 1\n") != std::string::npos);
  CHECK(text2.find("window") == std::string::npos);
  // A model.txt written before ModelSpec (no sizes, `ffn_hidden 0` and `window 0` for the
  // defaults, no part keys) still loads, as the default model it always described.
  std::ofstream(plain / "model.txt", std::ios::trunc)
      << "n_layers 2\nn_heads 2\ntied_head 1\nuse_layer_norm 1\nresidual 1\nuse_ffn 1\n"
      << "attn_proj 1\nffn_hidden 0\nactivation gelu\nwindow 0\n";
  const std::optional<attn::ModelChoices> old = attn::read_model_file(plain);
  REQUIRE(old);
  CHECK_FALSE(old->ffn_hidden);
  CHECK_FALSE(old->window);
  attn::ModelSpec old_loaded;
  const attn::LmWeights old_back = attn::load_lm(plain, 2, 2, old_loaded);
  CHECK(old_loaded == small_config());
  CHECK(old_loaded.ffn_hidden == 16);
  CHECK_FALSE(old_loaded.window);
  const auto short_tokens = random_ids(rng, 2, 5, 7);  // learned positions: T <= T_max
  CHECK_TENSOR_NEAR(attn::lm_forward(short_tokens, old_back, old_loaded),
                    attn::lm_forward(short_tokens, plain_w, small_config()), 0.0, 0.0);
  // Bad part values are refused by line.
  const auto refused = [&](const std::string& line) {
    std::ofstream(dir / "model.txt") << "n_layers 2\nn_heads 2\n" << line << "\n";
    try {
      (void)attn::read_model_file(dir);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(
      refused("positions sinusoidal") ==
      "model '" + dir.string() +
          "': model.txt line 3: positions is 'sinusoidal', expected learned, rope, alibi or none");
  CHECK(refused("rope_theta -1") ==
        "model '" + dir.string() +
            "': model.txt line 3: rope_theta is '-1', expected a number > 0");
  CHECK(refused("ffn geglu") ==
        "model '" + dir.string() + "': model.txt line 3: ffn is 'geglu', expected mlp or swiglu");
  // Parts that do not fit the sizes: n_kv_heads 3 with n_heads 2.
  std::ofstream(dir / "model.txt") << "n_layers 2\nn_heads 2\npositions rope\nblock_size 5\n"
                                   << "normalization rmsnorm\nffn swiglu\nwindow 3\nbias 0\n"
                                   << "n_kv_heads 3\n";
  CHECK_THROWS_WITH_AS(attn::load_lm_as_described(dir, {}, 4, loaded, had_txt),
                       ("model '" + dir.string() +
                        "': model.txt describes a model that does not fit: n_kv_heads 3 does not "
                        "divide n_heads 2 (each K/V head serves an equal group of query heads)")
                           .c_str(),
                       std::runtime_error);
}

}  // TEST_SUITE
