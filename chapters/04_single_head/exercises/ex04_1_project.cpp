// Exercise ex04.1: project every token to a query, a key or a value (chapter 04,
// docs/04-single-head.md).
//
// Goal: the linear map without bias that turns token vectors into head vectors.
//   x (T, C), w (C, hs) -> y = x @ w (T, hs)
//   y(t, j) = sum_c x(t, c) * w(c, j)
// Row t of y depends on row t of x only: projecting is something each token does on its own,
// before any token looks at another. The chapter calls it three times with three matrices:
// q = project(x, w_q), k = project(x, w_k), v = project(x, w_v).
// Throw std::invalid_argument if x has C columns but w does not have C rows.
//
// Check: build/default/bin/attn-check 04
#include <stdexcept>

#include "exercises.hpp"

namespace ex04 {

attn::Matrix project(const attn::Matrix& x, const attn::Matrix& w) {
  // TODO(ex04.1): return y (T, hs) = x (T, C) @ w (C, hs); std::invalid_argument if w has not C
  // rows.
  throw std::logic_error("TODO ex04.1: project x @ w");
}

}  // namespace ex04
