// Tests for attn/train/train.hpp: the training step, loss estimates and checkpoints (chapter 09).
// The step is checked against PyTorch in the golden `train` cases; here: that it learns, that it
// is deterministic, that a stopped and resumed run is bit-identical to one without the stop, and
// that checkpoints are atomic and reject corruption with a message naming the file, and that a
// step after the first allocates nothing.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/model/model.hpp"
#include "attn/io/text.hpp"
#include "attn/train/train.hpp"
#include "count_allocations.hpp"  // this binary counts every allocation
#include "test_fixtures.hpp"

namespace {

namespace fs = std::filesystem;

// Two blocks, gradients clipped at norm 1.
attn::TrainConfig small_config() {
  attn::TrainConfig c = attn::testing::small_train_config(2);
  c.grad_clip = 1.0f;
  return c;
}

std::vector<int> data_of(std::size_t n) {
  std::vector<int> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<int>((i * 3) % 7);  // a cycle of 7
  return d;
}

attn::Vocab vocab7() { return attn::Vocab(U"\nabcdef"); }

// A fresh, empty folder under the system's temporary directory.
fs::path temp_dir(const std::string& name) {
  const fs::path p =
      fs::temp_directory_path() / ("attn_test_train_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

bool bitwise_equal(attn::LmWeights& a, attn::LmWeights& b) {
  std::vector<attn::NamedTensor> x = attn::lm_parameters(a), y = attn::lm_parameters(b);
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].name != y[i].name || x[i].values.size() != y[i].values.size()) return false;
    for (std::size_t j = 0; j < x[i].values.size(); ++j) {
      if (x[i].values[j] != y[i].values[j]) return false;
    }
  }
  return true;
}

}  // namespace

TEST_SUITE("train") {

TEST_CASE("training on a repeating text drives the loss far below log V") {
  attn::TrainConfig c = small_config();
  c.steps = 150;
  c.schedule.lr = 1e-2f;
  attn::TrainState s = attn::train_init(c);
  const std::vector<int> data = data_of(400);
  double first = 0.0, last = 0.0;
  while (s.step < c.steps) {
    const attn::StepResult r = attn::train_step(s, c, data);
    if (s.step == 1) first = r.loss;
    last = r.loss;
  }
  CHECK(first == doctest::Approx(std::log(7.0)).epsilon(0.05));
  CHECK(last < 0.5);
  CHECK(s.losses.size() == 150);
}

TEST_CASE("two runs with the same seed are bit-identical; another seed differs") {
  const attn::TrainConfig c = small_config();
  const std::vector<int> data = data_of(200);
  attn::TrainState a = attn::train_init(c), b = attn::train_init(c);
  for (int i = 0; i < 5; ++i) {
    attn::train_step(a, c, data);
    attn::train_step(b, c, data);
  }
  CHECK(bitwise_equal(a.weights, b.weights));
  attn::TrainConfig other = c;
  other.seed = 43;
  attn::TrainState d = attn::train_init(other);
  for (int i = 0; i < 5; ++i) attn::train_step(d, other, data);
  CHECK_FALSE(bitwise_equal(a.weights, d.weights));
}

TEST_CASE("after the first step, a step allocates no new buffers") {
  const attn::TrainConfig c = small_config();
  const std::vector<int> data = data_of(200);
  attn::TrainState s = attn::train_init(c);
  attn::train_step(s, c, data);
  const int* x = s.batch.x.data();
  const float* logits = s.cache.logits.data();
  const float* att = s.cache.blocks.at(0).attn.weights.data();
  const float* grad = s.grads.wte.data();
  for (int i = 0; i < 3; ++i) attn::train_step(s, c, data);
  CHECK(s.batch.x.data() == x);
  CHECK(s.cache.logits.data() == logits);
  CHECK(s.cache.blocks.at(0).attn.weights.data() == att);
  CHECK(s.grads.wte.data() == grad);
}

TEST_CASE(
    "a step after fresh gradients and moments were assigned to the state walks the new ones") {
  // The step keeps spans into the state's tensors between steps. Assigning fresh gradients and
  // moments (an optimizer reset) moves their buffers and leaves the weights where they were: the
  // step must not write through its old spans into the freed buffers, but step like a state
  // built afresh (a copy, whose spans are its own).
  const attn::TrainConfig c = small_config();
  const std::vector<int> data = data_of(200);
  attn::TrainState s = attn::train_init(c);
  attn::train_step(s, c, data);
  attn::train_step(s, c, data);
  s.grads = attn::lm_zeros_like(s.weights);
  s.adam_m = attn::lm_zeros_like(s.weights);
  s.adam_v = attn::lm_zeros_like(s.weights);
  attn::TrainState fresh = s;
  const attn::StepResult got = attn::train_step(s, c, data);
  const attn::StepResult want = attn::train_step(fresh, c, data);
  CHECK(got.loss == want.loss);
  CHECK(got.grad_norm == want.grad_norm);
  CHECK(bitwise_equal(s.weights, fresh.weights));
  CHECK(bitwise_equal(s.adam_m, fresh.adam_m));  // the new moments were the ones updated
  CHECK(bitwise_equal(s.adam_v, fresh.adam_v));
  CHECK(bitwise_equal(s.grads, fresh.grads));
}

// Allocations of one step, after two warm-up steps (the most of three).
long allocations_per_step(const attn::TrainConfig& c) {
  const std::vector<int> data = data_of(500);
  attn::TrainState s = attn::train_init(c);
  attn::train_step(s, c, data);
  attn::train_step(s, c, data);
  long most = 0;
  for (int i = 0; i < 3; ++i) {
    const long before = attn_test::allocations();
    attn::train_step(s, c, data);
    most = std::max(most, attn_test::allocations() - before);
  }
  return most;
}

TEST_CASE("after the first step, a step allocates nothing") {
  // Every buffer a step needs (caches, the blocks' outputs, scratch, the batch) is sized by the
  // first step and reused. (The input checks used to format their message on every call, used or
  // not: 4,420 allocations a step at chapter 09's size, one per token for the token-id checks.)
  attn::TrainConfig small = small_config();
  attn::TrainConfig big = small_config();
  big.model = attn::with_choices(big.model, [](attn::ModelChoices& m) {
    m.vocab_size = 40;
    m.block_size = 32;
    m.n_embd = 32;
    m.n_heads = 4;
  });
  big.batch_size = 16;
  CHECK(allocations_per_step(small) == 0);
  CHECK(allocations_per_step(big) == 0);
  big.model = attn::with_choices(big.model, [](attn::ModelChoices& m) {
    m.ablations.tied_head = false;  // chapter 09's defaults: a separate head, ReLU
    m.activation = attn::Activation::relu;
  });
  CHECK(allocations_per_step(big) == 0);
  attn::TrainConfig bare = small_config();  // the ladder's early rows: no LayerNorm, residual, w_o
  bare.model = attn::with_choices(bare.model, [](attn::ModelChoices& m) {
    m.ablations.layer_norm = false;
    m.ablations.residual = false;
    m.ablations.attn_proj = false;
  });
  CHECK(allocations_per_step(bare) == 0);
  // Chapter 11's parts: their kernels' scratch (RoPE's angles, RMSNorm's and SwiGLU's backward,
  // the windowed attention's blocks) comes from the step's workspace too.
  attn::TrainConfig parts = small_config();
  parts.model = attn::with_choices(parts.model, [](attn::ModelChoices& m) {
    m.positions = attn::Positions::rope;
    m.normalization = attn::Normalization::rmsnorm;
    m.ffn = attn::FfnKind::swiglu;
    m.bias = false;
    m.n_kv_heads = 1;
    m.window = 4;
  });
  CHECK(allocations_per_step(parts) == 0);
  // ALiBi: its slopes are computed per score row, not in a vector per attention call.
  attn::TrainConfig alibi = small_config();
  alibi.model = attn::with_choices(alibi.model, [](attn::ModelChoices& m) {
    m.positions = attn::Positions::alibi;
    m.window = 4;
  });
  CHECK(allocations_per_step(alibi) == 0);
  alibi.model = attn::with_choices(alibi.model, [](attn::ModelChoices& m) { m.window.reset(); });
  CHECK(allocations_per_step(alibi) == 0);
}

TEST_CASE("an estimate depends only on the weights, the seed and the step") {
  const attn::TrainConfig c = small_config();
  const attn::TrainState s = attn::train_init(c);
  attn::Split split{data_of(100), data_of(30)};
  const attn::EvalRecord a = attn::estimate_loss(s.weights, c.model, split, 4, 3, 9, 10);
  const attn::EvalRecord b = attn::estimate_loss(s.weights, c.model, split, 4, 3, 9, 10);
  const attn::EvalRecord other = attn::estimate_loss(s.weights, c.model, split, 4, 3, 9, 11);
  CHECK(a.train_loss == b.train_loss);
  CHECK(a.val_loss == b.val_loss);
  CHECK(a.train_loss != other.train_loss);
  CHECK_THROWS_AS(attn::estimate_loss(s.weights, c.model, split, 4, 0, 9, 0),
                  std::invalid_argument);
}

TEST_CASE("a run stopped, saved, loaded and resumed ends bit-identical to one without the stop") {
  const attn::TrainConfig c = small_config();
  const std::vector<int> data = data_of(300);
  attn::TrainState straight = attn::train_init(c);
  while (straight.step < c.steps) attn::train_step(straight, c, data);

  const fs::path dir = temp_dir("resume");
  attn::TrainState first = attn::train_init(c);
  while (first.step < 5) attn::train_step(first, c, data);
  first.evals.push_back({5, 1.25, 1.5});
  attn::save_checkpoint(dir, first, c, vocab7());
  attn::Checkpoint loaded = attn::load_checkpoint(dir);
  CHECK(loaded.state.step == 5);
  CHECK(loaded.config.seed == c.seed);
  CHECK(loaded.config.schedule.lr == c.schedule.lr);
  CHECK(loaded.vocab.chars() == vocab7().chars());
  REQUIRE(loaded.state.evals.size() == 1);
  CHECK(loaded.state.evals[0].val_loss == 1.5);
  CHECK(loaded.state.losses == first.losses);
  attn::TrainState resumed = std::move(loaded.state);
  while (resumed.step < c.steps) attn::train_step(resumed, loaded.config, data);
  CHECK(bitwise_equal(resumed.weights, straight.weights));
  CHECK(bitwise_equal(resumed.adam_m, straight.adam_m));
  CHECK(bitwise_equal(resumed.adam_v, straight.adam_v));
  CHECK(resumed.losses == straight.losses);
  fs::remove_all(dir);
}

// Chapter 11's parts, each alone and all together (the Llama recipe, with a window).
std::vector<attn::TrainConfig> part_configs() {
  std::vector<attn::TrainConfig> v;
  const auto with = [&](auto change) {
    attn::TrainConfig c = small_config();
    c.model = attn::with_choices(c.model, change);
    v.push_back(c);
  };
  with([](attn::ModelChoices& m) { m.positions = attn::Positions::rope; });
  with([](attn::ModelChoices& m) { m.normalization = attn::Normalization::rmsnorm; });
  with([](attn::ModelChoices& m) { m.ffn = attn::FfnKind::swiglu; });
  with([](attn::ModelChoices& m) { m.n_kv_heads = 1; });
  with([](attn::ModelChoices& m) { m.window = 2; });
  with([](attn::ModelChoices& m) {
    m.bias = false;
    m.ablations.tied_head = false;
  });
  with([](attn::ModelChoices& m) {
    m.positions = attn::Positions::rope;
    m.normalization = attn::Normalization::rmsnorm;
    m.ffn = attn::FfnKind::swiglu;
    m.n_kv_heads = 1;
    m.bias = false;
    m.window = 3;
    m.dropout = 0.1f;
  });
  return v;
}

TEST_CASE("every part trains: the loss falls on a repeating text") {
  for (attn::TrainConfig c : part_configs()) {
    c.steps = 80;
    c.schedule.lr = 1e-2f;
    attn::TrainState s = attn::train_init(c);
    const std::vector<int> data = data_of(400);
    double first = 0.0, last = 0.0;
    while (s.step < c.steps) {
      const attn::StepResult r = attn::train_step(s, c, data);
      if (s.step == 1) first = r.loss;
      last = r.loss;
    }
    INFO("positions " << attn::positions_name(c.model.positions) << ", "
                      << attn::normalization_name(c.model.normalization) << ", "
                      << attn::ffn_kind_name(c.model.ffn) << ", kv " << c.model.n_kv_heads
                      << ", window " << c.model.window.value_or(0) << ", bias " << c.model.bias);
    CHECK(first == doctest::Approx(std::log(7.0)).epsilon(0.1));
    CHECK(last < 0.5 * first);
  }
}

TEST_CASE("with every part, after the first step, a step allocates nothing") {
  // The parts' fast kernels (attn/fast/: RoPE, RMSNorm, SwiGLU, grouped-query attention with a
  // window) keep their caches and scratch between steps, like the default parts'.
  for (const attn::TrainConfig& c : part_configs()) {
    INFO("positions " << attn::positions_name(c.model.positions) << ", "
                      << attn::normalization_name(c.model.normalization) << ", "
                      << attn::ffn_kind_name(c.model.ffn) << ", kv " << c.model.n_kv_heads
                      << ", window " << c.model.window.value_or(0) << ", bias " << c.model.bias);
    CHECK(allocations_per_step(c) == 0);
  }
}

TEST_CASE("a run with parts, stopped, saved, loaded and resumed ends bit-identical") {
  for (const attn::TrainConfig& c : part_configs()) {
    const std::vector<int> data = data_of(300);
    attn::TrainState straight = attn::train_init(c);
    while (straight.step < c.steps) attn::train_step(straight, c, data);
    const fs::path dir = temp_dir("resume_parts");
    attn::TrainState first = attn::train_init(c);
    while (first.step < 5) attn::train_step(first, c, data);
    attn::save_checkpoint(dir, first, c, vocab7());
    attn::Checkpoint loaded = attn::load_checkpoint(dir);
    const attn::ModelSpec& m = loaded.config.model;
    CHECK(m.positions == c.model.positions);
    CHECK(m.normalization == c.model.normalization);
    CHECK(m.ffn == c.model.ffn);
    CHECK(m.n_kv_heads == c.model.n_kv_heads);
    CHECK(m.window == c.model.window);
    CHECK(m.bias == c.model.bias);
    CHECK(m.block_size == c.model.block_size);
    CHECK(m == c.model);  // every resolved field
    attn::TrainState resumed = std::move(loaded.state);
    while (resumed.step < c.steps) attn::train_step(resumed, loaded.config, data);
    CHECK(bitwise_equal(resumed.weights, straight.weights));
    CHECK(bitwise_equal(resumed.adam_v, straight.adam_v));
    CHECK(resumed.losses == straight.losses);
    fs::remove_all(dir);
  }
}

TEST_CASE("a new checkpoint replaces the previous one only once it is complete") {
  const attn::TrainConfig c = small_config();
  const std::vector<int> data = data_of(300);
  const fs::path dir = temp_dir("atomic");
  attn::TrainState s = attn::train_init(c);
  attn::train_step(s, c, data);
  attn::save_checkpoint(dir, s, c, vocab7());
  CHECK(fs::read_symlink(dir / "current") == fs::path("ckpt-000001"));
  // A save that died half way leaves a temporary folder, on the run's list (a save lists a
  // name before it makes it): loading ignores it, the next save removes it.
  std::ofstream(dir / "checkpoints.txt", std::ios::app) << "ckpt-000002.tmp-99999\n";
  fs::create_directories(dir / "ckpt-000002.tmp-99999" / "model");
  CHECK(attn::load_checkpoint(dir).state.step == 1);
  attn::train_step(s, c, data);
  attn::save_checkpoint(dir, s, c, vocab7());
  CHECK(fs::read_symlink(dir / "current") == fs::path("ckpt-000002"));
  CHECK_FALSE(fs::exists(dir / "ckpt-000001"));
  CHECK_FALSE(fs::exists(dir / "ckpt-000002.tmp-99999"));
  // DIR/model is the model folder of the newest checkpoint, with its vocabulary, for chapters
  // 07 and 10.
  CHECK(fs::exists(dir / "model" / "wte.npy"));
  CHECK(fs::exists(dir / "model" / "model.txt"));
  attn::Vocab found(U"?");
  CHECK(attn::find_vocab(dir / "model", found));
  CHECK(found.chars() == vocab7().chars());
  attn::ModelSpec mc = c.model;
  const attn::LmWeights w = attn::load_lm(dir / "model", mc);
  CHECK(mc.vocab_size == 7);
  fs::remove_all(dir);
}

TEST_CASE("a corrupt or inconsistent checkpoint is rejected, naming the file") {
  const attn::TrainConfig c = small_config();
  const std::vector<int> data = data_of(300);
  attn::TrainState s = attn::train_init(c);
  attn::train_step(s, c, data);
  const auto fresh = [&](const std::string& name) {
    const fs::path dir = temp_dir(name);
    attn::save_checkpoint(dir, s, c, vocab7());
    return dir;
  };
  const auto message = [](const fs::path& dir) {
    try {
      attn::load_checkpoint(dir);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  SUBCASE("no checkpoint at all") {
    const fs::path dir = temp_dir("empty");
    CHECK(message(dir).find("no checkpoint here") != std::string::npos);
    fs::remove_all(dir);
  }
  SUBCASE("a truncated weight file") {
    const fs::path dir = fresh("truncated");
    fs::resize_file(dir / "current" / "model" / "h0.w_q.npy", 100);
    CHECK(message(dir).find("h0.w_q.npy") != std::string::npos);
    fs::remove_all(dir);
  }
  SUBCASE("a missing moment file") {
    const fs::path dir = fresh("moment");
    fs::remove(dir / "current" / "adam_v" / "wpe.npy");
    CHECK(message(dir).find("wpe.npy") != std::string::npos);
    fs::remove_all(dir);
  }
  SUBCASE("a bad value in train.txt") {
    const fs::path dir = fresh("key");
    {
      std::ofstream out(dir / "current" / "train.txt", std::ios::app);
      out << "bogus line without value\n";
    }
    CHECK(message(dir).find("train.txt") != std::string::npos);
    fs::remove_all(dir);
  }
  SUBCASE("a vocabulary of the wrong size") {
    const fs::path dir = fresh("vocab");
    {
      std::ofstream out(dir / "current" / "vocab.txt", std::ios::binary | std::ios::trunc);
      out << "abc";
    }
    CHECK(message(dir).find("vocab.txt") != std::string::npos);
    fs::remove_all(dir);
  }
  SUBCASE("losses that do not match the step") {
    const fs::path dir = fresh("losses");
    attn::TrainState other = s;
    other.losses.push_back(1.0f);
    fs::remove_all(dir);
    attn::save_checkpoint(dir, other, c, vocab7());
    CHECK(message(dir).find("losses.npy") != std::string::npos);
    fs::remove_all(dir);
  }
}

}  // TEST_SUITE
