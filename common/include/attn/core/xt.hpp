// attn/core/xt.hpp: the one place the course includes xtensor, so a version change touches one
// file.
// Shape legend used everywhere in the course:
//   B batch, T time (sequence length), C channels (model width), H heads, hs head size,
//   V vocabulary size.
#pragma once

#include <xtensor/xadapt.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

namespace attn {
// float32 everywhere, like PyTorch's default. The rank is part of the type: a (T, T) matrix
// is a Tensor<2>. Prefer these over xt::xarray (faster, and rank mistakes fail to compile).
template <std::size_t N>
using Tensor = xt::xtensor<float, N>;
using Vector = Tensor<1>;
using Matrix = Tensor<2>;
using Mask = xt::xtensor<bool, 2>;  // (T, S): true where a query may attend to a key

// float64, for one purpose only: the double-precision forward that a gradient check runs
// (chapter 08), because float32 rounding in the loss is larger than the bugs the check must catch.
template <std::size_t N>
using Tensor64 = xt::xtensor<double, N>;
}  // namespace attn
