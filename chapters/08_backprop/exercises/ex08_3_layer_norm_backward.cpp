// Exercise ex08.3: the LayerNorm backward (chapter 08, docs/08-backprop.md).
//
// Goal: the gradients of y = layer_norm(x, gamma, beta, eps) (chapter 06's forward: each token
// normalised over its C features, biased variance, eps inside the square root); the three paths
// from x to y are derived on the page (docs/08-backprop.md, "The math", LayerNorm).
//   in:  dy (B, T, C) = dL/dy, x (B, T, C), gamma (C,), eps
//   out: fresh dx (B, T, C), dgamma (C,), dbeta (C,) in an attn::LayerNormGrads<3>
// The contract:
//   - recompute each token's mean and 1/sqrt(var + eps) from x exactly as the forward did;
//   - x reaches y directly *and* through the token's mean and variance: all three paths count;
//   - dgamma and dbeta collect every token;
//   - finite and accurate for tokens far from 0 with a small spread;
//   - throw std::invalid_argument when dy and x differ in shape or gamma is not (C,).
//
// Check: build/default/bin/attn-check 08
#include <stdexcept>

#include "exercises.hpp"

namespace ex08 {

attn::LayerNormGrads<3> layer_norm_backward(const attn::Tensor<3>& dy, const attn::Tensor<3>& x,
                                            const attn::Vector& gamma, float eps) {
  // TODO(ex08.3): dx, dgamma and dbeta of the LayerNorm, every path counted; throw on bad shapes.
  throw std::logic_error("TODO ex08.3: LayerNorm backward");
}

}  // namespace ex08
