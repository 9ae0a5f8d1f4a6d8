// Printing numbers the same way on every machine (see attn/term/print.hpp).
// Every number a chapter shows goes through format_number, so the docs check can compare program
// output byte for byte. fmt rounds the exact binary value of the float, on every platform alike.
#include "attn/term/print.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string_view>

#include "attn/core/check.hpp"

namespace attn {
namespace {

// Columns a label takes in a terminal: one per code point (UTF-8 continuation bytes do not count).
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0u) != 0x80u;
  }));
}

std::string pad_left(std::string_view text, std::size_t width) {
  const std::size_t w = display_width(text);
  return std::string(w < width ? width - w : 0, ' ') + std::string(text);
}

std::string pad_right(std::string_view text, std::size_t width) {
  const std::size_t w = display_width(text);
  return std::string(text) + std::string(w < width ? width - w : 0, ' ');
}

// The PyTorch look: [[ 1.0000,  0.0000],
//                    [ 0.5000,  0.5000]]
std::string bracketed(const std::vector<std::string>& cells, std::size_t rows, std::size_t cols,
                      const MatrixFormat& format) {
  if (rows == 0) return format.indent + "[]\n";
  // One width for every column, with room for a sign even when no value is negative, so that
  // "-inf", "-0.5000" and "0.5000" line up on their last digit.
  std::size_t width = 0;
  for (const std::string& cell : cells) {
    width = std::max(width, cell.front() == '-' ? cell.size() : cell.size() + 1);
  }
  std::string out;
  for (std::size_t i = 0; i < rows; ++i) {
    out += format.indent;
    out += i == 0 ? "[[" : " [";
    for (std::size_t j = 0; j < cols; ++j) {
      if (j > 0) out += ", ";
      out += pad_left(cells[i * cols + j], width);
    }
    out += i + 1 == rows ? "]]\n" : "],\n";
  }
  return out;
}

// The labelled table:        a       b
//                      a  1.0000  0.0000
std::string table(const std::vector<std::string>& cells, std::size_t rows, std::size_t cols,
                  const MatrixFormat& format) {
  const bool has_rows = !format.row_labels.empty();
  const bool has_cols = !format.col_labels.empty();
  std::size_t label_width = 0;
  for (const std::string& label : format.row_labels) {
    label_width = std::max(label_width, display_width(label));
  }
  std::size_t width = 0;
  for (const std::string& cell : cells) width = std::max(width, cell.size());
  for (const std::string& label : format.col_labels) {
    width = std::max(width, display_width(label));
  }

  std::string out;
  auto line = [&](const std::string& head, auto&& cell_of) {
    std::string text = format.indent + head;
    for (std::size_t j = 0; j < cols; ++j) text += "  " + pad_left(cell_of(j), width);
    while (!text.empty() && text.back() == ' ') text.pop_back();  // no trailing blanks
    out += text + '\n';
  };
  if (has_cols) {
    line(std::string(label_width, ' '), [&](std::size_t j) { return format.col_labels[j]; });
  }
  for (std::size_t i = 0; i < rows; ++i) {
    line(pad_right(has_rows ? format.row_labels[i] : std::string(), label_width),
         [&](std::size_t j) { return cells[i * cols + j]; });
  }
  return out;
}

}  // namespace

std::string format_number(float value, int precision) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  std::string text = fmt::format("{:.{}f}", value, std::max(precision, 0));
  // -0.00001 rounds to "-0.0000": print it as zero, like a value that is zero.
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) {
    text.erase(0, 1);
  }
  return text;
}

std::string format_vector(std::span<const float> values, int precision) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += format_number(values[i], precision);
  }
  return out + "]";
}

std::string format_ids(std::span<const int> ids) {
  return fmt::format("[{}]", fmt::join(ids, ", "));
}

std::string format_matrix(const Matrix& m, const MatrixFormat& format) {
  const std::size_t rows = m.shape(0);
  const std::size_t cols = m.shape(1);
  require(format.row_labels.empty() || format.row_labels.size() == rows, "attn::format_matrix",
          [&] {
            return fmt::format("expected {} row labels, got {}", rows, format.row_labels.size());
          });
  require(format.col_labels.empty() || format.col_labels.size() == cols, "attn::format_matrix",
          [&] {
            return fmt::format("expected {} column labels, got {}", cols, format.col_labels.size());
          });

  std::vector<std::string> cells;
  cells.reserve(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j)
      cells.push_back(format_number(m(i, j), format.precision));
  }
  if (format.row_labels.empty() && format.col_labels.empty()) {
    return bracketed(cells, rows, cols, format);
  }
  return table(cells, rows, cols, format);
}

}  // namespace attn
