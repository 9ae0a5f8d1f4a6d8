// averaging.cpp: the mathematical trick behind attention, three ways (chapter 02).
// Row t of the output is the mean of rows 0..t of x. The loop says it plainly, the matmul
// says it with a lower-triangular weight matrix, and the softmax version builds those same
// weights the way attention will: masked scores (all zero here) through a softmax.
#include "attn/ops/averaging.hpp"
#include "attn/core/limits.hpp"

#include <string>

#include "attn/core/check.hpp"
#include "attn/ops/mask.hpp"
#include "attn/ops/matmul.hpp"

namespace attn {

namespace {

// An empty sequence has no running mean; T = 0 is a caller's mistake, not a (0, 0) result.
void check_time_steps(std::size_t T, const char* function) {
  require(T >= 1, function, [&] { return "T must be at least 1, got " + std::to_string(T); });
}

// x is (T, C) with at least one time step.
void check_input(const Matrix& x, const char* function) {
  if (x.shape()[0] == 0)
    shape_error(function, "x of shape (T, C) with T >= 1", shape_str(x.shape()));
}

}  // namespace

Matrix running_mean_loop(const Matrix& x) {
  const std::size_t T = x.shape()[0];
  const std::size_t C = x.shape()[1];
  check_input(x, "attn::running_mean_loop");
  Matrix xbar = xt::zeros<float>({T, C});  // (T, C)
  for (std::size_t t = 0; t < T; ++t) {
    // 1. Sum the rows the query at time t may see: x[0..t]. In double, so this version is the
    //    accurate one the other two are compared with.
    for (std::size_t c = 0; c < C; ++c) {
      double sum = 0.0;
      for (std::size_t i = 0; i <= t; ++i) sum += static_cast<double>(x(i, c));
      // 2. Divide by how many there were: t + 1.
      xbar(t, c) = static_cast<float>(sum / static_cast<double>(t + 1));
    }
  }
  return xbar;
}

Matrix averaging_weights_tril(std::size_t T) {
  check_time_steps(T, "attn::averaging_weights_tril");
  checked_elements({T, T}, "attn::averaging_weights_tril: (T, T)");
  // 1. tril(ones(T, T)): row t has ones in columns 0..t.
  // 2. Divide each row by its sum, t + 1, so the row is a weighted average.
  Matrix w = xt::zeros<float>({T, T});  // (T, T)
  for (std::size_t t = 0; t < T; ++t) {
    const float weight = 1.0f / static_cast<float>(t + 1);
    for (std::size_t s = 0; s <= t; ++s) w(t, s) = weight;
  }
  return w;
}

Matrix averaging_weights_softmax(std::size_t T) {
  check_time_steps(T, "attn::averaging_weights_softmax");
  checked_elements({T, T}, "attn::averaging_weights_softmax: (T, T)");
  // 1. Scores: all zero. Every key looks equally interesting (chapter 04 replaces these by
  //    q . k, the data-dependent part).
  const Matrix scores = xt::zeros<float>({T, T});  // (T, T)
  // 2. Mask the future and softmax each row: the t + 1 allowed zeros become 1 / (t + 1) each,
  //    the masked entries exactly 0. Same weights as the tril way.
  return masked_softmax<2>(scores, causal_mask(T));  // (T, T)
}

Matrix running_mean_matmul(const Matrix& x) {
  check_input(x, "attn::running_mean_matmul");
  return matmul(averaging_weights_tril(x.shape()[0]), x);  // (T, T) @ (T, C) -> (T, C)
}

Matrix running_mean_softmax(const Matrix& x) {
  check_input(x, "attn::running_mean_softmax");
  return matmul(averaging_weights_softmax(x.shape()[0]), x);  // (T, T) @ (T, C) -> (T, C)
}

}  // namespace attn
