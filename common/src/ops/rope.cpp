// rope.cpp: rotary position embeddings (chapter 11), forward and backward, in both layouts: the
// reference, the page's equations in the page's order, one pair of features at a time.
#include "attn/ops/rope.hpp"

#include <cmath>
#include <string>

#include "attn/core/check.hpp"
#include "rope_checks.hpp"

namespace attn {

std::vector<double> rope_frequencies(std::size_t hs, double theta) {
  detail::check_rope("attn::rope_frequencies", hs, theta);
  // theta^(-2i / hs): the pairs' wavelengths grow geometrically from 2 pi to about 2 pi theta
  // positions, so near pairs tell close positions apart and far pairs distant ones.
  std::vector<double> freq(hs / 2);
  for (std::size_t i = 0; i < hs / 2; ++i)
    freq[i] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hs));
  return freq;
}

namespace {

// The rotation of every pair by sign * angle (sign -1: the backward). x and y (B, H, T, hs).
template <class S>
xt::xtensor<S, 4> rotate(const xt::xtensor<S, 4>& x, double theta, std::size_t offset,
                         RopeLayout layout, double sign, const char* fn) {
  const std::size_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], hs = x.shape()[3];
  detail::check_rope(fn, hs, theta);
  const std::vector<double> freq = rope_frequencies(hs, theta);  // (hs/2,)
  const std::size_t half = hs / 2;
  xt::xtensor<S, 4> y = xt::xtensor<S, 4>::from_shape(x.shape());
  for (std::size_t t = 0; t < T; ++t) {
    const double p = static_cast<double>(offset + t);  // the absolute position of row t
    for (std::size_t i = 0; i < half; ++i) {
      // 1. The angle of pair i at position p, and its rotation matrix [[c, -s], [s, c]].
      const double angle = sign * p * freq[i];
      const double c = std::cos(angle), s = std::sin(angle);
      // 2. Which two features form pair i: neighbours, or i and i + hs/2.
      const std::size_t a = layout == RopeLayout::interleaved ? 2 * i : i;
      const std::size_t b = layout == RopeLayout::interleaved ? 2 * i + 1 : i + half;
      // 3. Rotate that pair in every batch row and head.
      for (std::size_t bb = 0; bb < B; ++bb)
        for (std::size_t h = 0; h < H; ++h) {
          const S* xr = &x(bb, h, t, 0);  // (hs,)
          S* yr = &y(bb, h, t, 0);        // (hs,)
          const double x0 = static_cast<double>(xr[a]), x1 = static_cast<double>(xr[b]);
          yr[a] = static_cast<S>(x0 * c - x1 * s);
          yr[b] = static_cast<S>(x0 * s + x1 * c);
        }
    }
  }
  return y;
}

}  // namespace

template <class S>
xt::xtensor<S, 4> rope(const xt::xtensor<S, 4>& x, double theta, std::size_t offset,
                       RopeLayout layout) {
  return rotate<S>(x, theta, offset, layout, +1.0, "attn::rope");
}

// y = R x with R block-diagonal of 2x2 rotations, so dx = R^T dy: each pair turned back by the
// same angle. Nothing of x is needed: RoPE is linear in x.
template <class S>
xt::xtensor<S, 4> rope_backward(const xt::xtensor<S, 4>& dy, double theta, std::size_t offset,
                                RopeLayout layout) {
  return rotate<S>(dy, theta, offset, layout, -1.0, "attn::rope_backward");
}

std::vector<std::size_t> rope_half_permutation(std::size_t hs) {
  detail::check_rope("attn::rope_half_permutation", hs, 10000.0);
  // The first elements of every pair, then the second ones: (0, 2, 4, ...), then (1, 3, 5, ...).
  std::vector<std::size_t> perm(hs);
  for (std::size_t i = 0; i < hs / 2; ++i) {
    perm[i] = 2 * i;
    perm[i + hs / 2] = 2 * i + 1;
  }
  return perm;
}

namespace {

// out[..., j] = x[..., perm[j]] (to_half) or out[..., perm[j]] = x[..., j] (back).
template <class S>
xt::xtensor<S, 4> permute_last(const xt::xtensor<S, 4>& x, bool to_half) {
  const std::size_t hs = x.shape()[3];
  const std::vector<std::size_t> perm = rope_half_permutation(hs);
  xt::xtensor<S, 4> out = xt::xtensor<S, 4>::from_shape(x.shape());
  const std::size_t rows = x.size() / hs;
  for (std::size_t r = 0; r < rows; ++r) {
    const S* xr = x.data() + r * hs;
    S* o = out.data() + r * hs;
    for (std::size_t j = 0; j < hs; ++j) {
      if (to_half) {
        o[j] = xr[perm[j]];
      } else {
        o[perm[j]] = xr[j];
      }
    }
  }
  return out;
}

}  // namespace

template <class S>
xt::xtensor<S, 4> rope_to_half_layout(const xt::xtensor<S, 4>& x) {
  return permute_last<S>(x, true);
}
template <class S>
xt::xtensor<S, 4> rope_from_half_layout(const xt::xtensor<S, 4>& x) {
  return permute_last<S>(x, false);
}

#define ATTN_ROPE_INSTANTIATE(S)                                                                 \
  template xt::xtensor<S, 4> rope<S>(const xt::xtensor<S, 4>&, double, std::size_t, RopeLayout); \
  template xt::xtensor<S, 4> rope_backward<S>(const xt::xtensor<S, 4>&, double, std::size_t,     \
                                              RopeLayout);                                       \
  template xt::xtensor<S, 4> rope_to_half_layout<S>(const xt::xtensor<S, 4>&);                   \
  template xt::xtensor<S, 4> rope_from_half_layout<S>(const xt::xtensor<S, 4>&);
ATTN_ROPE_INSTANTIATE(float)
ATTN_ROPE_INSTANTIATE(double)
#undef ATTN_ROPE_INSTANTIATE

}  // namespace attn
