// Tests for attn/model/gpt2.hpp: the committed GPT-2 fixture (tests/gpt2, written by Hugging
// Face's save_pretrained, scripts/make_gpt2_fixture.py) gives transformers' logits within the
// golden tolerance and its greedy ids and text exactly, with and without the KV cache; every
// spelling of the names loads the same weights; every broken folder is one line naming the file
// and the field.
#include "attn/model/gpt2.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "attn/core/random.hpp"
#include "attn/io/bpe.hpp"
#include "attn/io/corpus.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/safetensors.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/model/params.hpp"
#include "gpt2_files.hpp"
#include "test_helpers.hpp"

namespace {

namespace fs = std::filesystem;
using attn::testing::read_st;
using attn::testing::write_bytes;
using attn::testing::write_st;

constexpr double kAtol = 1e-5, kRtol = 1e-4;  // the golden tolerance

fs::path fixture(const char* name) {
  return attn::shipped_corpus_path().parent_path().parent_path() / "tests" / "gpt2" / name;
}

std::vector<int> read_ids(const fs::path& path) {
  std::ifstream in(path);
  std::vector<int> ids;
  std::string item;
  while (std::getline(in, item, ',')) ids.push_back(std::stoi(item));
  return ids;
}

// A scratch copy of the tiny fixture, changed by the test.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("attn_gpt2_" + name)) {
    fs::remove_all(dir);
    attn::testing::copy_folder(fixture("tiny"), dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void config(const std::string& from, const std::string& to) {
    std::string text = attn::testing::read_bytes(dir / "config.json");
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    write_bytes(dir / "config.json", text);
  }
};

// The one-line message of loading `dir`, which must fail.
std::string load_error(const fs::path& dir) {
  try {
    (void)attn::load_gpt2(dir);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    return what;
  }
  FAIL("the folder loaded");
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  INFO("message: " << text);
  INFO("expected it to contain: " << part);
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_SUITE("gpt2") {

TEST_CASE("the fixture's logits equal transformers' within the golden tolerance") {
  const attn::Gpt2Model m = attn::load_gpt2(fixture("tiny"));
  CHECK(m.spec.attn_bias);
  CHECK(m.spec.activation == attn::Activation::gelu_tanh);
  const std::vector<int> ids = read_ids(fixture("tiny") / "expected" / "prompt_ids.txt");
  xt::xtensor<int, 2> tokens = xt::xtensor<int, 2>::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), tokens.begin());
  const attn::Tensor<3> logits = attn::lm_forward(tokens, m.weights, m.spec);
  const attn::Tensor<2> want = attn::load_npy<2>(fixture("tiny") / "expected" / "logits.npy");
  REQUIRE(want.shape()[0] == ids.size());
  const attn::Tensor<2> got = xt::view(logits, 0, xt::all(), xt::all());
  CHECK_TENSOR_NEAR(got, want, kAtol, kRtol);
  // Every float of the checkpoint is a row of the parameter table: 28 tensors, 37,760 floats.
  std::size_t floats = 0;
  attn::LmWeights& w = const_cast<attn::LmWeights&>(m.weights);
  attn::visit_params(w, w, nullptr, [&](const attn::ParamRow&, const auto& t, const auto&) {
    floats += t.size();
  });
  CHECK(floats == attn::param_count(attn::param_dims(m.spec), m.spec.n_layers));
  CHECK(floats == 37760);
  CHECK(m.tensors.size() == 28);
}

TEST_CASE("greedy ids and text equal transformers', with and without the KV cache") {
  const attn::Gpt2Model m = attn::load_gpt2(fixture("tiny"));
  const fs::path expected = fixture("tiny") / "expected";
  const std::vector<int> prompt = read_ids(expected / "prompt_ids.txt");
  const std::vector<int> want = read_ids(expected / "greedy_ids.txt");
  attn::GenerateOptions g;
  g.max_new_tokens = want.size();
  g.greedy = true;
  attn::Rng rng(1);
  CHECK(attn::lm_generate_cached(m.weights, m.spec, prompt, g, rng) == want);
  CHECK(attn::lm_generate(m.weights, m.spec, prompt, g, rng) == want);
  // The tokenizer (chapter 13) encodes the prompt and decodes the continuation as HF's does.
  const attn::Bpe bpe = attn::Bpe::load(fixture("tiny"));
  std::string prompt_text = attn::testing::read_bytes(expected / "prompt.txt");
  prompt_text.pop_back();  // the newline
  CHECK(bpe.encode(prompt_text) == prompt);
  CHECK(bpe.decode(want) == attn::testing::read_bytes(expected / "greedy_text.txt"));
}

TEST_CASE("names with and without 'transformer.', with mask buffers, load the same weights") {
  const attn::Gpt2Model a = attn::load_gpt2(fixture("tiny"));
  const attn::Gpt2Model b = attn::load_gpt2(fixture("tiny-hub"));
  CHECK(a.prefixed != b.prefixed);
  CHECK(a.spec == b.spec);
  const std::vector<attn::NamedTensor> pa =
      attn::lm_parameters(const_cast<attn::LmWeights&>(a.weights));
  const std::vector<attn::NamedTensor> pb =
      attn::lm_parameters(const_cast<attn::LmWeights&>(b.weights));
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    CHECK(std::equal(pa[i].values.begin(), pa[i].values.end(), pb[i].values.begin(),
                     pb[i].values.end()));
  }
  std::size_t skipped = 0;
  for (const attn::Gpt2Tensor& t : b.tensors) skipped += t.course_name.rfind("skipped", 0) == 0;
  CHECK(skipped == 2 * b.spec.n_layers);  // attn.bias and attn.masked_bias of each block
}

TEST_CASE("split_qkv cuts (C, 3C) into its three column blocks") {
  attn::Matrix fused = attn::Matrix::from_shape({2, 6});
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 6; ++c) fused(r, c) = static_cast<float>(10 * r + c);
  const std::array<attn::Matrix, 3> qkv = attn::split_qkv(fused);
  CHECK(qkv[0] == attn::Matrix{{0, 1}, {10, 11}});
  CHECK(qkv[1] == attn::Matrix{{2, 3}, {12, 13}});
  CHECK(qkv[2] == attn::Matrix{{4, 5}, {14, 15}});
  CHECK_THROWS_AS(attn::split_qkv(attn::Matrix::from_shape({2, 5})), std::invalid_argument);
  const std::array<attn::Vector, 3> b = attn::split_qkv_bias(attn::Vector{1, 2, 3, 4, 5, 6});
  CHECK(b[1] == attn::Vector{3, 4});
}

TEST_CASE("config.json: what the course cannot run is refused by name") {
  const auto refused = [](const std::string& from, const std::string& to, const std::string& msg) {
    Scratch s("config");
    s.config(from, to);
    const std::string e = load_error(s.dir);
    CHECK(contains(e, "config.json: "));
    CHECK(contains(e, msg));
  };
  refused("\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": 1e-06",
          "layer_norm_epsilon 1e-06 is not the course's 1e-5");
  refused("\"gelu_new\"", "\"swish\"", "activation_function 'swish' is not one the course runs");
  refused("\"n_head\": 4", "\"n_head\": 5", "n_heads 5 does not divide n_embd 32");
  refused("\"n_embd\": 32", "\"n_embd\": -32", "n_embd must be a whole number in [1, 65536]");
  refused("\"n_embd\": 32", "\"n_embdx\": 32", "no n_embd");
  refused("\"add_cross_attention\": false", "\"add_cross_attention\": true",
          "add_cross_attention = true is not something the course runs");
  refused("\"scale_attn_by_inverse_layer_idx\": false", "\"scale_attn_by_inverse_layer_idx\": true",
          "scale_attn_by_inverse_layer_idx = true");
  refused("{", "[", "not valid JSON");
}

TEST_CASE("a config that disagrees with the tensors names the tensor and both shapes") {
  Scratch s("disagree");
  s.config("\"n_embd\": 32", "\"n_embd\": 64");
  CHECK(contains(load_error(s.dir),
                 "model.safetensors: tensor 'transformer.h.0.attn.c_attn.bias' "
                 "is (96,), but "));
  Scratch t("layers");
  t.config("\"n_layer\": 2", "\"n_layer\": 3");
  CHECK(contains(load_error(t.dir), "tensor 'transformer.h.2.attn.c_attn.bias' is missing"));
  Scratch u("fewer");
  u.config("\"n_layer\": 2", "\"n_layer\": 1");
  CHECK(contains(load_error(u.dir), "unexpected tensor 'transformer.h.1."));
}

TEST_CASE("missing, unexpected, doubled and non-finite tensors are named") {
  {
    Scratch s("missing");
    attn::testing::StFile f = read_st(s.dir / "model.safetensors");
    f.header.erase("transformer.ln_f.bias");
    write_bytes(s.dir / "model.safetensors", write_st(f));
    CHECK(contains(load_error(s.dir), "tensor 'transformer.ln_f.bias' is missing"));
  }
  {
    Scratch s("mixed");
    attn::testing::StFile f = read_st(s.dir / "model.safetensors");
    attn::testing::rename_key(f.header, "transformer.ln_f.bias", "ln_f.bias");
    f.data["ln_f.bias"] = f.data["transformer.ln_f.bias"];
    write_bytes(s.dir / "model.safetensors", write_st(f));
    CHECK(contains(load_error(s.dir), "some tensor names have the 'transformer.' prefix"));
  }
  {
    Scratch s("nan");
    attn::testing::StFile f = read_st(s.dir / "model.safetensors");
    std::string& d = f.data["transformer.wpe.weight"];
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(d.data() + 4 * 7, &nan, 4);
    write_bytes(s.dir / "model.safetensors", write_st(f));
    CHECK(contains(load_error(s.dir),
                   "tensor 'transformer.wpe.weight' holds nan at flat index 7: weights must be "
                   "finite"));
  }
  {
    Scratch s("lm_head");
    attn::testing::StFile f = read_st(s.dir / "model.safetensors");
    f.header["lm_head.weight"] = f.header["transformer.wte.weight"];
    f.data["lm_head.weight"] = f.data["transformer.wte.weight"];
    write_bytes(s.dir / "model.safetensors", write_st(f));
    CHECK_NOTHROW((void)attn::load_gpt2(s.dir));  // the tied head, stored twice
    f.data["lm_head.weight"][0] ^= 1;
    write_bytes(s.dir / "model.safetensors", write_st(f));
    CHECK(contains(load_error(s.dir), "'lm_head.weight' differs from wte.weight"));
  }
}

TEST_CASE("F16 and BF16 checkpoints load, converted to float") {
  for (const char* dtype : {"F16", "BF16"}) {
    CAPTURE(dtype);
    Scratch s(dtype);
    attn::testing::StFile f = read_st(s.dir / "model.safetensors");
    for (auto& [name, entry] : f.header.items()) {
      if (name == "__metadata__") continue;
      entry["dtype"] = dtype;
      std::string& d = f.data[name];
      std::string half(d.size() / 2, '\0');
      for (std::size_t i = 0; i < d.size() / 4; ++i) {
        float v = 0.0f;
        std::memcpy(&v, d.data() + 4 * i, 4);
        std::uint32_t bits = 0;
        std::memcpy(&bits, &v, 4);
        std::uint16_t h = 0;
        if (std::string(dtype) == "BF16") {
          h = static_cast<std::uint16_t>(bits >> 16);  // truncated: exactly representable
        } else {
          h = 0x3c00;  // 1.0: any exact half will do for the load itself
        }
        std::memcpy(half.data() + 2 * i, &h, 2);
      }
      d = half;
    }
    write_bytes(s.dir / "model.safetensors", write_st(f));
    const attn::Gpt2Model m = attn::load_gpt2(s.dir);
    CHECK(m.dtype == dtype);
    if (std::string(dtype) == "F16") CHECK(m.weights.wte(3, 4) == 1.0f);
  }
}

}  // TEST_SUITE
