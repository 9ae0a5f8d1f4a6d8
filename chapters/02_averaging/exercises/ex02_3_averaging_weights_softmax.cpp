// ex02.3 Averaging weights by softmax: the same matrix as ex02.2, built the way attention does.
//
// Goal:    the (T, T) averaging weights as softmax(masked zeros), row by row.
// Shapes:  T -> W (T, T)
// Formula: scores[t, i] = 0 for i <= t, -inf for i > t
//          W[t, i] = exp(scores[t, i]) / sum_j exp(scores[t, j])
//          exp(0) = 1 for the t + 1 allowed entries and exp(-inf) = 0 for the rest, so
//          W[t, i] = 1 / (t + 1) on and below the diagonal and exactly 0 above it.
//          -infinity in C++: -std::numeric_limits<float>::infinity() (from <limits>).
//          You may call attn::softmax (attn/ops/softmax.hpp) on the scores you build.
// Check:   build/default/bin/attn-check 02
//          build/default/bin/02_averaging --mine
#include <limits>
#include <stdexcept>

#include "attn/ops/softmax.hpp"
#include "exercises.hpp"

namespace ex02 {

attn::Matrix averaging_weights_softmax(std::size_t T) {
  attn::Matrix scores = xt::zeros<float>({T, T});  // (T, T), every score equal
  // TODO(ex02.3): return softmax of each row of scores, with scores(t, i) = -inf for i > t
  // (0 elsewhere); (T, T), no NaN anywhere.
  throw std::logic_error("TODO ex02.3: averaging weights by softmax of masked zeros");
  return scores;
}

}  // namespace ex02
