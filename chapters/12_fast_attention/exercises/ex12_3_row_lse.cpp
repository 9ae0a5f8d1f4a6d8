// Exercise ex12.3: the log-sum-exp a flash forward keeps (chapter 12, docs/12-fast-attention.md).
//
// Goal: like the lse of attn::fast::flash_attention. The forward keeps one number per
// query for its backward, instead of the row's weights: lse = log sum_j exp(s_j) over the
// visible scaled scores, from which the backward recomputes any weight as exp(s_j - lse).
// From a row state after every key was folded in (ex12.1's row.m, row.l):
//   row -> lse, a float
// What must hold (the tests check each):
//   - exp(s_j - lse) summed over the row's keys is 1;
//   - scores near 1000 give lse near 1000, not inf (exp(1000) overflows float and double);
//   - a row that saw no key (m = -inf, l = 0) gives -inf, never NaN.
//
// Check: build/default/bin/attn-check 12
#include <stdexcept>

#include "exercises.hpp"

namespace ex12 {

float row_lse(const attn::OnlineRow& row) {
  // TODO(ex12.3): the row's log-sum-exp from its state.
  throw std::logic_error("TODO ex12.3: the row's log-sum-exp");
}

}  // namespace ex12
