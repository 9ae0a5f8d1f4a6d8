// loss.cpp (fast side): cross-entropy and its gradient as the training step runs them
// (chapters 07-09). One pass per row computes the row's log-sum-exp once; the loss and the
// gradient (softmax - onehot) / N both come out of it, the rows in fixed chunks over the
// library's threads. The reference is common/src/ops/loss.cpp; tests/common/test_fast_ops.cpp
// proves the two agree.
#include "attn/fast/loss.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attn/core/check.hpp"
#include "../ops/loss_checks.hpp"
#include "attn/core/parallel.hpp"

namespace attn::fast {

namespace {

// Rows per chunk when the loss is split over the threads (fixed: the result does not depend on
// the thread count). 256 rows of V = 65 are ~10 us of work.
constexpr std::size_t kLossRows = 256;

// The shared pass. For every row n of logits (N, V):
//   1. m = max_v l[n, v]                       (so every exponent is <= 0, as in softmax)
//   2. e[v] = exp(l[n, v] - m) in float, s = sum_v e[v] in double (s >= 1: the max term is 1)
//   3. -log softmax(l_n)[y] = log(s) - (l[n, y] - m), accumulated in double
//   4. if a gradient is wanted: grad[n, v] = (e[v] / s - [v == y]) / D
// Returns the summed loss / D. D is N for the mean; the training step's batch shards pass the
// whole batch's row count (model.cpp). `grad` is null or points at an (N, V) row-major buffer,
// which may be logits itself. With a gradient the exponentials e are kept in the gradient's row
// (each logit is read before its e is written there); without one they are only summed. The
// chunks' sums go to ws.sums.
double cross_entropy_pass(const Matrix& logits, std::span<const int> targets, float* grad,
                          std::size_t D, Workspace& ws) {
  const std::size_t N = logits.shape()[0];
  const std::size_t V = logits.shape()[1];
  // Rows are independent: fixed chunks of kLossRows rows are shared out over the library's
  // threads, each chunk sums its losses in double, and the chunks' sums are added in chunk order,
  // so the result does not depend on the thread count.
  const std::size_t chunks = (N + kLossRows - 1) / kLossRows;
  double* chunk_sum = at_least(ws.sums, chunks);  // (chunks,)
  const double inv_n = 1.0 / static_cast<double>(D);
  detail::run_parts(
      chunks, detail::worker_count(chunks), [&](std::size_t first, std::size_t last, std::size_t) {
        for (std::size_t k = first; k < last; ++k) {
          double total = 0.0;
          for (std::size_t n = k * kLossRows; n < std::min(N, (k + 1) * kLossRows); ++n) {
            const float* row = logits.data() + n * V;  // (V,)
            const auto y = static_cast<std::size_t>(targets[n]);
            // 1.
            float m = row[0];
            for (std::size_t v = 1; v < V; ++v)
              if (row[v] > m) m = row[v];
            const float target = row[y];  // read before step 2 may overwrite it (grad == logits)
            // 2.
            double s = 0.0;
            if (grad != nullptr) {
              float* e = grad + n * V;  // (V,) the exponentials, in place of the row's gradient
              for (std::size_t v = 0; v < V; ++v) {
                e[v] = std::exp(row[v] - m);
                s += static_cast<double>(e[v]);
              }
            } else {
              for (std::size_t v = 0; v < V; ++v) s += static_cast<double>(std::exp(row[v] - m));
            }
            // 3.
            total += std::log(s) - (static_cast<double>(target) - static_cast<double>(m));
            // 4.
            if (grad != nullptr) {
              float* g = grad + n * V;  // (V,) holds e
              const float e_y = g[y];
              for (std::size_t v = 0; v < V; ++v)
                g[v] = static_cast<float>(static_cast<double>(g[v]) / s * inv_n);  // softmax / N
              g[y] = static_cast<float>((static_cast<double>(e_y) / s - 1.0) * inv_n);  // - onehot
            }
          }
          chunk_sum[k] = total;
        }
      });
  double total = 0.0;
  for (std::size_t k = 0; k < chunks; ++k) total += chunk_sum[k];
  return total / static_cast<double>(D);
}

}  // namespace

double cross_entropy(const Matrix& logits, std::span<const int> targets) {
  attn::detail::check_loss_inputs(logits, targets, "attn::fast::cross_entropy");
  Workspace ws;
  return cross_entropy_pass(logits, targets, nullptr, logits.shape()[0], ws);
}

LossGrad cross_entropy_with_grad(const Matrix& logits, std::span<const int> targets) {
  attn::detail::check_loss_inputs(logits, targets, "attn::fast::cross_entropy_with_grad");
  LossGrad out{0.0, Matrix(logits.shape())};
  Workspace ws;
  out.loss = cross_entropy_pass(logits, targets, out.grad.data(), logits.shape()[0], ws);
  return out;
}

double cross_entropy_backward_inplace(Matrix& logits, std::span<const int> targets) {
  attn::detail::check_loss_inputs(logits, targets, "attn::fast::cross_entropy_backward_inplace");
  Workspace ws;
  return cross_entropy_backward_inplace(logits, targets, logits.shape()[0], ws);
}

double cross_entropy_backward_inplace(Matrix& logits, std::span<const int> targets,
                                      std::size_t denominator, Workspace& ws) {
  attn::detail::check_loss_inputs(logits, targets, "attn::fast::cross_entropy_backward_inplace");
  require(denominator >= logits.shape()[0], "attn::fast::cross_entropy_backward_inplace",
          "the denominator must be at least the number of rows");
  // Safe in place: each logit is read before its exponential is written over it (step 2), and
  // the target's logit is kept aside before.
  return cross_entropy_pass(logits, targets, logits.data(), denominator, ws);
}

}  // namespace attn::fast
