// gpt2.cpp: a Hugging Face GPT-2 folder read into the course's model (chapter 14,
// attn/model/gpt2.hpp). config.json gives the spec; model.safetensors (io/safetensors.cpp) the
// tensors, each checked against the spec's shapes before it is read.
#include "attn/model/gpt2.hpp"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/check.hpp"
#include "attn/core/limits.hpp"
#include "attn/io/safetensors.hpp"

namespace attn {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

[[noreturn]] void fail(const fs::path& path, std::string_view what) {
  throw Gpt2Error(fmt::format("{}: {}", path.string(), what));
}

constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;  // GPT-2's config.json: under 1 KB

json read_json(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail(path, "cannot read: no such file");
  if (!fs::is_regular_file(st)) fail(path, "cannot read: not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxConfigBytes) {
    fail(path, fmt::format("cannot read: more than {} bytes", kMaxConfigBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, fmt::format("not valid JSON (error at byte {})", e.byte));
  } catch (const json::exception&) {  // out_of_range: a number too large for any type
    fail(path, "not valid JSON (a number out of range)");
  }
}

// A size key of config.json: a whole number in [1, max].
std::size_t config_size(const fs::path& path, const json& config, const char* key,
                        std::size_t max) {
  if (!config.contains(key)) fail(path, fmt::format("no {} (a GPT-2 config names it)", key));
  const json& v = config[key];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > max) {
    fail(path, fmt::format("{} must be a whole number in [1, {}], got {}", key, max, v.dump()));
  }
  return static_cast<std::size_t>(v.get<std::uint64_t>());
}

// A flag the course does not run when it is set to `refused`.
void refuse_flag(const fs::path& path, const json& config, const char* key, bool refused,
                 const char* why) {
  if (!config.contains(key) || config[key].is_null()) return;
  if (!config[key].is_boolean()) fail(path, fmt::format("{} must be true or false", key));
  if (config[key].get<bool>() == refused) {
    fail(path, fmt::format("{} = {} is not something the course runs ({})", key,
                           refused ? "true" : "false", why));
  }
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// What the loader expects of one tensor name: its shape from the config and how it is stored.
struct Want {
  std::vector<std::size_t> shape;
  std::string course;
  std::function<void(const SafetensorsHeader&, const StTensor&)> load;
  bool optional = false;
  bool seen = false;
};

// The first non-finite value of a loaded tensor, named.
void check_finite(const fs::path& path, const std::string& name, std::span<const float> v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      fail(path,
           fmt::format("tensor '{}' holds {} at flat index {}: weights must be finite numbers",
                       name, std::isnan(v[i]) ? "nan" : "inf", i));
    }
  }
}

template <class T>
void read_into(const SafetensorsHeader& h, const StTensor& t, T& dest,
               const typename T::shape_type& shape) {
  dest = T::from_shape(shape);
  read_tensor(h, t, std::span<float>(dest.data(), dest.size()));
  check_finite(h.path, t.name, std::span<const float>(dest.data(), dest.size()));
}

}  // namespace

std::array<Matrix, 3> split_qkv(const Matrix& fused) {
  const std::size_t C = fused.shape()[0];
  require(C >= 1 && fused.shape()[1] == 3 * C, "attn::split_qkv", [&] {
    return "fused is " + shape_str(fused.shape()) + ", expected (C, 3C) with C >= 1";
  });
  std::array<Matrix, 3> out;
  for (std::size_t j = 0; j < 3; ++j) {
    out[j] = Matrix::from_shape({C, C});
    // Block j: columns [j C, (j + 1) C) of every row.             (C, 3C) -> (C, C)
    for (std::size_t r = 0; r < C; ++r) std::copy_n(&fused(r, j * C), C, &out[j](r, 0));
  }
  return out;
}

std::array<Vector, 3> split_qkv_bias(const Vector& fused) {
  const std::size_t C = fused.size() / 3;
  require(C >= 1 && fused.size() == 3 * C, "attn::split_qkv_bias",
          [&] { return "fused is " + shape_str(fused.shape()) + ", expected (3C,) with C >= 1"; });
  std::array<Vector, 3> out;
  for (std::size_t j = 0; j < 3; ++j) {
    out[j] = Vector::from_shape({C});
    std::copy_n(fused.data() + j * C, C, out[j].data());  // (3C,) -> (C,)
  }
  return out;
}

ModelSpec read_gpt2_config(const fs::path& path) {
  const json config = read_json(path);
  if (!config.is_object()) fail(path, "not a JSON object of settings");
  if (config.contains("model_type") &&
      !(config["model_type"].is_string() && config["model_type"].get<std::string>() == "gpt2")) {
    fail(path, fmt::format("model_type {} is not gpt2", config["model_type"].dump()));
  }
  ModelChoices c;
  // Bounds that keep every product below 2^64 before resolve_spec counts the parameters.
  c.n_embd = config_size(path, config, "n_embd", 1 << 16);
  c.n_heads = config_size(path, config, "n_head", 1 << 10);
  c.n_layers = config_size(path, config, "n_layer", 1 << 10);
  c.vocab_size = config_size(path, config, "vocab_size", 1 << 24);
  // n_positions, or n_ctx in older configs: a config with neither names the one it lacks.
  if (!config.contains("n_positions") && !config.contains("n_ctx")) {
    fail(path,
         "no n_positions (nor its older name n_ctx): a GPT-2 config names its context length");
  }
  c.block_size = config.contains("n_positions") ? config_size(path, config, "n_positions", 1 << 20)
                                                : config_size(path, config, "n_ctx", 1 << 20);
  if (config.contains("n_inner") && !config["n_inner"].is_null()) {
    c.ffn_hidden = config_size(path, config, "n_inner", 1 << 18);
  }
  // GELU as GPT-2 computes it: "gelu_new" is the tanh approximation.
  std::string act = "gelu_new";
  if (config.contains("activation_function")) {
    if (!config["activation_function"].is_string()) fail(path, "activation_function is not a name");
    act = config["activation_function"].get<std::string>();
  }
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    c.activation = Activation::gelu_tanh;
  } else if (act == "gelu") {
    c.activation = Activation::gelu;
  } else if (act == "relu") {
    c.activation = Activation::relu;
  } else {
    fail(path, fmt::format("activation_function '{}' is not one the course runs (gelu_new, "
                           "gelu_pytorch_tanh, gelu, relu)",
                           act.substr(0, 40)));
  }
  // The course's LayerNorm epsilon is 1e-5, GPT-2's.
  if (config.contains("layer_norm_epsilon")) {
    const json& eps = config["layer_norm_epsilon"];
    if (!eps.is_number() || std::abs(eps.get<double>() - 1e-5) > 1e-12) {
      fail(path,
           fmt::format("layer_norm_epsilon {} is not the course's 1e-5 (GPT-2's)", eps.dump()));
    }
  }
  refuse_flag(path, config, "add_cross_attention", true, "GPT-2 is a decoder only");
  refuse_flag(path, config, "scale_attn_by_inverse_layer_idx", true,
              "scores are scaled by 1/sqrt(hs) only");
  refuse_flag(path, config, "scale_attn_weights", false, "scores are scaled by 1/sqrt(hs)");
  refuse_flag(path, config, "tie_word_embeddings", false, "the head is the tied wte");
  c.attn_bias = true;  // c_attn and c_proj have biases
  try {
    return resolve_spec(c, SpecNames::keys, limits::kMaxLoadedParameters);
  } catch (const SpecError& e) {
    fail(path, e.what());
  }
}

Gpt2Model load_gpt2(const fs::path& dir) {
  const fs::path config_path = dir / "config.json";
  const fs::path file = dir / "model.safetensors";
  Gpt2Model m;
  m.spec = read_gpt2_config(config_path);
  const ModelSpec& s = m.spec;
  const SafetensorsHeader header = read_safetensors_header(file);
  std::error_code ec;
  m.file_bytes = static_cast<std::size_t>(fs::file_size(file, ec));
  const std::size_t V = s.vocab_size, T = s.block_size, C = s.n_embd, F = s.ffn_hidden;
  const std::size_t L = s.n_layers;
  LmWeights& w = m.weights;
  w.blocks.resize(L);

  // 1. Every name the config implies, its shape and where it goes.
  std::map<std::string, Want> want;
  const auto direct_matrix = [&](const std::string& name, Matrix& dest, std::size_t r,
                                 std::size_t cols, std::string course) {
    want[name] = {{r, cols},
                  std::move(course),
                  [&dest, r, cols](const SafetensorsHeader& h, const StTensor& t) {
                    read_into(h, t, dest, {r, cols});
                  }};
  };
  const auto direct_vector = [&](const std::string& name, Vector& dest, std::size_t n,
                                 std::string course) {
    want[name] = {
        {n}, std::move(course), [&dest, n](const SafetensorsHeader& h, const StTensor& t) {
          read_into(h, t, dest, {n});
        }};
  };
  direct_matrix("wte.weight", w.wte, V, C, "wte");
  direct_matrix("wpe.weight", w.wpe, T, C, "wpe");
  direct_vector("ln_f.weight", w.ln_f_gamma, C, "ln_f_gamma");
  direct_vector("ln_f.bias", w.ln_f_beta, C, "ln_f_beta");
  Matrix lm_head;  // read, then compared with wte: the course's head is tied
  direct_matrix("lm_head.weight", lm_head, V, C, "= wte (the tied head)");
  want["lm_head.weight"].optional = true;
  for (std::size_t l = 0; l < L; ++l) {
    BlockWeights& b = w.blocks[l];
    const std::string p = fmt::format("h.{}.", l), q = fmt::format("h{}.", l);
    direct_vector(p + "ln_1.weight", b.ln1_gamma, C, q + "ln1_gamma");
    direct_vector(p + "ln_1.bias", b.ln1_beta, C, q + "ln1_beta");
    direct_vector(p + "ln_2.weight", b.ln2_gamma, C, q + "ln2_gamma");
    direct_vector(p + "ln_2.bias", b.ln2_beta, C, q + "ln2_beta");
    // c_attn: x (C) @ (C, 3C) = [q | k | v]: its column blocks are w_q, w_k, w_v, and the heads
    // inside each block are column blocks of hs, as in the course's split_heads.
    want[p + "attn.c_attn.weight"] = {{C, 3 * C},
                                      fmt::format("{0}w_q | {0}w_k | {0}w_v", q),
                                      [&b, C](const SafetensorsHeader& h, const StTensor& t) {
                                        Matrix fused;
                                        read_into(h, t, fused, {C, 3 * C});
                                        std::array<Matrix, 3> qkv = split_qkv(fused);
                                        b.attn.w_q = std::move(qkv[0]);
                                        b.attn.w_k = std::move(qkv[1]);
                                        b.attn.w_v = std::move(qkv[2]);
                                      }};
    want[p + "attn.c_attn.bias"] = {{3 * C},
                                    fmt::format("{0}b_q | {0}b_k | {0}b_v", q),
                                    [&b, C](const SafetensorsHeader& h, const StTensor& t) {
                                      Vector fused;
                                      read_into(h, t, fused, {3 * C});
                                      std::array<Vector, 3> qkv = split_qkv_bias(fused);
                                      b.attn.b_q = std::move(qkv[0]);
                                      b.attn.b_k = std::move(qkv[1]);
                                      b.attn.b_v = std::move(qkv[2]);
                                    }};
    direct_matrix(p + "attn.c_proj.weight", b.attn.w_o, C, C, q + "w_o");
    direct_vector(p + "attn.c_proj.bias", b.attn.b_o, C, q + "b_o");
    direct_matrix(p + "mlp.c_fc.weight", b.ffn.w1, C, F, q + "w1");
    direct_vector(p + "mlp.c_fc.bias", b.ffn.b1, F, q + "b1");
    direct_matrix(p + "mlp.c_proj.weight", b.ffn.w2, F, C, q + "w2");
    direct_vector(p + "mlp.c_proj.bias", b.ffn.b2, C, q + "b2");
  }

  // 2. The file's tensors in the file's order: each one expected, of its shape, read once.
  std::vector<const StTensor*> in_file;
  for (const StTensor& t : header.tensors) in_file.push_back(&t);
  bool any_prefixed = false, any_plain = false;
  for (const StTensor* t : in_file) {
    std::string name = t->name;
    const bool prefixed = name.rfind("transformer.", 0) == 0;
    if (prefixed) name = name.substr(12);
    if (name != "lm_head.weight") (prefixed ? any_prefixed : any_plain) = true;
    m.dtype = std::string(st_dtype_name(t->dtype));
    Gpt2Tensor row{t->name, shape_text(t->shape), ""};
    // The causal mask as a buffer (older files): h.{l}.attn.bias (1, 1, T, T) and
    // h.{l}.attn.masked_bias (): the course builds the mask itself.
    const bool mask_buffer = name.rfind("h.", 0) == 0 &&
                             (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"));
    const auto it = want.find(name);
    if (it == want.end()) {
      if (mask_buffer) {
        row.course_name = "skipped (the causal mask, built by the course)";
        m.tensors.push_back(std::move(row));
        continue;
      }
      throw Gpt2Error(fmt::format(
          "{}: unexpected tensor '{}' (not a GPT-2 tensor of this config: n_layer {}; {})",
          file.string(), t->name.substr(0, 80), L, config_path.string()));
    }
    Want& wt = it->second;
    if (wt.seen) {
      throw Gpt2Error(
          fmt::format("{}: tensor '{}' appears twice (with and without the "
                      "'transformer.' prefix)",
                      file.string(), name));
    }
    if (t->shape != wt.shape) {
      throw Gpt2Error(fmt::format(
          "{}: tensor '{}' is {}, but {} says {} (n_embd {}, n_head {}, n_layer {}, vocab_size {}, "
          "n_positions {})",
          file.string(), t->name, shape_text(t->shape), config_path.string(), shape_text(wt.shape),
          C, s.n_heads, L, V, T));
    }
    wt.seen = true;
    row.course_name = wt.course;
    m.tensors.push_back(std::move(row));
    if (name == "lm_head.weight") continue;  // read after wte, to compare
    wt.load(header, *t);
  }
  if (any_prefixed && any_plain) {
    throw Gpt2Error(
        fmt::format("{}: some tensor names have the 'transformer.' prefix and some do "
                    "not (expected one spelling)",
                    file.string()));
  }
  m.prefixed = any_prefixed;
  for (const auto& [name, wt] : want) {
    if (!wt.seen && !wt.optional) {
      throw Gpt2Error(fmt::format("{}: tensor '{}{}' is missing ({} says n_layer {})",
                                  file.string(), any_prefixed ? "transformer." : "", name,
                                  config_path.string(), L));
    }
  }
  // 3. An lm_head stored beside wte must be wte itself: the course's head is tied.
  if (want["lm_head.weight"].seen) {
    const StTensor* t = header.find("lm_head.weight");
    if (t == nullptr) t = header.find("transformer.lm_head.weight");
    want["lm_head.weight"].load(header, *t);
    if (!std::equal(lm_head.begin(), lm_head.end(), w.wte.begin())) {
      throw Gpt2Error(
          fmt::format("{}: tensor 'lm_head.weight' differs from wte.weight: the "
                      "course runs GPT-2's tied head",
                      file.string()));
    }
  }
  return m;
}

}  // namespace attn
