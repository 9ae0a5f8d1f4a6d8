// Wrong: dk = dS q instead of dS^T q (the scores are q_t . k_s: key s collects column s of dS).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "attn/fast/gemm.hpp"
#include "attn/ops/linear.hpp"
#include "exercises.hpp"

namespace ex08 {

AttentionGrads attention_backward(const attn::Matrix& dout, const attn::Matrix& q,
                                  const attn::Matrix& k, const attn::Matrix& v, bool causal) {
  const std::size_t T = q.shape()[0], S = k.shape()[0], hs = q.shape()[1];
  if (k.shape()[1] != hs || v.shape()[0] != S || dout.shape()[0] != T ||
      dout.shape()[1] != v.shape()[1] || (causal && S != T))
    throw std::invalid_argument("attention_backward: shapes do not fit");
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  attn::Matrix p = xt::zeros<float>({T, S});  // the forward's weights
  for (std::size_t t = 0; t < T; ++t) {
    const std::size_t keys = causal ? t + 1 : S;
    std::vector<double> s(keys);
    double m = -1e300;
    for (std::size_t j = 0; j < keys; ++j) {
      double d = 0.0;
      for (std::size_t c = 0; c < hs; ++c)
        d += static_cast<double>(q(t, c)) * static_cast<double>(k(j, c));
      s[j] = d * scale;
      m = std::max(m, s[j]);
    }
    double sum = 0.0;
    for (double& e : s) sum += (e = std::exp(e - m));
    for (std::size_t j = 0; j < keys; ++j) p(t, j) = static_cast<float>(s[j] / sum);
  }
  AttentionGrads g;
  const attn::Matrix pt = xt::transpose(p);
  const attn::Matrix vt = xt::transpose(v);
  g.dv = attn::fast::matmul_blas(pt, dout);                  // (S, T) @ (T, hs)
  const attn::Matrix dp = attn::fast::matmul_blas(dout, vt);  // (T, hs) @ (hs, S)
  const attn::Matrix ds = softmax_backward(p, dp);      // (T, S)
  const attn::Matrix dst = xt::transpose(ds);
  g.dq = attn::fast::matmul_blas(ds, k) * static_cast<float>(scale);   // (T, S) @ (S, hs)
  g.dk = attn::fast::matmul_blas(ds, q) * static_cast<float>(scale);  // (S, T) @ (T, hs)
  return g;
}

}  // namespace ex08
