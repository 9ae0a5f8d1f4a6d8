// attn/term/print.hpp: printing numbers the same way on every machine.
// xtensor's own printer drops trailing zeros and switches the whole tensor to scientific
// notation when one element is tiny, so the course prints with fixed precision through fmt.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "attn/core/xt.hpp"

namespace attn {

// One number: fixed precision, "-inf", "inf", "nan"; negative zero prints as zero.
std::string format_number(float value, int precision = 4);

// A vector as "[0.1250, 0.8750]".
std::string format_vector(std::span<const float> values, int precision = 4);
std::string format_ids(std::span<const int> ids);  // "[18, 47, 56]"

struct MatrixFormat {
  int precision = 4;
  std::vector<std::string> row_labels;  // optional, printed left of each row
  std::vector<std::string> col_labels;  // optional, printed above the columns
  std::string indent = "  ";
};

// A matrix as aligned columns, one row per line, every line ending in '\n':
//   [[ 1.0000,  0.0000],
//    [ 0.5000,  0.5000]]
// (the PyTorch look) or, with labels, as a table.
std::string format_matrix(const Matrix& m, const MatrixFormat& format = {});

}  // namespace attn
