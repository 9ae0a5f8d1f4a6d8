// Tests for attn/model/params.hpp, the parameter table: for every variant and part of chapters
// 09 and 11, the table says exactly what lm_init makes (each tensor's presence and shape), in
// lm_parameters' order and names, with AdamW's decay groups; save_lm then load_lm walk it into
// the same model; the reference's float64 weights list the same names; and a walk pairs two
// models tensor for tensor.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "attn/core/random.hpp"
#include "attn/model/model.hpp"
#include "attn/model/params.hpp"
#include "attn/model/reference.hpp"
#include "attn/ops/optim.hpp"
#include "test_fixtures.hpp"
#include "test_helpers.hpp"

namespace {

namespace fs = std::filesystem;

struct Variant {
  const char* name;
  attn::ModelSpec config;
};

// The default model, each of chapter 09's ablations, each of chapter 11's parts, and a mix.
std::vector<Variant> variants() {
  const attn::ModelSpec base = attn::testing::lm_config(11, 6, 8, 2, 2);
  std::vector<Variant> out{{"default", base}};
  auto add = [&](const char* name, auto change) {
    out.push_back({name, attn::with_choices(base, change)});
  };
  add("untied head", [](attn::ModelChoices& c) { c.ablations.tied_head = false; });
  add("no layer norm", [](attn::ModelChoices& c) { c.ablations.layer_norm = false; });
  add("no residual", [](attn::ModelChoices& c) { c.ablations.residual = false; });
  add("no ffn", [](attn::ModelChoices& c) { c.ablations.ffn = false; });
  add("no w_o", [](attn::ModelChoices& c) { c.ablations.attn_proj = false; });
  add("ffn 6", [](attn::ModelChoices& c) { c.ffn_hidden = 6; });
  add("rope", [](attn::ModelChoices& c) { c.positions = attn::Positions::rope; });
  add("rmsnorm", [](attn::ModelChoices& c) { c.normalization = attn::Normalization::rmsnorm; });
  add("swiglu", [](attn::ModelChoices& c) { c.ffn = attn::FfnKind::swiglu; });
  add("gqa", [](attn::ModelChoices& c) { c.n_kv_heads = 1; });
  add("window", [](attn::ModelChoices& c) { c.window = 3; });
  add("no bias", [](attn::ModelChoices& c) { c.bias = false; });
  add("no bias, untied", [](attn::ModelChoices& c) {
    c.bias = false;
    c.ablations.tied_head = false;
  });
  add("attention biases", [](attn::ModelChoices& c) { c.attn_bias = true; });
  add("attention biases, no w_o", [](attn::ModelChoices& c) {
    c.attn_bias = true;
    c.ablations.attn_proj = false;
  });
  add("llama", [](attn::ModelChoices& c) {
    c.positions = attn::Positions::rope;
    c.normalization = attn::Normalization::rmsnorm;
    c.ffn = attn::FfnKind::swiglu;
    c.n_kv_heads = 1;
    c.bias = false;
  });
  return out;
}

// A fresh folder per test binary, removed at exit.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("attn_test_params_" + std::to_string(::getpid()));
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST_SUITE("params") {

TEST_CASE("the table says exactly what lm_init makes, in lm_parameters' order, names and decay") {
  for (const Variant& v : variants()) {
    CAPTURE(std::string(v.name));
    attn::Rng rng(1);
    attn::LmWeights w = attn::lm_init(rng, v.config);
    const attn::ParamDims dims = attn::param_dims(v.config);
    std::vector<std::string> present;
    std::vector<bool> decayed;
    std::size_t rows = 0;
    attn::visit_params(w, w, &dims, [&](const attn::ParamRow& row, const auto& t, const auto&) {
      ++rows;
      CAPTURE(attn::param_name(row));
      CHECK(row.known);
      CHECK(attn::fits_row(row, t));
      CHECK(row.decay == attn::decays(row.rank));
      if (row.present) {
        present.push_back(attn::param_name(row));
        decayed.push_back(row.decay);
      }
    });
    CHECK(rows == 2 + 19 * v.config.n_layers + 4);  // a block: 15 rows, 4 attention biases
    const std::vector<attn::NamedTensor> params = attn::lm_parameters(w);
    REQUIRE(params.size() == present.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      CHECK(params[i].name == present[i]);
      CHECK(attn::decays(params[i].rank) == decayed[i]);
    }
  }
}

TEST_CASE("a tensor of another shape, or one the variant does not have, does not fit its row") {
  const attn::ModelSpec config = attn::testing::lm_config(11, 6, 8, 2, 2);
  attn::Rng rng(2);
  attn::LmWeights w = attn::lm_init(rng, config);
  w.blocks[1].ffn.w2 = xt::zeros<float>({32, 9});       // (F, C) = (32, 8) expected
  w.blocks[0].swiglu.w_up = xt::zeros<float>({8, 32});  // an MLP model has no w_up
  const attn::ParamDims dims = attn::param_dims(config);
  std::vector<std::string> misfits;
  attn::visit_params(w, w, &dims, [&](const attn::ParamRow& row, const auto& t, const auto&) {
    if (!attn::fits_row(row, t)) misfits.push_back(attn::param_name(row));
  });
  CHECK(misfits == std::vector<std::string>{"h0.w_up", "h1.w2"});
}

TEST_CASE("save_lm then load_lm walk the table into the same tensors, for every variant") {
  const TempDir tmp;
  for (const Variant& v : variants()) {
    CAPTURE(std::string(v.name));
    attn::Rng rng(3);
    const attn::LmWeights w = attn::lm_init(rng, v.config);
    const fs::path dir = tmp.path / v.name;
    attn::save_lm(dir, w, v.config);
    attn::ModelChoices asked;  // the default model's, with the variant's layers and heads
    asked.n_layers = v.config.n_layers;
    asked.n_heads = v.config.n_heads;
    attn::ModelSpec loaded;
    attn::LmWeights back = attn::load_lm(dir, asked, loaded);
    CHECK(loaded == v.config);  // model.txt carried the rest of the variant
    const attn::ParamDims dims = attn::param_dims(v.config);
    std::size_t files = 0;
    attn::visit_params(w, back, &dims,
                       [&](const attn::ParamRow& row, const auto& a, const auto& b) {
                         CAPTURE(attn::param_name(row));
                         CHECK(fs::exists(dir / (attn::param_name(row) + ".npy")) == row.present);
                         files += row.present;
                         CHECK_TENSOR_NEAR(a, b, 0.0, 0.0);
                       });
    CHECK(files == attn::lm_parameters(back).size());
  }
}

TEST_CASE("the float64 reference weights list the same tensors under the same names") {
  for (const Variant& v : variants()) {
    CAPTURE(std::string(v.name));
    attn::Rng rng(4);
    attn::LmWeights w = attn::lm_init(rng, v.config);
    attn::ref::LmWeights<double> d = attn::ref::cast<double>(w);
    const auto ours = attn::lm_parameters(w);
    const auto theirs = attn::ref::parameters(d);
    REQUIRE(ours.size() == theirs.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
      CHECK(ours[i].name == theirs[i].name);
      REQUIRE(ours[i].values.size() == theirs[i].values.size());
      for (std::size_t j = 0; j < ours[i].values.size(); ++j)
        CHECK(theirs[i].values[j] == static_cast<double>(ours[i].values[j]));
    }
  }
}

}  // TEST_SUITE
