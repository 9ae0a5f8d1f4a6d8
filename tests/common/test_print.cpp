// Tests for attn/term/print.hpp: the fixed-precision printing every chapter's output goes through.
// The docs check compares program output byte for byte, so these tests pin exact strings.
#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/term/print.hpp"

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_SUITE("common.print") {
TEST_CASE("numbers print with a fixed number of decimals") {
  CHECK(attn::format_number(0.125f) == "0.1250");
  CHECK(attn::format_number(1.0f) == "1.0000");
  CHECK(attn::format_number(-2.5f) == "-2.5000");
  CHECK(attn::format_number(1234.5f, 1) == "1234.5");
  CHECK(attn::format_number(0.125f, 2) == "0.12");  // the float 0.125 is exact: round half to even
  CHECK(attn::format_number(2.0f / 3.0f, 3) == "0.667");
  CHECK(attn::format_number(7.0f, 0) == "7");
  CHECK(attn::format_number(1e-6f) == "0.0000");  // never scientific notation
  CHECK(attn::format_number(3e7f, 1) == "30000000.0");
}

TEST_CASE("infinities and NaN print as words") {
  CHECK(attn::format_number(-kInf) == "-inf");
  CHECK(attn::format_number(kInf) == "inf");
  CHECK(attn::format_number(kNan) == "nan");
  CHECK(attn::format_number(-kNan) == "nan");
}

TEST_CASE("negative zero and tiny negatives print as zero") {
  CHECK(attn::format_number(-0.0f) == "0.0000");
  CHECK(attn::format_number(-0.00001f) == "0.0000");
  CHECK(attn::format_number(-0.4f, 0) == "0");
  CHECK(attn::format_number(-0.00005001f) == "-0.0001");  // rounds away from zero: stays negative
}

TEST_CASE("vectors and ids print like Python lists") {
  const std::vector<float> v = {0.125f, 0.875f};
  CHECK(attn::format_vector(v) == "[0.1250, 0.8750]");
  CHECK(attn::format_vector(v, 1) == "[0.1, 0.9]");
  const std::vector<float> special = {-kInf, kNan, -0.0f};
  CHECK(attn::format_vector(special) == "[-inf, nan, 0.0000]");
  CHECK(attn::format_vector(std::vector<float>{}) == "[]");
  const std::vector<int> ids = {18, 47, 56};
  CHECK(attn::format_ids(ids) == "[18, 47, 56]");
  CHECK(attn::format_ids(std::vector<int>{}) == "[]");
  CHECK(attn::format_ids(std::vector<int>{-1}) == "[-1]");
}

TEST_CASE("a matrix prints in the PyTorch look, indented") {
  const attn::Matrix m = {{1.0f, 0.0f}, {0.5f, 0.5f}};
  attn::MatrixFormat bare;
  bare.indent = "";
  CHECK(attn::format_matrix(m, bare) ==
        "[[ 1.0000,  0.0000],\n"
        " [ 0.5000,  0.5000]]\n");
  CHECK(attn::format_matrix(m) ==
        "  [[ 1.0000,  0.0000],\n"
        "   [ 0.5000,  0.5000]]\n");
}

TEST_CASE("matrix columns share one width so negatives and -inf line up") {
  const attn::Matrix m = {{1.0f, -kInf, -kInf}, {-0.5f, 12.25f, kNan}};
  attn::MatrixFormat f;
  f.indent = "";
  f.precision = 2;
  CHECK(attn::format_matrix(m, f) ==
        "[[  1.00,   -inf,   -inf],\n"
        " [ -0.50,  12.25,    nan]]\n");
}

TEST_CASE("edge shapes: one row, one column, no rows") {
  attn::MatrixFormat f;
  f.indent = "";
  CHECK(attn::format_matrix(attn::Matrix{{2.0f}}, f) == "[[ 2.0000]]\n");
  CHECK(attn::format_matrix(attn::Matrix{{1.0f}, {-1.0f}}, f) == "[[ 1.0000],\n [-1.0000]]\n");
  CHECK(attn::format_matrix(attn::Matrix(std::array<std::size_t, 2>{0, 3}), f) == "[]\n");
}

TEST_CASE("with labels a matrix prints as a table") {
  const attn::Matrix m = {{1.0f, -kInf}, {0.25f, 0.75f}};
  attn::MatrixFormat f;
  f.row_labels = {"a", "' '"};
  f.col_labels = {"a", "' '"};
  CHECK(attn::format_matrix(m, f) ==
        "            a     ' '\n"
        "  a    1.0000    -inf\n"
        "  ' '  0.2500  0.7500\n");
}

TEST_CASE("a table with only row labels or only column labels") {
  const attn::Matrix m = {{1.0f, 2.0f}};
  attn::MatrixFormat rows;
  rows.indent = "";
  rows.precision = 1;
  rows.row_labels = {"\\n"};
  CHECK(attn::format_matrix(m, rows) == "\\n  1.0  2.0\n");
  attn::MatrixFormat cols;
  cols.indent = "";
  cols.precision = 1;
  cols.col_labels = {"first", "é"};  // a wide label widens every column; é is one column
  CHECK(attn::format_matrix(m, cols) ==
        "  first      é\n"
        "    1.0    2.0\n");
}

TEST_CASE("a wrong number of labels is an error naming both counts") {
  attn::MatrixFormat f;
  f.row_labels = {"a"};
  CHECK_THROWS_WITH_AS(attn::format_matrix(attn::Matrix{{1.0f}, {2.0f}}, f),
                       "attn::format_matrix: expected 2 row labels, got 1", std::invalid_argument);
  attn::MatrixFormat g;
  g.col_labels = {"a", "b", "c"};
  CHECK_THROWS_WITH_AS(attn::format_matrix(attn::Matrix{{1.0f}, {2.0f}}, g),
                       "attn::format_matrix: expected 1 column labels, got 3",
                       std::invalid_argument);
}

TEST_CASE("printing is deterministic") {
  const attn::Matrix m = {{0.1f, 0.2f}, {0.3f, 1.0f / 3.0f}};
  CHECK(attn::format_matrix(m) == attn::format_matrix(m));
  CHECK(attn::format_number(0.1f, 9) == "0.100000001");  // the exact float, rounded by fmt
}
}
