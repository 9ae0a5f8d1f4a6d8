// attn/fast/rope.hpp: rotary position embeddings on the fast path (chapter 11). The same
// rotations as the reference attn::rope (attn/ops/rope.hpp, interleaved layout: pairs of
// neighbours), computed the same way (angles and products in double, rounded once), so the
// results are equal bit for bit; here they act in place on the rows of a projection buffer, where
// the fast attention keeps q and k, with no split into heads and no allocation (the table of
// angles goes to the caller's workspace). Tested equal to the reference in
// tests/common/test_fast_parts.cpp.
#pragma once

#include <cstddef>

#include "attn/core/xt.hpp"
#include "attn/fast/workspace.hpp"

namespace attn::fast {

// Where the heads to rotate are: B * T rows of `width` = n * hs floats (n heads side by side),
// row (b, t) at data + (b * T + t) * row_stride, at position offset + t.
struct RopeRows {
  float* data;
  std::size_t B, T;
  std::size_t width;       // n * hs, the first floats of each row
  std::size_t row_stride;  // floats from row to row (>= width)
};

// Rotates every pair (x[2i], x[2i+1]) of every head in place by the angle (offset + t) *
// theta^(-2i / hs); with `inverse` by minus that angle (RoPE's backward: dx = R^T dy). hs even,
// theta > 0 (throws std::invalid_argument otherwise, like attn::rope). The angles' table
// ((cos, sin) per position and pair) is built in ws.angles.
void rope_in_place(const RopeRows& rows, std::size_t hs, double theta, std::size_t offset,
                   bool inverse, Workspace& ws);

// Like attn::rope<float> and attn::rope_backward<float> (interleaved): x (B, H, T, hs).
Tensor<4> rope(const Tensor<4>& x, double theta = 10000.0, std::size_t offset = 0);
Tensor<4> rope_backward(const Tensor<4>& dy, double theta = 10000.0, std::size_t offset = 0);

}  // namespace attn::fast
