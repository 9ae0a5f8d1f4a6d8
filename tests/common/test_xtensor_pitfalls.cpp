// Evidence for docs/xtensor-for-numpy-users.md: one test per pitfall the page describes, plus a
// check that the page's NumPy <-> xtensor table means what it says (xtensor 0.24.3).
// If xtensor changes and a test here fails, the page is out of date: fix the page, then the test.
//
// Some xtensor mistakes read memory they do not own. Those demonstrations either read from a
// padded buffer we own (so they are safe everywhere), or run only where they are safe: the
// sanitizer build (ASan, and XTENSOR_ENABLE_ASSERT, which turns bad indices into exceptions)
// skips the unguarded ones and runs the "assert" ones instead, and says so.

// xtensor-blas's own C++ BLAS, so this test needs no BLAS library to link (the course's code uses
// attn::matmul; this file only shows how xt::linalg::dot treats shapes).
#define XTENSOR_USE_FLENS_BLAS

// GCC 12 reports false warnings inside these headers: array bounds in xt::argmax(x, axis)
// (xsort.hpp, at -O2) and "may be used uninitialized" in the <regex> that xnpy.hpp uses (in the
// sanitizer build). They are switched off for the headers below. (A similar false null
// dereference inside xtensor's reducers cannot be switched off this way, because those headers
// are precompiled: the test avoids `xt::sum(x * 0.5f)()`, which triggered it.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <doctest/doctest.h>
#include <unistd.h>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xio.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xnpy.hpp>
#include <xtensor/xsort.hpp>
#pragma GCC diagnostic pop

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>
#include <vector>

#include "attn/core/xt.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(XTENSOR_ENABLE_ASSERT)
#define ATTN_CHECKED_BUILD 1
#else
#define ATTN_CHECKED_BUILD 0
#endif

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// x = [[1, 2, 3], [4, 5, 6]] inside a buffer with 1024 spare floats (all 100) after it, so that a
// read past the end of x stays inside memory we own and gives a predictable wrong answer.
struct PaddedMatrix {
  std::vector<float> storage = std::vector<float>(6 + 1024, 100.0f);
  PaddedMatrix() {
    for (std::size_t i = 0; i < 6; ++i) storage[i] = static_cast<float>(i + 1);
  }
  auto view() {
    return xt::adapt(storage.data(), 6, xt::no_ownership(), std::array<std::size_t, 2>{2, 3});
  }
};

template <class A, class B>
bool same(const A& a, const B& b) {
  return a.shape() == b.shape() && xt::all(xt::equal(a, b));
}

}  // namespace

TEST_SUITE("common.xtensor_pitfalls") {
TEST_CASE("pitfall 1: a keep_dims reducer used lazily gives wrong numbers") {
  PaddedMatrix p;
  auto x = p.view();                                     // (2, 3)
  const attn::Matrix want = {{-2, -1, 0}, {-2, -1, 0}};  // x - row max

  // Wrong: the reducer stays lazy inside the subtraction.
  const attn::Matrix lazy = x - xt::amax(x, {1}, xt::keep_dims);
  CHECK_FALSE(same(lazy, want));
  CHECK(lazy(0, 1) == -2.0f);               // 2 - 4: the "max" came from the wrong place
  auto s = xt::sum(x, {1}, xt::keep_dims);  // auto: still lazy
  const attn::Matrix ratio = x / s;
  const attn::Matrix ratio_want = {{1.f / 6, 2.f / 6, 3.f / 6}, {4.f / 15, 5.f / 15, 6.f / 15}};
  CHECK_FALSE(same(ratio, ratio_want));

  // Right: evaluate the reducer first, any of these ways.
  const attn::Matrix m = xt::amax(x, {1}, xt::keep_dims);  // (2, 1)
  CHECK(same(attn::Matrix(x - m), want));
  CHECK(same(attn::Matrix(x - xt::eval(xt::amax(x, {1}, xt::keep_dims))), want));
  CHECK(same(attn::Matrix(x - xt::amax(x, {1}, xt::keep_dims | xt::evaluation_strategy::immediate)),
             want));
  // Right but slow: a lazy reducer without keep_dims, with the axis put back by newaxis.
  CHECK(same(attn::Matrix(x - xt::view(xt::amax(x, {1}), xt::all(), xt::newaxis())), want));
  const attn::Matrix sum = xt::sum(x, {1}, xt::keep_dims);
  CHECK(xt::allclose(attn::Matrix(x / sum), ratio_want));
}

TEST_CASE("pitfall 1, on an ordinary tensor (reads past its end: skipped under sanitizers)") {
#if ATTN_CHECKED_BUILD
  MESSAGE("skipped in the sanitizer build: this read past the end of x is the bug itself");
#else
  const attn::Matrix x = {{1, 2, 3}, {4, 5, 6}};
  const attn::Matrix lazy = x - xt::amax(x, {1}, xt::keep_dims);
  CHECK(lazy(0, 1) == -2.0f);  // should be -1
#endif
}

TEST_CASE("pitfall 2: auto keeps an expression lazy") {
  attn::Vector x = {1, 2, 3};
  auto y = x * 2.0f;                // an expression, not a tensor
  const attn::Vector z = x * 2.0f;  // a tensor: computed now
  x(0) = 10;
  CHECK(y(0) == 20.0f);  // recomputed from the new x
  CHECK(z(0) == 2.0f);
}

TEST_CASE("pitfall 3: a double literal turns a float expression into double") {
  const attn::Vector x = {1, 2, 3};
  static_assert(std::is_same_v<decltype(x * 0.5)::value_type, double>);
  static_assert(std::is_same_v<decltype(x * 0.5f)::value_type, float>);
  static_assert(std::is_same_v<decltype(xt::exp(x))::value_type, float>);
  const attn::Vector half = x * 0.5f;
  CHECK(half(1) == 1.0f);
}

TEST_CASE("pitfall 4: a float sum stops counting at 2^24") {
  // 20 million ones, lazily (no memory used).
  const auto ones = xt::ones<float>({20000000});
  CHECK(xt::sum(ones)() == 16777216.0f);  // 2^24: adding 1 no longer changes a float this big
  CHECK(xt::sum<double>(ones)() == 20000000.0);
}

TEST_CASE("pitfall 5: linalg::dot follows numpy.dot, not matmul, above two dimensions") {
  const attn::Tensor<4> a = xt::ones<float>({2, 3, 4, 5});
  const attn::Tensor<4> b = xt::ones<float>({2, 3, 5, 4});
  const auto ab = xt::linalg::dot(a, b);
  CHECK(ab.shape() == std::vector<std::size_t>{2, 3, 4, 2, 3, 4});  // matmul: (2, 3, 4, 4)
  static_assert(std::is_same_v<std::decay_t<decltype(ab)>, xt::xarray<float>>);

  // Two dimensions: the ordinary matrix product.
  const attn::Matrix m = {{1, 2}, {3, 4}};
  const attn::Matrix n = {{5, 6}, {7, 8}};
  const auto mn = xt::linalg::dot(m, n);
  static_assert(std::is_same_v<std::decay_t<decltype(mn)>, xt::xarray<float>>);
  CHECK(same(attn::Matrix(mn), attn::Matrix{{19, 22}, {43, 50}}));
  CHECK(same(attn::Matrix(xt::linalg::outer(attn::Vector{1, 2}, attn::Vector{3, 4})),
             attn::Matrix{{3, 4}, {6, 8}}));

  // A column slice is not contiguous: dot refuses it. Copy it into a tensor first.
  const attn::Matrix wide = {{1, 2, 3}, {4, 5, 6}};
  auto left = xt::view(wide, xt::all(), xt::range(0, 2));  // (2, 2), stepping over column 2
#if defined(XTENSOR_ENABLE_ASSERT)
  CHECK_THROWS_WITH(xt::linalg::dot(left, n), doctest::Contains("t.layout() == layout_type"));
#else
  CHECK_THROWS_WITH(xt::linalg::dot(left, n), "No valid layout chosen.");
#endif
  const attn::Matrix left_copy = left;
  CHECK(same(attn::Matrix(xt::linalg::dot(left_copy, n)), attn::Matrix{{19, 22}, {55, 64}}));
}

TEST_CASE("pitfall 6: noalias when the right side reads the destination corrupts it") {
  const attn::Matrix a = {{0, 1, 2}, {10, 11, 12}, {20, 21, 22}};
  const attn::Matrix want = {{0, 10, 20}, {1, 11, 21}, {2, 12, 22}};
  attn::Matrix plain = a;
  plain = xt::transpose(plain);  // xtensor copies through a temporary: right
  CHECK(same(plain, want));
  attn::Matrix fast = a;
  xt::noalias(fast) = xt::transpose(fast);  // writes row 0 before reading column 0: wrong
  CHECK_FALSE(same(fast, want));
  CHECK(fast(1, 0) == 10.0f);  // should be 1: it read back its own new value
}

TEST_CASE("pitfall 7: 0 * -inf is NaN, so a mask must not be multiplied in") {
  const std::size_t T = 3;
  const attn::Matrix naive = xt::triu(xt::ones<float>({T, T}), 1) * -kInf;
  CHECK(std::isnan(naive(0, 0)));  // every allowed position is NaN
  CHECK(std::isnan(naive(2, 1)));
  CHECK(naive(0, 1) == -kInf);
  const attn::Matrix scores = xt::ones<float>({T, T});
  const attn::Matrix masked = xt::where(xt::tril(xt::ones<bool>({T, T})), scores, -kInf);
  CHECK(same(masked, attn::Matrix{{1, -kInf, -kInf}, {1, 1, -kInf}, {1, 1, 1}}));
}

TEST_CASE("pitfall 8: the max of an all -inf row is the lowest float, and softmax gives NaN") {
  const attn::Vector row = {-kInf, -kInf, -kInf};
  const float m = xt::amax(row)();
  CHECK(m == std::numeric_limits<float>::lowest());  // -3.4e38, not -inf
  const attn::Vector e = xt::exp(row - m);           // exp(-inf) = 0 everywhere
  const attn::Vector p = e / xt::sum(e)();           // 0 / 0
  CHECK(std::isnan(p(0)));
}

TEST_CASE("pitfall 9: xtensor's printer drops zeros and may switch to scientific notation") {
  const attn::Vector a = {0.5f, 0.25f, 1.0f};
  std::ostringstream plain;
  plain << xt::print_options::precision(4) << a;
  CHECK(plain.str() == "{ 0.5 ,  0.25,  1.  }");  // not 0.5000
  std::ostringstream fixed;
  fixed << std::fixed << xt::print_options::precision(4) << a;
  CHECK(fixed.str() == plain.str());  // std::fixed is ignored
  const attn::Vector b = {0.5f, 0.25f, 1e-6f};
  std::ostringstream tiny;
  tiny << xt::print_options::precision(4) << b;
  CHECK(tiny.str() == "{ 5.0000e-01,  2.5000e-01,  1.0000e-06}");  // one tiny value: all of it
  // The precision option is for the next print only.
  const attn::Vector third = {1.0f / 3.0f};
  std::ostringstream twice;
  twice << xt::print_options::precision(2) << third << ' ' << third;
  CHECK(twice.str() == "{ 0.33} { 0.333333}");
  // Big tensors are cut short.
  std::ostringstream big;
  big << attn::Vector(xt::zeros<float>({2000}));
  CHECK(big.str().find("...") != std::string::npos);
}

TEST_CASE("pitfall 10: the standard fixes the engines' numbers, not the distributions'") {
  // The C++ standard requires this exact value ([rand.predef]); it says nothing of the kind for
  // std::normal_distribution, whose algorithm each standard library chooses.
  std::mt19937 engine;  // default seed 5489
  engine.discard(9999);
  CHECK(engine() == 4123659995u);
}

TEST_CASE("pitfall 11: a(0, 1, 2) on a 2-D tensor silently drops the first index") {
  const attn::Matrix a = {{0, 1, 2}, {10, 11, 12}, {20, 21, 22}};
  CHECK(a(0, 1, 2) == a(1, 2));
  CHECK(a(0, 1, 2) == 12.0f);
}

TEST_CASE("pitfall 12: assigning the wrong rank (checked build only)") {
#if defined(XTENSOR_ENABLE_ASSERT)
  const attn::Matrix x = {{1, 2, 3}, {4, 5, 6}};
  // xt::sum(x, {1}) has rank 1; without XTENSOR_ENABLE_ASSERT this compiles and then crashes.
  CHECK_THROWS_WITH(attn::Matrix(xt::sum(x, {1})),
                    doctest::Contains("Cannot change dimension of xtensor"));
  CHECK_THROWS_WITH(static_cast<void>(x(2, 0)), doctest::Contains("out of bounds"));
#else
  MESSAGE("skipped: needs XTENSOR_ENABLE_ASSERT (the sanitize preset); here it would crash");
#endif
}

TEST_CASE("pitfall 13: .npy loading checks the dtype strictly") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("attn_pitfalls_" + std::to_string(static_cast<long>(getpid())) + ".npy");
  const xt::xtensor<double, 1> saved = {1.5, 2.5};  // numpy's default dtype: float64
  xt::dump_npy(path.string(), saved);
  CHECK_THROWS_WITH(xt::load_npy<float>(path.string()),
                    doctest::Contains("formats not matching <f8 vs <f4"));
  const attn::Vector loaded = xt::cast<float>(xt::load_npy<double>(path.string()));
  CHECK(same(loaded, attn::Vector{1.5f, 2.5f}));
  std::filesystem::remove(path);
}

TEST_CASE("the page's NumPy table: assignment copies, views share") {
  attn::Matrix x = {{1, 2}, {3, 4}};
  attn::Matrix copy = x;  // NumPy: x.copy()
  copy(0, 0) = 100;
  CHECK(x(0, 0) == 1.0f);
  auto row = xt::row(x, 0);  // NumPy: x[0], a view
  row(1) = 5;
  CHECK(x(0, 1) == 5.0f);
  auto t = xt::transpose(x);  // a view too
  x(1, 0) = 7;
  CHECK(t(0, 1) == 7.0f);
}

TEST_CASE("the page's NumPy table: creating") {
  attn::Matrix e = attn::Matrix::from_shape({2, 3});
  CHECK(e.shape() == std::array<std::size_t, 2>{2, 3});
  e.fill(7.0f);
  CHECK(same(e, attn::Matrix{{7, 7, 7}, {7, 7, 7}}));
  CHECK(same(attn::Vector(xt::arange<float>(2, 10, 2)), attn::Vector{2, 4, 6, 8}));
  CHECK(same(attn::Matrix(xt::eye<float>(2)), attn::Matrix{{1, 0}, {0, 1}}));
  CHECK(same(attn::Matrix(xt::ones<float>({1, 2})), attn::Matrix{{1, 1}}));
}

TEST_CASE("the page's NumPy table: creation, views and shapes") {
  using namespace xt::placeholders;  // _
  CHECK(same(attn::Vector(xt::arange<float>(4)), attn::Vector{0, 1, 2, 3}));
  CHECK(same(attn::Vector(xt::linspace<float>(0, 1, 5)), attn::Vector{0, .25f, .5f, .75f, 1}));
  CHECK(same(attn::Matrix(xt::zeros<float>({2, 2})), attn::Matrix{{0, 0}, {0, 0}}));
  attn::Matrix x = xt::arange<float>(6).reshape({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  CHECK(x(1, 0) == 3.0f);
  CHECK(same(attn::Vector(xt::row(x, 1)), attn::Vector{3, 4, 5}));
  CHECK(same(attn::Vector(xt::view(x, xt::all(), 1)), attn::Vector{1, 4}));
  CHECK(same(attn::Vector(xt::view(x, 0, xt::range(1, _))), attn::Vector{1, 2}));
  CHECK(same(attn::Vector(xt::view(x, 0, xt::range(_, -1))), attn::Vector{0, 1}));  // x[0, :-1]
  CHECK(xt::view(x, xt::all(), xt::newaxis(), xt::all()).dimension() == 3);         // x[:, None, :]
  CHECK(same(attn::Matrix(xt::view(x, xt::keep(0, 0), xt::all())),
             attn::Matrix{{0, 1, 2}, {0, 1, 2}}));  // x[[0, 0], :]
  // reshape changes the container in place and keeps its rank; reshape_view may change it.
  const float* before = x.data();
  x.reshape({3, 2});
  CHECK(x.data() == before);
  CHECK(x(2, 1) == 5.0f);
  CHECK(xt::reshape_view(x, {6}).dimension() == 1);
  CHECK(same(attn::Vector(xt::flatten(x)), attn::Vector{0, 1, 2, 3, 4, 5}));
  CHECK(xt::expand_dims(x, 0).shape() == std::vector<std::size_t>{1, 3, 2});
  CHECK(xt::squeeze(attn::Tensor<3>(xt::zeros<float>({1, 3, 1}))).shape() ==
        std::vector<std::size_t>{3});
  CHECK(same(attn::Vector(xt::view(attn::Vector{0, 1, 2, 3, 4}, xt::range(_, _, 2))),
             attn::Vector{0, 2, 4}));
  // Transposes and axis swaps.
  const attn::Tensor<3> t = xt::arange<float>(24).reshape({2, 3, 4});
  CHECK(xt::transpose(t).shape() == std::array<std::size_t, 3>{4, 3, 2});
  CHECK(xt::transpose(t, {0, 2, 1}).shape() == std::array<std::size_t, 3>{2, 4, 3});  // swapaxes
  CHECK(xt::transpose(t, {0, 2, 1})(1, 3, 2) == t(1, 2, 3));
  CHECK(xt::transpose(t, {1, 0, 2}).shape() == std::array<std::size_t, 3>{3, 2, 4});
  // Joining.
  const attn::Vector a = {1, 2};
  const attn::Vector b = {3, 4};
  CHECK(same(attn::Vector(xt::concatenate(xt::xtuple(a, b))), attn::Vector{1, 2, 3, 4}));
  CHECK(same(attn::Matrix(xt::stack(xt::xtuple(a, b))), attn::Matrix{{1, 2}, {3, 4}}));
  CHECK(same(attn::Matrix(xt::stack(xt::xtuple(a, b), 1)), attn::Matrix{{1, 3}, {2, 4}}));
}

TEST_CASE("the page's NumPy table: math, reductions, masks, types") {
  const attn::Matrix x = {{1, 5, 3}, {4, 2, 6}};
  CHECK(same(attn::Vector(xt::sum(x, {0})), attn::Vector{5, 7, 9}));
  CHECK(same(attn::Vector(xt::mean(x, {1})), attn::Vector{3, 4}));
  CHECK(same(attn::Vector(xt::amax(x, {1})), attn::Vector{5, 6}));
  CHECK(same(xt::xtensor<std::size_t, 1>(xt::argmax(x, 1)), xt::xtensor<std::size_t, 1>{1, 2}));
  CHECK(xt::argmax(xt::flatten(x))() == 5);  // np.argmax(x) on the flattened array
  CHECK(xt::sum(x)() == 21.0f);
  CHECK(same(attn::Matrix(xt::maximum(x, 3.0f)), attn::Matrix{{3, 5, 3}, {4, 3, 6}}));
  CHECK(same(attn::Matrix(xt::where(x > 3.0f, x, 0.0f)), attn::Matrix{{0, 5, 0}, {4, 0, 6}}));
  CHECK(same(attn::Matrix(xt::clip(x, 2.0f, 5.0f)), attn::Matrix{{2, 5, 3}, {4, 2, 5}}));
  CHECK(same(attn::Vector(xt::square(attn::Vector{-3})), attn::Vector{9}));
  CHECK(same(attn::Vector(xt::pow(attn::Vector{-3}, 2)), attn::Vector{9}));
  CHECK(xt::isnan(attn::Vector{std::nanf("")})(0));
  CHECK(xt::allclose(attn::Vector(xt::exp(xt::log(attn::Vector{2.0f}))), attn::Vector{2.0f}));
  CHECK(xt::allclose(attn::Vector(xt::tanh(attn::Vector{0.5f})), attn::Vector{0.46211716f}));
  CHECK(xt::allclose(attn::Vector(xt::erf(attn::Vector{0.5f})), attn::Vector{0.52049988f}));
  CHECK(same(attn::Matrix(xt::tril(xt::ones<float>({2, 2}))), attn::Matrix{{1, 0}, {1, 1}}));
  CHECK(same(attn::Matrix(xt::triu(xt::ones<float>({2, 2}), 1)), attn::Matrix{{0, 1}, {0, 0}}));
  // Broadcasting: (2, 3) + (3,) and (2, 3) * (2, 1), as in NumPy.
  CHECK(same(attn::Matrix(x + attn::Vector{1, 1, 1}), attn::Matrix{{2, 6, 4}, {5, 3, 7}}));
  CHECK(same(attn::Matrix(x * attn::Matrix{{1}, {0}}), attn::Matrix{{1, 5, 3}, {0, 0, 0}}));
  // astype: xt::cast.
  const xt::xtensor<int, 1> ids = xt::cast<int>(attn::Vector{1.9f, -1.9f});
  CHECK(same(ids, xt::xtensor<int, 1>{1, -1}));  // truncates toward zero, like astype
}
}
