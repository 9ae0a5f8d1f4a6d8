// sample.cpp: from logits to one token id, with temperature (chapters 01 and 07).
// softmax(logits / temperature) gives the distribution; Rng::categorical draws from it, the same
// way torch.multinomial does in the lecture.
#include "attn/model/sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/check.hpp"
#include "attn/ops/softmax.hpp"

namespace attn {

namespace {

// A temperature divides the logits, so it must be a finite positive number; 0 would divide by
// zero and a negative one would turn the ranking upside down.
void check_sampling_inputs(std::span<const float> logits, float temperature, const char* function) {
  require(std::isfinite(temperature) && temperature > 0.0f, function,
          [&] { return fmt::format("temperature must be > 0, got {}", temperature); });
  require(!logits.empty(), function, "logits must not be empty");
}

// scores / temperature, in place: the one division by the temperature of every sampling path
// (sample_logits, sample_top_k, TokenSampler), so each has the overflow guard below.
void divide_by_temperature(std::span<float> scores, float temperature) {
  // A tiny temperature (1e-38, or 1e-45 below float's normal range) overflows float: a finite
  // score becomes +-inf and the softmax gives NaN. Then shift by the largest finite score first,
  // as the softmax does anyway: (score - max) / temperature is 0 for the largest scores and -inf
  // or hugely negative for the rest, so the softmax gives the exact limit of a vanishing
  // temperature: argmax (shared equally among tied maxima).
  bool overflow = false;
  float top = -std::numeric_limits<float>::infinity();
  for (const float x : scores) {
    if (!std::isfinite(x)) continue;
    overflow = overflow || std::isinf(x / temperature);
    top = std::max(top, x);
  }
  const float shift = overflow ? top : 0.0f;
  for (float& x : scores) x = overflow ? (x - shift) / temperature : x / temperature;
}

Vector probs_unchecked(std::span<const float> logits, float temperature) {
  const std::size_t V = logits.size();
  Vector probs(Vector::shape_type{V});  // (V,)
  // 1. Scale: logits / temperature. Below 1 the gaps between logits grow (sharper), above 1
  //    they shrink (flatter, toward uniform).
  std::copy(logits.begin(), logits.end(), probs.begin());
  divide_by_temperature(std::span<float>(probs.data(), V), temperature);
  // 2. The stable softmax turns the scaled scores into probabilities.
  softmax_rows(probs.data(), 1, V);
  return probs;
}

}  // namespace

Vector probs_with_temperature(std::span<const float> logits, float temperature) {
  check_sampling_inputs(logits, temperature, "attn::probs_with_temperature");
  return probs_unchecked(logits, temperature);
}

int sample_logits(std::span<const float> logits, float temperature, Rng& rng) {
  check_sampling_inputs(logits, temperature, "attn::sample_logits");
  const Vector probs = probs_unchecked(logits, temperature);  // (V,)
  // 3. One uniform draw, walked along the cumulative sum of the probabilities.
  return static_cast<int>(rng.categorical(std::span<const float>(probs.data(), probs.size())));
}

}  // namespace attn

// Top-k sampling (chapter 07): only the k most likely tokens may be drawn.
namespace attn {

int sample_top_k(std::span<const float> logits, float temperature, std::size_t top_k, Rng& rng) {
  check_sampling_inputs(logits, temperature, "attn::sample_top_k");
  const std::size_t V = logits.size();
  require(top_k >= 1 && top_k <= V, "attn::sample_top_k",
          [&] { return fmt::format("top_k must be in [1, {}], got {}", V, top_k); });
  // 1. Rank the ids by logit, largest first; equal logits keep the lower id first. NaN ranks
  //    above everything (a strict order even then), so it stays in and the draw reports it.
  std::vector<std::size_t> order(V);
  for (std::size_t v = 0; v < V; ++v) order[v] = v;
  const auto before = [&logits](std::size_t i, std::size_t j) {
    const bool nan_i = std::isnan(logits[i]);
    const bool nan_j = std::isnan(logits[j]);
    if (nan_i != nan_j) return nan_i;
    if (!nan_i && logits[i] != logits[j]) return logits[i] > logits[j];
    return i < j;
  };
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top_k - 1),
                   order.end(), before);
  // 2. Every id outside the top k gets logit -inf, i.e. probability exactly 0 after the
  //    softmax; the k survivors are renormalised among themselves by that same softmax.
  //    Keeping the ids in their places (rather than compacting the k survivors) means that
  //    top_k = V draws exactly what sample_logits draws from the same generator.
  std::vector<float> kept(V, -std::numeric_limits<float>::infinity());
  for (std::size_t r = 0; r < top_k; ++r) kept[order[r]] = logits[order[r]];
  const Vector probs = probs_unchecked(kept, temperature);  // (V,)
  // 3. One draw; zero-probability ids are never chosen.
  return static_cast<int>(rng.categorical(std::span<const float>(probs.data(), probs.size())));
}

}  // namespace attn

// The sampler of the generation loops (chapters 07 and 10): the same operations as
// sample_logits / sample_top_k above, in buffers allocated once, plus greedy and top-p.
namespace attn {

void check_sampling_options(const SamplingOptions& o, std::size_t V, const char* function) {
  // Each message is formatted only when its check fails: this runs once per generated token.
  if (!(std::isfinite(o.temperature) && o.temperature > 0.0f)) {
    require(false, function,
            [&] { return fmt::format("temperature must be > 0, got {}", o.temperature); });
  }
  if (o.top_k > V) {
    require(false, function, [&] {
      return fmt::format("top_k must be in [0, {}] (0 = all tokens), got {}", V, o.top_k);
    });
  }
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) {
    require(false, function,
            [&] { return fmt::format("top_p must be in (0, 1], got {}", o.top_p); });
  }
}

std::vector<float> top_p_filter(std::span<const float> probs, float top_p) {
  constexpr const char* kFn = "attn::top_p_filter";
  const std::size_t V = probs.size();
  require(V > 0, kFn, "probs must hold at least one probability");
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    require(false, kFn, [&] { return fmt::format("top_p must be in (0, 1], got {}", top_p); });
  }
  // 1. Rank the ids: most likely first, the lower id first among equals.
  std::vector<std::size_t> order(V);
  for (std::size_t v = 0; v < V; ++v) order[v] = v;
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    if (probs[i] != probs[j]) return probs[i] > probs[j];
    return i < j;
  });
  // 2. The shortest head of the ranking whose mass reaches top_p (at least the first id).
  double mass = 0.0;
  std::size_t keep = 0;
  while (keep < V && mass < static_cast<double>(top_p))
    mass += static_cast<double>(probs[order[keep++]]);
  // 3. The kept ids renormalised, the tail at 0.
  std::vector<float> out(V, 0.0f);
  for (std::size_t r = 0; r < keep; ++r)
    out[order[r]] = static_cast<float>(static_cast<double>(probs[order[r]]) / mass);
  return out;
}

TokenSampler::TokenSampler(std::size_t vocab_size) : probs_(vocab_size), order_(vocab_size) {
  require(vocab_size > 0, "attn::TokenSampler", "vocab_size must be at least 1");
}

namespace {
TopPFilter g_top_p_filter = nullptr;
}  // namespace

TopPFilter set_top_p_filter(TopPFilter filter) {
  const TopPFilter previous = g_top_p_filter;
  g_top_p_filter = filter;
  return previous;
}

int TokenSampler::next(std::span<const float> logits, const SamplingOptions& o, Rng& rng) {
  constexpr const char* kFn = "attn::TokenSampler::next";
  const std::size_t V = probs_.size();
  if (logits.size() != V) {
    require(false, kFn,
            [&] { return fmt::format("logits of length {}, expected V = {}", logits.size(), V); });
  }
  check_sampling_options(o, V, kFn);
  last_probs_size_ = 0;
  // 1. Greedy: the most likely id, lowest on ties. Deterministic, no draw.
  if (o.greedy) {
    std::size_t best = 0;
    for (std::size_t v = 1; v < V; ++v)
      if (logits[v] > logits[best]) best = v;
    return static_cast<int>(best);
  }
  // 2. Top-k, exactly as sample_top_k: rank the ids (ties and NaN as there), keep the k first,
  //    the others get logit -inf. k = 0 or V keeps everything (the draw of sample_logits).
  const std::size_t k = o.top_k == 0 ? V : o.top_k;
  if (k < V) {
    for (std::size_t v = 0; v < V; ++v) order_[v] = v;
    const auto before = [&logits](std::size_t i, std::size_t j) {
      const bool nan_i = std::isnan(logits[i]);
      const bool nan_j = std::isnan(logits[j]);
      if (nan_i != nan_j) return nan_i;
      if (!nan_i && logits[i] != logits[j]) return logits[i] > logits[j];
      return i < j;
    };
    std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k - 1),
                     order_.end(), before);
    std::fill(probs_.begin(), probs_.end(), -std::numeric_limits<float>::infinity());
    for (std::size_t r = 0; r < k; ++r) probs_[order_[r]] = logits[order_[r]];
  } else {
    std::copy(logits.begin(), logits.end(), probs_.begin());
  }
  // 3. softmax(logits / temperature) over the kept ids (probs_unchecked's two steps).
  divide_by_temperature(std::span<float>(probs_.data(), V), o.temperature);
  softmax_rows(probs_.data(), 1, V);
  // 4. Nucleus (top-p): rank by probability, keep the shortest head of the ranking whose mass
  //    reaches top_p, zero the tail. The long tail of unlikely ids is what turns a good sample
  //    into gibberish now and then; top-p cuts it adaptively (few ids when the model is sure,
  //    many when it is not), where top-k cuts a fixed number. Rng::categorical renormalises.
  const bool has_nan =
      std::any_of(probs_.begin(), probs_.end(), [](float p) { return std::isnan(p); });
  if (o.top_p < 1.0f && !has_nan && g_top_p_filter) {  // another cut (chapter 10's --mine)
    const std::vector<float> kept =
        g_top_p_filter(std::span<const float>(probs_.data(), V), o.top_p);
    if (kept.size() != V) {
      require(false, kFn, [&] {
        return fmt::format("the top-p filter returned {} probabilities, expected V = {}",
                           kept.size(), V);
      });
    }
    for (std::size_t v = 0; v < V; ++v)
      if (!(kept[v] > 0.0f)) probs_[v] = 0.0f;
  } else if (o.top_p < 1.0f && !has_nan) {  // (a NaN is left for the draw to report)
    for (std::size_t v = 0; v < V; ++v) order_[v] = v;
    std::sort(order_.begin(), order_.end(), [this](std::size_t i, std::size_t j) {
      if (probs_[i] != probs_[j]) return probs_[i] > probs_[j];
      return i < j;
    });
    double mass = 0.0;
    std::size_t keep = 0;
    while (keep < V && mass < static_cast<double>(o.top_p))
      mass += static_cast<double>(probs_[order_[keep++]]);
    for (std::size_t r = keep; r < V; ++r) probs_[order_[r]] = 0.0f;
  }
  last_probs_size_ = V;
  // 5. One draw along the cumulative sum.
  return static_cast<int>(rng.categorical(std::span<const float>(probs_.data(), V)));
}

}  // namespace attn
