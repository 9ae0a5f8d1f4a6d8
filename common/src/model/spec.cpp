// spec.cpp: choices -> a resolved, checked model spec (attn/model/spec.hpp).
#include "attn/model/spec.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "attn/core/limits.hpp"
#include "attn/model/params.hpp"

namespace attn {

std::string_view choice_names(std::string_view key) {
  if (key == "positions") return "learned, rope, alibi or none";
  if (key == "normalization") return "layernorm or rmsnorm";
  if (key == "ffn") return "mlp or swiglu";
  return {};
}

std::span<const PartSwitch> part_switches() {
  static constexpr PartSwitch kSwitches[] = {
      {"bias", &ModelChoices::bias, true},
      {"attn_bias", &ModelChoices::attn_bias, false},  // chapter 14's GPT-2 attention biases
  };
  return kSwitches;
}

Positions parse_positions(std::string_view name) {
  if (name == "learned") return Positions::learned;
  if (name == "rope") return Positions::rope;
  if (name == "alibi") return Positions::alibi;
  if (name == "none") return Positions::none;
  throw std::invalid_argument("unknown positions '" + std::string(name) + "': expected " +
                              std::string(choice_names("positions")));
}
std::string_view positions_name(Positions p) {
  switch (p) {
    case Positions::rope:
      return "rope";
    case Positions::alibi:
      return "alibi";
    case Positions::none:
      return "none";
    case Positions::learned:
      break;
  }
  return "learned";
}

Normalization parse_normalization(std::string_view name) {
  if (name == "layernorm") return Normalization::layernorm;
  if (name == "rmsnorm") return Normalization::rmsnorm;
  throw std::invalid_argument("unknown normalization '" + std::string(name) + "': expected " +
                              std::string(choice_names("normalization")));
}
std::string_view normalization_name(Normalization n) {
  return n == Normalization::rmsnorm ? "rmsnorm" : "layernorm";
}

FfnKind parse_ffn_kind(std::string_view name) {
  if (name == "mlp") return FfnKind::mlp;
  if (name == "swiglu") return FfnKind::swiglu;
  throw std::invalid_argument("unknown ffn '" + std::string(name) + "': expected " +
                              std::string(choice_names("ffn")));
}
std::string_view ffn_kind_name(FfnKind f) { return f == FfnKind::swiglu ? "swiglu" : "mlp"; }

std::size_t swiglu_width(std::size_t C) {
  const std::size_t f = 8 * C / 3;  // floor(2/3 * 4C)
  return (f + 7) / 8 * 8;           // up to a multiple of 8
}

ModelSpec::ModelSpec() : ModelSpec(resolve_spec(ModelChoices{})) {}

AttentionOptions attention_options(const ModelSpec& spec, std::size_t offset, bool causal) {
  AttentionOptions o;
  o.causal = causal;
  o.window = spec.window;
  o.offset = offset;
  o.score.alibi = spec.alibi();
  return o;
}

bool ModelSpec::grouped_attention() const {
  return n_kv_heads != n_heads || rope() || alibi() || window;
}

bool ModelSpec::default_parts() const {
  return !grouped_attention() && normalization == Normalization::layernorm && ffn == FfnKind::mlp &&
         bias;
}

bool ModelSpec::operator==(const ModelSpec& o) const {
  return vocab_size == o.vocab_size && block_size == o.block_size && n_embd == o.n_embd &&
         n_heads == o.n_heads && n_layers == o.n_layers && n_kv_heads == o.n_kv_heads &&
         ffn_hidden == o.ffn_hidden && window == o.window && ablations == o.ablations &&
         activation == o.activation && dropout == o.dropout && positions == o.positions &&
         rope_theta == o.rope_theta && normalization == o.normalization && ffn == o.ffn &&
         bias == o.bias && attn_bias == o.attn_bias;
}

namespace {

// A field as the person typed it: "n_kv_heads 3" in a file, "--n-kv-heads 3" on a command line.
class Namer {
 public:
  explicit Namer(SpecNames names) : flags_(names == SpecNames::flags) {}
  std::string operator()(std::string_view field) const {
    if (!flags_) return std::string(field);
    std::string flag = "--";
    for (const char c : field) flag += c == '_' ? '-' : c;
    return flag;
  }
  template <class T>
  std::string operator()(std::string_view field, const T& value) const {
    return fmt::format("{} {}", (*this)(field), value);
  }

 private:
  bool flags_;
};

}  // namespace

ModelSpec resolve_spec(const ModelChoices& c, SpecNames names, std::size_t max_parameters) {
  const Namer name(names);
  const auto fail = [](std::string message) { throw SpecError(std::move(message)); };
  // 1. Sizes.
  for (const auto& [field, value] :
       {std::pair{"vocab_size", c.vocab_size}, std::pair{"block_size", c.block_size},
        std::pair{"n_embd", c.n_embd}, std::pair{"n_heads", c.n_heads},
        std::pair{"n_layers", c.n_layers}}) {
    if (value == 0) fail(fmt::format("{} must be at least 1", name(field, value)));
  }
  if (c.n_embd % c.n_heads != 0) {
    fail(fmt::format("{} does not divide {} (every head gets n_embd / n_heads channels)",
                     name("n_heads", c.n_heads), name("n_embd", c.n_embd)));
  }
  ModelSpec s{ModelSpec::Unresolved{}};
  s.choices_ = c;
  s.vocab_size = c.vocab_size;
  s.block_size = c.block_size;
  s.n_embd = c.n_embd;
  s.n_heads = c.n_heads;
  s.n_layers = c.n_layers;
  s.head_size = c.n_embd / c.n_heads;
  s.ablations = c.ablations;
  s.activation = c.activation;
  s.dropout = c.dropout;
  s.positions = c.positions;
  s.rope_theta = c.rope_theta;
  s.normalization = c.normalization;
  s.ffn = c.ffn;
  s.bias = c.bias;
  s.attn_bias = c.attn_bias;

  // 2. The defaults that depend on other choices.
  s.n_kv_heads = c.n_kv_heads.value_or(c.n_heads);
  s.ffn_hidden =
      c.ffn_hidden.value_or(c.ffn == FfnKind::swiglu ? swiglu_width(c.n_embd) : 4 * c.n_embd);
  s.window = c.window;

  // 3. The parts against each other and the sizes.
  if (s.n_kv_heads == 0 || s.n_heads % s.n_kv_heads != 0) {
    fail(fmt::format("{} does not divide {} (each K/V head serves an equal group of query heads)",
                     name("n_kv_heads", s.n_kv_heads), name("n_heads", s.n_heads)));
  }
  if (s.ffn_hidden == 0) {
    fail(fmt::format("{}: the FFN needs at least one hidden unit (leave it unset for {})",
                     name("ffn_hidden", 0), c.ffn == FfnKind::swiglu ? "swiglu_width(C)" : "4 C"));
  }
  if (!(std::isfinite(s.rope_theta) && s.rope_theta > 0.0)) {
    fail(fmt::format("{} must be a number > 0 (RoPE's base, 10000 by default), got {}",
                     name("rope_theta"), s.rope_theta));
  }
  if (s.rope_theta < kMinRopeTheta || s.rope_theta > kMaxRopeTheta) {
    fail(fmt::format("{} is out of range: RoPE's base must be in [{}, {}]",
                     name("rope_theta", s.rope_theta), kMinRopeTheta, kMaxRopeTheta));
  }
  if (s.rope() && s.head_size % 2 != 0) {
    fail(fmt::format("{} rotates pairs of features, but the head size {} / {} = {} is odd",
                     name("positions", "rope"), name("n_embd", s.n_embd),
                     name("n_heads", s.n_heads), s.head_size));
  }
  if (s.window && *s.window == 0) {
    fail(fmt::format("{}: a window holds at least the query's own key (leave it unset for none)",
                     name("window", 0)));
  }
  if (s.window && *s.window > s.block_size) {
    fail(fmt::format("{} is above {}: a query sees at most the T keys of its window (0: no window)",
                     name("window", *s.window), name("block_size", s.block_size)));
  }
  if (!(s.dropout >= 0.0f && s.dropout < 1.0f)) {
    fail(fmt::format("{} must be in [0, 1), the probability of zeroing a value, got {}",
                     name("dropout"), s.dropout));
  }
  if (!s.ablations.attn_proj && s.grouped_attention()) {
    fail(
        fmt::format("{} (chapter 09's ladder) runs chapter 05's attention only: no grouped K/V "
                    "heads, RoPE, ALiBi or window",
                    name("attn_proj", 0)));
  }

  // 4. What it costs: the parameters, and the KV cache a generation holds at T_max.
  const std::size_t params = param_count(param_dims(s), s.n_layers);
  if (params > max_parameters) {
    fail(fmt::format("a model of {} parameters is too big (at most {}): lower {} or {}", params,
                     max_parameters, name("n_embd"), name("n_layers")));
  }
  const double cache = 2.0 * static_cast<double>(s.n_layers) * static_cast<double>(s.block_size) *
                       static_cast<double>(s.n_kv_heads * s.head_size);
  if (cache > static_cast<double>(limits::kMaxElements)) {
    fail(fmt::format(
        "{}, {} and {} give a KV cache of {:.0f} floats (2 L T_max KV hs), more than {}: lower "
        "one of them",
        name("block_size", s.block_size), name("n_layers", s.n_layers), name("n_embd", s.n_embd),
        cache, limits::kMaxElements));
  }
  return s;
}

}  // namespace attn
