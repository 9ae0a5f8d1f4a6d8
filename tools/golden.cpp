// tools/golden.cpp: attn-golden checks the library against PyTorch (tests/golden, ctest
// golden.pytorch). Each case folder holds case.txt (`op` and `key value` lines) and .npy files
// written by tests/golden/make_fixtures.py; we recompute every output with attn:: and compare.
//
//   attn-golden [--help] DIR...
//
// A case passes when every element of every output satisfies |got - ref| <= 1e-5 + 1e-4 |ref|.
// Backward cases (chapter 08) hold grad.NAME.npy files: the upstream gradient of the op's output
// and the reference gradients of its inputs and parameters; the runner also runs the backward.
// Exit codes: 0 every case passed, 1 a case failed or could not be run, 2 usage error.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/text.hpp"
#include "attn/ops/attention.hpp"
#include "attn/ops/attention_ref.hpp"
#include "attn/ops/gqa.hpp"
#include "attn/ops/rmsnorm.hpp"
#include "attn/ops/rope.hpp"
#include "attn/ops/swa.hpp"
#include "attn/ops/swiglu.hpp"
#include "attn/model/block.hpp"
#include "attn/core/check.hpp"
#include "attn/core/threads.hpp"
#include "attn/io/keyvalue.hpp"
#include "attn/fast/ffn.hpp"
#include "attn/fast/loss.hpp"
#include "attn/fast/attention.hpp"
#include "attn/fast/flash.hpp"
#include "attn/fast/layernorm.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/loss.hpp"
#include "attn/ops/mask.hpp"
#include "attn/model/model.hpp"
#include "attn/io/npy.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/train/train.hpp"

namespace {

namespace fs = std::filesystem;

constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-4;
// The largest sizes a case may ask for: those of the chapters' flags (09_training --help).
constexpr std::size_t kMaxHeads = 64;
constexpr std::size_t kMaxLayers = 64;
constexpr std::size_t kMaxTrainSteps = 10000;  // batches.npy: (steps, B, T + 1)
constexpr std::size_t kMaxBatch = 1024;

constexpr std::string_view kUsage =
    "usage: attn-golden [--help] DIR...\n"
    "\n"
    "Runs every golden case found under the DIRs (any folder holding a case.txt) with the attn\n"
    "library and compares each output with PyTorch's, saved next to it as .npy files.\n"
    "A case passes when |got - ref| <= 1e-5 + 1e-4 * |ref| for every element of every output.\n"
    "A reference must be finite (inf or NaN fails the case), unless case.txt says\n"
    "`expect_nonfinite 1`: then got must be exactly that value (the same infinity, NaN for NaN).\n"
    "Every .npy file of a case must be read, as an input or as a reference compared: a file the\n"
    "op (or its `kernel`) never reads fails the case (flash keeps no attention weights).\n"
    "\n"
    "case.txt: one `key value` per line ('#' starts a comment). `op` is one of softmax,\n"
    "masked_softmax, sdpa, mha, layernorm, ffn, block, cross_entropy, lm, train, rope,\n"
    "rmsnorm, swiglu, gqa, swa; the other "
    "keys and the .npy files each op needs are listed in tests/golden/README.md.\n"
    "\n"
    "Gradients: grad.NAME.npy is dloss/dNAME. For the op's output (y, out) it is the upstream\n"
    "gradient; for its inputs and parameters (x, w_q, gamma, h0.w1, wte, ...) a reference. A case\n"
    "with any grad. file also runs the op's backward and checks every grad. reference, with the\n"
    "same tolerance; a grad. file naming nothing of the op is an error.\n"
    "\n"
    "Exit codes: 0 all passed, 1 a case failed or could not be run, 2 usage error.\n";

constexpr std::uintmax_t kMaxCaseBytes = 64 * 1024;  // a case.txt is a few lines

// A case that cannot be run (missing key or file, bad value): the message names the file.
struct CaseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// case.txt

class Case {
 public:
  explicit Case(fs::path dir) : dir_(std::move(dir)), file_(dir_ / "case.txt") {}

  const fs::path& dir() const { return dir_; }
  // NAME.npy in the case folder. Every name asked for is recorded: a file of the folder nobody
  // asked for was never compared (unread_file).
  fs::path file(std::string_view name) const {
    read_.emplace_back(name);
    return dir_ / (std::string(name) + ".npy");
  }
  // A file read another way (attn::load_lm reads a model folder's tensors by their names).
  void mark_read(std::string_view name) const { read_.emplace_back(name); }
  // The first .npy file of the folder (in name order) that nothing asked for, or empty.
  fs::path unread_file() const {
    std::vector<fs::path> unread;
    std::error_code ec;
    fs::directory_iterator it(dir_, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.extension() != ".npy") continue;
      if (std::find(read_.begin(), read_.end(), p.stem().string()) == read_.end()) {
        unread.push_back(p);
      }
    }
    if (ec) fail("cannot list the folder: " + ec.message());
    std::sort(unread.begin(), unread.end());
    return unread.empty() ? fs::path() : unread.front();
  }

  // Reads case.txt: a regular file (a link to /dev/zero never ends) of at most kMaxCaseBytes.
  // Fills op(). Throws CaseError.
  void parse() {
    std::error_code ec;
    const fs::file_status status = fs::status(file_, ec);
    if (ec) fail("cannot read the file: " + ec.message());
    if (!fs::is_regular_file(status)) fail("not a regular file");
    const std::uintmax_t size = fs::file_size(file_, ec);
    if (ec) fail("cannot read the file: " + ec.message());
    if (size > kMaxCaseBytes) {
      fail(fmt::format("the file holds {} bytes, more than the limit of {} for a case.txt", size,
                       kMaxCaseBytes));
    }
    std::ifstream in(file_, std::ios::binary);
    if (!in) fail("cannot read the file");
    std::string contents(static_cast<std::size_t>(size), '\0');
    in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (static_cast<std::uintmax_t>(in.gcount()) != size) fail("cannot read the file");
    parse_text(contents);
  }

  // The same on the text of a case.txt (attn-golden's fuzz target calls it directly).
  void parse_text(std::string_view contents) {
    try {
      for (attn::KeyValue& kv : attn::parse_key_values(contents)) {
        keys_.emplace(std::move(kv.key), std::move(kv.value));
      }
    } catch (const attn::KeyValueError& e) {
      fail(e.what());
    }
    op_ = text("op");
  }

  const std::string& op() const { return op_; }

  // Every key must be one the op uses: a typo ("n_head 4") is an error, not a default.
  void allow_keys(std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : keys_) {
      if (key == "op" || key == "expect_nonfinite") continue;  // every op takes these
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (const std::string_view a : allowed)
          list += (list.empty() ? "" : ", ") + std::string(a);
        fail(fmt::format("unknown key {} for op {} (expected: {})", key, op_,
                         list.empty() ? "none" : list));
      }
    }
  }

  const std::string& text(const std::string& key) const {
    const auto it = keys_.find(key);
    if (it == keys_.end()) fail("missing key " + key);
    return it->second;
  }
  // A size key, bounded like the chapters' flag for the same idea, so a 40-byte case.txt cannot
  // ask for gigabytes (n_layers 2^60): checked before anything is allocated.
  std::size_t positive(const std::string& key, std::size_t max) const {
    const std::string& v = text(key);
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n == 0 || n > max) {
      fail(fmt::format("key {} must be an integer from 1 to {}, got '{}'", key, max, v));
    }
    return n;
  }
  bool flag(const std::string& key) const {
    const std::string& v = text(key);
    if (v != "0" && v != "1") fail(fmt::format("key {} must be 0 or 1, got '{}'", key, v));
    return v == "1";
  }
  float eps(const std::string& key) const {
    const std::string& v = text(key);
    std::size_t used = 0;
    float x = 0.0f;
    try {
      x = std::stof(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || !std::isfinite(x) || x < 0.0f) {
      fail(fmt::format("key {} must be a number >= 0, got '{}'", key, v));
    }
    return x;
  }
  // A library parser (parse_activation, parse_norm) whose error is reported against case.txt.
  template <class Parse>
  auto parsed(const std::string& key, Parse parse_value) const {
    const std::string& v = text(key);
    try {
      return parse_value(v);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("key {}: {}", key, e.what()));
    }
  }

  bool has(const std::string& key) const { return keys_.count(key) != 0; }
  // A 0/1 key that may be left out.
  bool flag_or(const std::string& key, bool absent) const { return has(key) ? flag(key) : absent; }

  [[noreturn]] void fail(std::string_view what) const {
    throw CaseError(fmt::format("{}: {}", file_.string(), what));
  }

  // Gradients (chapter 08): the NAME of every grad.NAME.npy file in the folder, sorted. Any such
  // file makes the case a backward case. Throws CaseError when the folder cannot be listed.
  void scan_grads() {
    std::error_code ec;
    fs::directory_iterator it(dir_, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      constexpr std::string_view kPrefix = "grad.", kSuffix = ".npy";
      if (name.size() < kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
          !name.ends_with(kSuffix)) {
        continue;
      }
      grads_.push_back(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()));
    }
    if (ec)
      throw CaseError(fmt::format("{}: cannot list the folder: {}", dir_.string(), ec.message()));
    std::sort(grads_.begin(), grads_.end());
  }
  const std::vector<std::string>& grads() const { return grads_; }
  bool backward() const { return !grads_.empty(); }
  bool has_grad(std::string_view name) const {
    return std::find(grads_.begin(), grads_.end(), name) != grads_.end();
  }
  fs::path grad_file(std::string_view name) const { return file("grad." + std::string(name)); }

 private:
  fs::path dir_;
  fs::path file_;
  std::map<std::string, std::string> keys_;
  std::string op_;
  std::vector<std::string> grads_;
  mutable std::vector<std::string> read_;  // the names file() gave out, and mark_read's
};

// ---------------------------------------------------------------------------------------------
// Comparing one output with its reference.

struct Comparison {
  double max_abs = 0.0;
  double max_rel = 0.0;               // over elements with ref != 0
  std::string first_failure;          // empty: every element within tolerance
  std::vector<std::string> compared;  // the reference files compared, e.g. "y", "grad.x"
};

// A reference of any rank (a 0-d loss, a weight's gradient): a float array whose values fit in
// float32, like load_npy's (converting a larger double to float would be undefined).
attn::NpyArray load_reference(const Case& c, std::string_view name) {
  const fs::path path = c.file(name);
  attn::NpyArray a = attn::read_npy(path);
  if (a.descr != "<f4" && a.descr != "<f8") {
    throw CaseError(fmt::format("{}: expected a float array, got '{}'", path.string(), a.descr));
  }
  constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    if (std::isfinite(a.values[i]) && std::abs(a.values[i]) > kFloatMax) {
      throw CaseError(fmt::format("{}: value {} at flat index {} does not fit in float32",
                                  path.string(), a.values[i], i));
    }
  }
  return a;
}

// Folds the comparison of one output (`got`, of shape `shape`) with `name`.npy into `total`.
// A reference of another shape fails the case, naming it.
void compare_values(const Case& c, std::string_view name, std::span<const float> got,
                    std::span<const std::size_t> shape, Comparison& total) {
  const attn::NpyArray ref = load_reference(c, name);
  total.compared.emplace_back(name);
  if (!std::equal(shape.begin(), shape.end(), ref.shape.begin(), ref.shape.end())) {
    if (total.first_failure.empty()) {
      total.first_failure = fmt::format("{}: shape {}, reference {}", name, attn::shape_str(shape),
                                        attn::shape_str(ref.shape));
    }
    total.max_abs = total.max_rel = std::numeric_limits<double>::infinity();
    return;
  }
  // A non-finite reference would make the tolerance infinite (anything passes) or NaN. It fails
  // the case, unless the case says `expect_nonfinite 1`: then got must be the very same value
  // (the same infinity, NaN where the reference has NaN).
  const bool nonfinite_expected = c.flag_or("expect_nonfinite", false);
  for (std::size_t i = 0; i < ref.values.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double r = static_cast<double>(static_cast<float>(ref.values[i]));  // a float32 value
    if (!std::isfinite(r)) {
      const bool same = std::isnan(r) ? std::isnan(g) : g == r;
      if (!same || !nonfinite_expected) {
        if (total.first_failure.empty()) {
          total.first_failure =
              nonfinite_expected
                  ? fmt::format("{}: flat index {}: got {:.7g}, expected exactly {}", name, i, g, r)
                  : fmt::format(
                        "{}: flat index {}: the reference is {}; a reference must be "
                        "finite unless the case says expect_nonfinite 1",
                        name, i, r);
        }
        total.max_abs = total.max_rel = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    const double diff = std::abs(g - r);
    const bool ok = diff <= kAtol + kRtol * std::abs(r);  // NaN or inf in got is never ok
    total.max_abs = std::isnan(diff) ? diff : std::max(total.max_abs, diff);
    if (r != 0.0 && std::isfinite(r)) {
      total.max_rel = std::isnan(diff) ? diff : std::max(total.max_rel, diff / std::abs(r));
    }
    if (!ok && total.first_failure.empty()) {
      total.first_failure =
          shape.empty()
              ? fmt::format("{}: got {:.7g}, expected {:.7g}", name, g, r)
              : fmt::format("{}: flat index {}: got {:.7g}, expected {:.7g}", name, i, g, r);
    }
    if (std::isnan(diff)) return;
  }
}

template <std::size_t N>
void compare(const Case& c, std::string_view name, const attn::Tensor<N>& got, Comparison& total) {
  compare_values(c, name, std::span<const float>(got.data(), got.size()), got.shape(), total);
}

// A 0-d output (the loss): its reference has shape ().
void compare_scalar(const Case& c, std::string_view name, double got, Comparison& total) {
  const float value = static_cast<float>(got);
  compare_values(c, name, std::span<const float>(&value, 1), {}, total);
}

// The rank of an input whose rank the op leaves open (softmax of a matrix or of a 4-D tensor).
std::size_t rank_of(const Case& c, std::string_view name) {
  return attn::read_npy(c.file(name)).shape.size();
}

[[noreturn]] void bad_rank(const Case& c, std::string_view name, std::string_view allowed) {
  const attn::NpyArray a = attn::read_npy(c.file(name));
  throw CaseError(fmt::format("{}: op {} takes a {} array, got shape {}", c.file(name).string(),
                              c.op(), allowed, attn::shape_str(a.shape)));
}

// A braced list is evaluated left to right, so the first missing file in this order is reported.
attn::MhaWeights load_mha(const Case& c) {
  return {attn::load_npy<2>(c.file("w_q")), attn::load_npy<2>(c.file("w_k")),
          attn::load_npy<2>(c.file("w_v")), attn::load_npy<2>(c.file("w_o"))};
}

attn::FfnWeights load_ffn(const Case& c) {
  return {attn::load_npy<2>(c.file("w1")), attn::load_npy<1>(c.file("b1")),
          attn::load_npy<2>(c.file("w2")), attn::load_npy<1>(c.file("b2"))};
}

// Integer ids of rank `rank` (cross-entropy targets (N,), lm targets (B, T)).
std::vector<int> load_ids(const Case& c, std::string_view name, std::size_t rank,
                          std::vector<std::size_t>& shape) {
  const fs::path path = c.file(name);
  const attn::NpyArray a = attn::read_npy(path);
  if (a.descr != "<i8" && a.descr != "<i4") {
    throw CaseError(
        fmt::format("{}: expected an integer array of ids, got '{}'", path.string(), a.descr));
  }
  if (a.shape.size() != rank) {
    throw CaseError(fmt::format("{}: expected a rank-{} array of ids, got shape {}", path.string(),
                                rank, attn::shape_str(a.shape)));
  }
  std::vector<int> ids(a.values.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const double v = a.values[i];
    if (v < 0.0 || v > static_cast<double>(std::numeric_limits<int>::max())) {
      throw CaseError(
          fmt::format("{}: id {} at flat index {} is negative or too large", path.string(), v, i));
    }
    ids[i] = static_cast<int>(v);
  }
  shape = a.shape;
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Gradients (chapter 08). grad.NAME.npy is dloss/dNAME: for the op's output it is the upstream
// gradient (an input of the case), for its inputs and parameters a reference to compare with.

// What an op accepts: `params` the float inputs and parameters that have a gradient, `upstream`
// the output whose gradient comes in (empty when the op ends in a loss), and the names that are
// in the case but have no gradient, with the reason. Any other grad. file is an error, named.
struct GradNames {
  std::vector<std::string> params;
  std::string upstream;
  std::vector<std::pair<std::string, std::string>> no_grad;  // name, why
};

void check_grad_names(const Case& c, const GradNames& names) {
  for (const std::string& g : c.grads()) {
    if (g == names.upstream) continue;
    if (std::find(names.params.begin(), names.params.end(), g) != names.params.end()) continue;
    const auto why = std::find_if(names.no_grad.begin(), names.no_grad.end(),
                                  [&](const auto& p) { return p.first == g; });
    if (why != names.no_grad.end()) {
      throw CaseError(fmt::format("{}: {}", c.grad_file(g).string(), why->second));
    }
    std::string list;
    for (const std::string& p : names.params) list += (list.empty() ? "" : ", ") + p;
    throw CaseError(
        fmt::format("{}: names no input, parameter or output of op {} (gradients of: {}{})",
                    c.grad_file(g).string(), c.op(), list,
                    names.upstream.empty() ? "" : "; upstream: " + names.upstream));
  }
}

// The upstream gradient dloss/d`name`: required in a backward case, shaped like the output.
template <std::size_t N>
attn::Tensor<N> load_upstream(const Case& c, std::string_view name,
                              const typename attn::Tensor<N>::shape_type& shape) {
  const fs::path path = c.grad_file(name);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    throw CaseError(
        fmt::format("{}: missing: a case with grad. files needs the upstream gradient "
                    "dloss/d{}",
                    path.string(), name));
  }
  const attn::NpyArray a = attn::read_npy(path);
  if (!std::equal(shape.begin(), shape.end(), a.shape.begin(), a.shape.end())) {
    throw CaseError(fmt::format("{}: shape {}, expected {} (the shape of {})", path.string(),
                                attn::shape_str(a.shape), attn::shape_str(shape), name));
  }
  return attn::load_npy<N>(path);
}

// Compares the gradient of `name` with grad.`name`.npy when the case has that reference.
template <std::size_t N>
void compare_grad(const Case& c, std::string_view name, const attn::Tensor<N>& got,
                  Comparison& cmp) {
  if (c.has_grad(name)) compare<N>(c, "grad." + std::string(name), got, cmp);
}

const GradNames kMhaNames{{"x", "w_q", "w_k", "w_v", "w_o"},
                          "out",
                          {{"weights",
                            "the attention weights have no upstream gradient (only "
                            "out has: grad.out.npy)"}}};
const char* const kIdsWhy = "integer ids have no gradient";

void compare_mha_grads(const Case& c, const attn::MhaWeights& g, Comparison& cmp,
                       std::string_view prefix = "") {
  const std::string p(prefix);
  compare_grad<2>(c, p + "w_q", g.w_q, cmp);
  compare_grad<2>(c, p + "w_k", g.w_k, cmp);
  compare_grad<2>(c, p + "w_v", g.w_v, cmp);
  compare_grad<2>(c, p + "w_o", g.w_o, cmp);
}

void compare_ffn_grads(const Case& c, const attn::FfnWeights& g, Comparison& cmp) {
  compare_grad<2>(c, "w1", g.w1, cmp);
  compare_grad<1>(c, "b1", g.b1, cmp);
  compare_grad<2>(c, "w2", g.w2, cmp);
  compare_grad<1>(c, "b2", g.b2, cmp);
}

attn::MhaWeights mha_zeros_like(const attn::MhaWeights& w) {
  return {xt::zeros_like(w.w_q), xt::zeros_like(w.w_k), xt::zeros_like(w.w_v),
          xt::zeros_like(w.w_o)};
}

attn::FfnWeights ffn_zeros_like(const attn::FfnWeights& w) {
  return {xt::zeros_like(w.w1), xt::zeros_like(w.b1), xt::zeros_like(w.w2), xt::zeros_like(w.b2)};
}

// ---------------------------------------------------------------------------------------------
// The ops: each reads its keys and inputs, runs the library, compares every output; a backward
// case also runs the op's backward on the upstream gradient and compares every grad. reference.

template <std::size_t N>
void run_softmax(const Case& c, Comparison& cmp) {
  const attn::Tensor<N> x = attn::load_npy<N>(c.file("x"));
  const attn::Tensor<N> y = attn::softmax<N>(x);
  compare<N>(c, "y", y, cmp);
  if (!c.backward()) return;
  const attn::Tensor<N> dy = load_upstream<N>(c, "y", y.shape());
  compare_grad<N>(c, "x", attn::softmax_backward<N>(y, dy), cmp);
}

template <std::size_t N>
void run_masked_softmax(const Case& c, bool causal, Comparison& cmp) {
  const attn::Tensor<N> x = attn::load_npy<N>(c.file("x"));  // (..., T, T)
  const std::size_t T = x.shape()[N - 1];
  // causal 0: every key allowed, so the result is a plain softmax (through the masked path).
  const attn::Mask allowed = causal ? attn::causal_mask(T) : attn::Mask(xt::ones<bool>({T, T}));
  const attn::Tensor<N> y = attn::masked_softmax<N>(x, allowed);
  compare<N>(c, "y", y, cmp);
  if (!c.backward()) return;
  const attn::Tensor<N> dy = load_upstream<N>(c, "y", y.shape());
  compare_grad<N>(c, "x", attn::masked_softmax_backward<N>(y, dy), cmp);
}

// The ops with a reference and a fast kernel (layernorm; sdpa and mha: fold_kernels) compare both
// with the same fixture: `ref` and `fast` were filled separately and are folded into `cmp` here.
// The names of the files compared are the reference's; a failure says which kernel missed
// ("reference: ", "fast: " or "both kernels: " before the first mismatch).
void fold_reference_and_fast(const Comparison& ref, const Comparison& fast, Comparison& cmp) {
  cmp.max_abs = std::max({cmp.max_abs, ref.max_abs, fast.max_abs});
  cmp.max_rel = std::max({cmp.max_rel, ref.max_rel, fast.max_rel});
  cmp.compared.insert(cmp.compared.end(), ref.compared.begin(), ref.compared.end());
  if (!cmp.first_failure.empty()) return;
  if (!ref.first_failure.empty()) {
    cmp.first_failure =
        (fast.first_failure.empty() ? "reference: " : "both kernels: ") + ref.first_failure;
  } else if (!fast.first_failure.empty()) {
    cmp.first_failure = "fast: " + fast.first_failure;
  }
}

template <std::size_t N>
void run_layernorm(const Case& c, float eps, Comparison& cmp) {
  const attn::Tensor<N> x = attn::load_npy<N>(c.file("x"));  // (..., C)
  const attn::Vector gamma = attn::load_npy<1>(c.file("gamma"));
  const attn::Vector beta = attn::load_npy<1>(c.file("beta"));
  Comparison ref, fast;
  if (!c.backward()) {
    compare<N>(c, "y", attn::layer_norm<N>(x, gamma, beta, eps), ref);
    compare<N>(c, "y", attn::fast::layer_norm<N>(x, gamma, beta, eps), fast);
    fold_reference_and_fast(ref, fast, cmp);
    return;
  }
  // The training path: the forward keeps mean and rstd, the backward uses them.
  attn::Tensor<N> dy;
  {  // the reference (attn::layer_norm, attn::layer_norm_backward)
    attn::LayerNormCache cache;
    const attn::Tensor<N> y = attn::layer_norm<N>(x, gamma, beta, eps, cache);
    compare<N>(c, "y", y, ref);
    dy = load_upstream<N>(c, "y", y.shape());
    attn::Tensor<N> dx;
    attn::Vector dgamma = xt::zeros_like(gamma), dbeta = xt::zeros_like(beta);
    attn::layer_norm_backward<N>(dy, x, gamma, cache, dx, dgamma, dbeta);
    compare_grad<N>(c, "x", dx, ref);
    compare_grad<1>(c, "gamma", dgamma, ref);
    compare_grad<1>(c, "beta", dbeta, ref);
  }
  {  // the fast kernels (attn::fast::), as the model's training step calls them
    attn::LayerNormCache cache;
    attn::Tensor<N> y, dx;
    attn::fast::layer_norm<N>(x, gamma, beta, eps, cache, y);
    compare<N>(c, "y", y, fast);
    attn::Vector dgamma = xt::zeros_like(gamma), dbeta = xt::zeros_like(beta);
    attn::fast::layer_norm_backward<N>(dy, x, gamma, cache, dx, dgamma, dbeta);
    compare_grad<N>(c, "x", dx, fast);
    compare_grad<1>(c, "gamma", dgamma, fast);
    compare_grad<1>(c, "beta", dbeta, fast);
  }
  fold_reference_and_fast(ref, fast, cmp);
}

// The attention kernels a `sdpa` or `mha` case runs: the one its `kernel` key names, or every
// one (the reference attn::, the fast path attn::fast:: with its weights, and the flash kernel,
// which keeps no weights: its `weights` are not compared).
enum class Kernel { reference, fast, flash };
constexpr std::array<std::pair<Kernel, std::string_view>, 3> kKernels{
    {{Kernel::reference, "reference"}, {Kernel::fast, "fast"}, {Kernel::flash, "flash"}}};

std::vector<Kernel> kernels_of(const Case& c) {
  std::vector<Kernel> all;
  for (const auto& [k, name] : kKernels) all.push_back(k);
  if (!c.has("kernel")) return all;
  const std::string& v = c.text("kernel");
  for (const auto& [k, name] : kKernels)
    if (v == name) return {k};
  c.fail(fmt::format("key kernel must be reference, fast or flash, got '{}'", v));
}

std::string_view kernel_name(Kernel k) { return kKernels[static_cast<std::size_t>(k)].second; }

// Folds the comparisons of the kernels that ran into `cmp`. The names of the files compared are
// the union; the first failure is prefixed by the kernel(s) that missed it: "flash: ",
// "reference and fast: ", or "every kernel: " when all of several kernels missed.
void fold_kernels(const std::vector<std::pair<Kernel, Comparison>>& runs, Comparison& cmp) {
  std::vector<std::string_view> failed;
  const std::string* first = nullptr;
  for (const auto& [k, r] : runs) {
    cmp.max_abs = std::max(cmp.max_abs, r.max_abs);
    cmp.max_rel = std::max(cmp.max_rel, r.max_rel);
    for (const std::string& name : r.compared)
      if (std::find(cmp.compared.begin(), cmp.compared.end(), name) == cmp.compared.end())
        cmp.compared.push_back(name);
    if (!r.first_failure.empty()) {
      failed.push_back(kernel_name(k));
      if (first == nullptr) first = &r.first_failure;
    }
  }
  if (!cmp.first_failure.empty() || failed.empty()) return;
  std::string who;
  if (failed.size() == runs.size() && runs.size() > 1) {
    who = "every kernel";
  } else {
    for (std::size_t i = 0; i < failed.size(); ++i)
      who += std::string(i == 0 ? "" : (i + 1 == failed.size() ? " and " : ", ")) +
             std::string(failed[i]);
  }
  cmp.first_failure = who + ": " + *first;
}

void run_sdpa(const Case& c, Comparison& cmp) {
  const bool causal = c.flag("causal");
  const std::vector<Kernel> kernels = kernels_of(c);
  const attn::Tensor<4> q = attn::load_npy<4>(c.file("q"));  // (B, H, T, hs)
  const attn::Tensor<4> k = attn::load_npy<4>(c.file("k"));
  const attn::Tensor<4> v = attn::load_npy<4>(c.file("v"));
  std::vector<std::pair<Kernel, Comparison>> runs;
  for (const Kernel kernel : kernels) {
    Comparison r;
    if (kernel == Kernel::flash) {
      const attn::fast::FlashResult f = attn::fast::flash_attention(q, k, v, causal);
      compare<4>(c, "out", f.out, r);  // (B, H, T, hs)
      if (c.backward()) {
        const attn::Tensor<4> dout = load_upstream<4>(c, "out", f.out.shape());
        const attn::AttentionGrads g =
            attn::fast::flash_attention_backward(dout, q, k, v, f.out, f.lse, causal);
        compare_grad<4>(c, "q", g.dq, r);
        compare_grad<4>(c, "k", g.dk, r);
        compare_grad<4>(c, "v", g.dv, r);
      }
    } else {
      const bool fast = kernel == Kernel::fast;
      const attn::AttentionResult f =
          fast ? attn::fast::scaled_dot_product_attention(q, k, v, causal, /*need_weights=*/true)
               : attn::scaled_dot_product_attention(q, k, v, causal, /*need_weights=*/true);
      compare<4>(c, "out", f.out, r);          // (B, H, T, hs)
      compare<4>(c, "weights", f.weights, r);  // (B, H, T, T)
      if (c.backward()) {
        const attn::Tensor<4> dout = load_upstream<4>(c, "out", f.out.shape());
        const attn::AttentionGrads g =
            fast ? attn::fast::scaled_dot_product_attention_backward(dout, q, k, v, f.weights,
                                                                     causal)
                 : attn::scaled_dot_product_attention_backward(dout, q, k, v, f.weights, causal);
        compare_grad<4>(c, "q", g.dq, r);
        compare_grad<4>(c, "k", g.dk, r);
        compare_grad<4>(c, "v", g.dv, r);
      }
    }
    runs.emplace_back(kernel, std::move(r));
  }
  fold_kernels(runs, cmp);
}

void run_mha(const Case& c, Comparison& cmp) {
  const std::size_t H = c.positive("n_heads", kMaxHeads);
  const bool causal = c.flag("causal");
  const std::vector<Kernel> kernels = kernels_of(c);
  // Named variables: the files are read (and a missing one reported) in a fixed order.
  const attn::Tensor<3> x = attn::load_npy<3>(c.file("x"));  // (B, T, C)
  const attn::MhaWeights w = load_mha(c);
  std::vector<std::pair<Kernel, Comparison>> runs;
  for (const Kernel kernel : kernels) {
    Comparison r;
    if (!c.backward()) {
      if (kernel == Kernel::flash) {
        compare<3>(c, "out", attn::fast::mha_flash_forward(x, w, H, causal), r);
      } else {
        const attn::MhaResult f = kernel == Kernel::fast
                                      ? attn::fast::mha_forward(x, w, H, causal, true)
                                      : attn::mha_forward(x, w, H, causal, /*need_weights=*/true);
        compare<3>(c, "out", f.out, r);          // (B, T, C)
        compare<4>(c, "weights", f.weights, r);  // (B, H, T, T)
      }
      runs.emplace_back(kernel, std::move(r));
      continue;
    }
    // The training path: the forward fills a cache, the backward reads it.
    attn::Tensor<3> dx;
    attn::MhaWeights g = mha_zeros_like(w);
    if (kernel == Kernel::reference) {  // attn::mha_forward, attn::mha_backward
      attn::MhaCache cache;
      const attn::Tensor<3> out = attn::mha_forward(x, w, H, causal, cache);
      compare<3>(c, "out", out, r);
      compare<4>(c, "weights", cache.weights, r);
      attn::mha_backward(load_upstream<3>(c, "out", out.shape()), cache, w, H, causal, dx, g);
    } else if (kernel == Kernel::fast) {  // as the model's training step calls them
      attn::fast::MhaCache cache;
      attn::Tensor<3> out;
      attn::fast::mha_forward(x, w, H, causal, cache, out);
      compare<3>(c, "out", out, r);
      compare<4>(c, "weights", cache.weights, r);
      attn::fast::mha_backward(load_upstream<3>(c, "out", out.shape()), cache, w, H, causal, dx, g);
    } else {  // the flash kernel: no weights kept
      attn::fast::FlashMhaCache cache;
      const attn::Tensor<3> out = attn::fast::mha_flash_forward(x, w, H, causal, cache);
      compare<3>(c, "out", out, r);
      attn::fast::mha_flash_backward(load_upstream<3>(c, "out", out.shape()), cache, w, H, causal,
                                     dx, g);
    }
    compare_grad<3>(c, "x", dx, r);
    compare_mha_grads(c, g, r);
    runs.emplace_back(kernel, std::move(r));
  }
  fold_kernels(runs, cmp);
}

void run_ffn(const Case& c, Comparison& cmp) {
  const attn::Activation a = c.parsed("activation", attn::parse_activation);
  const attn::Tensor<3> x = attn::load_npy<3>(c.file("x"));  // (B, T, C)
  const attn::FfnWeights w = load_ffn(c);
  // Both sides must match the fixture: the reference (attn::ffn_*, what the pages teach) and the
  // fast kernels the model runs (attn::fast::ffn_*). A failure names the side.
  for (const bool fast : {false, true}) {
    const bool failed_before = !cmp.first_failure.empty();
    if (!c.backward()) {
      compare<3>(c, "y", fast ? attn::fast::ffn_forward(x, w, a) : attn::ffn_forward(x, w, a), cmp);
    } else {
      attn::FfnCache cache;
      const attn::Tensor<3> y =
          fast ? attn::fast::ffn_forward(x, w, a, cache) : attn::ffn_forward(x, w, a, cache);
      compare<3>(c, "y", y, cmp);
      const attn::Tensor<3> dy = load_upstream<3>(c, "y", y.shape());
      attn::Tensor<3> dx;
      attn::FfnWeights g = ffn_zeros_like(w);
      if (fast) {
        attn::fast::ffn_backward(dy, cache, w, a, dx, g);
      } else {
        attn::ffn_backward(dy, cache, w, a, dx, g);
      }
      compare_grad<3>(c, "x", dx, cmp);
      compare_ffn_grads(c, g, cmp);
    }
    if (!failed_before && !cmp.first_failure.empty()) {
      cmp.first_failure =
          (fast ? "attn::fast::ffn: " : "attn::ffn (reference): ") + cmp.first_failure;
    }
  }
}

void run_block(const Case& c, Comparison& cmp) {
  const attn::Tensor<3> x = attn::load_npy<3>(c.file("x"));  // (B, T, C)
  const std::size_t C = x.shape()[2];
  attn::ModelChoices m;  // a lone block of width C
  m.n_embd = C;
  m.n_heads = c.positive("n_heads", kMaxHeads);
  m.activation = c.parsed("activation", attn::parse_activation);
  m.ablations.layer_norm = c.flag_or("layer_norm", true);
  attn::BlockConfig config;
  try {
    config.spec = attn::resolve_spec(m);
  } catch (const attn::SpecError& e) {
    c.fail(fmt::format("key {}", e.what()));
  }
  config.causal = c.flag("causal");
  config.norm = c.parsed("norm", attn::parse_norm);
  config.eps = c.eps("eps");
  attn::BlockWeights w;
  w.attn = load_mha(c);
  if (config.spec.ablations.layer_norm) {
    w.ln1_gamma = attn::load_npy<1>(c.file("ln1_gamma"));
    w.ln1_beta = attn::load_npy<1>(c.file("ln1_beta"));
    w.ln2_gamma = attn::load_npy<1>(c.file("ln2_gamma"));
    w.ln2_beta = attn::load_npy<1>(c.file("ln2_beta"));
  } else {
    // layer_norm 0: the case has no LayerNorm weights; the block ignores these.
    w.ln1_gamma = w.ln2_gamma = xt::ones<float>({C});
    w.ln1_beta = w.ln2_beta = xt::zeros<float>({C});
  }
  w.ffn = load_ffn(c);
  if (!c.backward()) {
    compare<3>(c, "y", attn::block_forward(x, w, config).out, cmp);
    return;
  }
  attn::BlockCache cache;
  const attn::Tensor<3> y = attn::block_forward(x, w, config, cache);
  compare<3>(c, "y", y, cmp);
  const attn::Tensor<3> dy = load_upstream<3>(c, "y", y.shape());
  attn::Tensor<3> dx;
  attn::BlockWeights g = attn::block_zeros_like(w);
  attn::block_backward(dy, cache, w, config, dx, g);
  compare_grad<3>(c, "x", dx, cmp);
  compare_mha_grads(c, g.attn, cmp);
  compare_ffn_grads(c, g.ffn, cmp);
  if (config.spec.ablations.layer_norm) {
    compare_grad<1>(c, "ln1_gamma", g.ln1_gamma, cmp);
    compare_grad<1>(c, "ln1_beta", g.ln1_beta, cmp);
    compare_grad<1>(c, "ln2_gamma", g.ln2_gamma, cmp);
    compare_grad<1>(c, "ln2_beta", g.ln2_beta, cmp);
  }
}

void run_cross_entropy(const Case& c, Comparison& cmp) {
  const attn::Matrix logits = attn::load_npy<2>(c.file("logits"));  // (N, V)
  std::vector<std::size_t> shape;
  const std::vector<int> targets = load_ids(c, "targets", 1, shape);  // (N,)
  if (shape[0] != logits.shape()[0]) {
    throw CaseError(fmt::format("{}: {} targets for {} rows of logits", c.file("targets").string(),
                                shape[0], logits.shape()[0]));
  }
  // Both sides must match the fixture: the reference attn::cross_entropy_with_grad and the
  // training step's attn::fast:: version. A failure names the side.
  for (const bool fast : {false, true}) {
    const bool failed_before = !cmp.first_failure.empty();
    const attn::LossGrad r = fast ? attn::fast::cross_entropy_with_grad(logits, targets)
                                  : attn::cross_entropy_with_grad(logits, targets);
    compare_scalar(c, "loss", r.loss, cmp);
    compare_grad<2>(c, "logits", r.grad, cmp);
    if (!failed_before && !cmp.first_failure.empty()) {
      cmp.first_failure =
          (fast ? "attn::fast::cross_entropy: " : "attn::cross_entropy (reference): ") +
          cmp.first_failure;
    }
  }
}

void run_lm(const Case& c, Comparison& cmp) {
  const std::size_t n_layers = c.positive("n_layers", kMaxLayers);
  const std::size_t n_heads = c.positive("n_heads", kMaxHeads);
  // The case folder is a saved model (load_lm's layout) plus tokens.npy and logits.npy, and for
  // the backward targets.npy, loss.npy and grad.<weight>.npy.
  attn::ModelSpec config;
  // Not const: lm_parameters, which names the tensors load_lm read, takes it by reference.
  attn::LmWeights w = attn::load_lm(c.dir(), n_layers, n_heads, config);
  for (const attn::NamedTensor& t : attn::lm_parameters(w)) c.mark_read(t.name);
  const xt::xtensor<int, 2> tokens = attn::load_npy_tokens(c.file("tokens"));  // (B, T)
  compare<3>(c, "logits", attn::lm_forward(tokens, w, config), cmp);           // (B, T, V)
  std::error_code ec;
  const bool has_targets = fs::exists(c.file("targets"), ec);
  if (!has_targets) {
    if (c.backward()) {
      throw CaseError(fmt::format("{}: missing: lm's backward starts from the loss of targets.npy",
                                  c.file("targets").string()));
    }
    return;
  }
  const xt::xtensor<int, 2> targets = attn::load_npy_tokens(c.file("targets"));  // (B, T)
  if (targets.shape() != tokens.shape()) {
    throw CaseError(fmt::format("{}: shape {}, expected {} like tokens.npy",
                                c.file("targets").string(), attn::shape_str(targets.shape()),
                                attn::shape_str(tokens.shape())));
  }
  attn::LmWeights grads = attn::lm_zeros_like(w);
  attn::LmCache cache;
  const double loss = attn::lm_forward_backward(tokens, targets, w, config, grads, cache);
  compare_scalar(c, "loss", loss, cmp);
  for (const attn::NamedTensor& g : attn::lm_parameters(grads)) {
    if (!c.has_grad(g.name)) continue;
    // The gradient has the shape of its weight, as read from the weight's own file.
    const attn::NpyArray weight = attn::read_npy(c.file(g.name));
    compare_values(c, "grad." + g.name, g.values, weight.shape, cmp);
  }
}

// Chapter 09's training step in lockstep with torch.optim.AdamW: the case folder is an `lm` model
// (the initial weights) plus batches.npy (steps, B, T+1) int64; step s trains on inputs
// batches[s, :, :T] and targets batches[s, :, 1:]. losses.npy (steps,) holds each step's loss
// before its update.
void run_train(const Case& c, Comparison& cmp) {
  attn::TrainConfig config;
  const std::size_t n_layers = c.positive("n_layers", kMaxLayers);
  const std::size_t n_heads = c.positive("n_heads", kMaxHeads);
  config.schedule.lr = c.eps("lr");
  config.adam.beta1 = c.eps("beta1");
  config.adam.beta2 = c.eps("beta2");
  config.adam.eps = c.eps("adam_eps");
  config.adam.weight_decay = c.eps("weight_decay");
  config.grad_clip = c.eps("grad_clip");
  if (config.schedule.lr <= 0.0f) c.fail("key lr must be > 0");
  if (config.adam.beta1 >= 1.0f || config.adam.beta2 >= 1.0f) c.fail("beta1 and beta2 must be < 1");
  attn::TrainState s;
  s.weights = attn::load_lm(c.dir(), n_layers, n_heads, config.model);
  for (const attn::NamedTensor& t : attn::lm_parameters(s.weights)) c.mark_read(t.name);
  s.grads = attn::lm_zeros_like(s.weights);
  s.adam_m = attn::lm_zeros_like(s.weights);
  s.adam_v = attn::lm_zeros_like(s.weights);
  std::vector<std::size_t> shape;
  const std::vector<int> batches = load_ids(c, "batches", 3, shape);  // (steps, B, T + 1)
  const std::size_t steps = shape[0], B = shape[1];
  if (steps == 0 || B == 0 || steps > kMaxTrainSteps || B > kMaxBatch || shape[2] < 2 ||
      shape[2] - 1 > config.model.block_size) {
    throw CaseError(
        fmt::format("{}: shape {}, expected (steps, B, T + 1) with 1 <= steps <= {}, "
                    "1 <= B <= {} and 1 <= T <= block_size {}",
                    c.file("batches").string(), attn::shape_str(shape), kMaxTrainSteps, kMaxBatch,
                    config.model.block_size));
  }
  const std::size_t T = shape[2] - 1;
  xt::xtensor<int, 2> inputs({B, T}), targets({B, T});
  std::vector<float> losses;
  for (std::size_t step = 0; step < steps; ++step) {
    for (std::size_t b = 0; b < B; ++b) {
      const int* row = batches.data() + (step * B + b) * (T + 1);  // (T + 1,)
      for (std::size_t t = 0; t < T; ++t) {
        if (static_cast<std::size_t>(std::max(row[t], row[t + 1])) >= config.model.vocab_size) {
          throw CaseError(fmt::format("{}: a token id at step {}, row {} is >= V = {}",
                                      c.file("batches").string(), step, b,
                                      config.model.vocab_size));
        }
        inputs(b, t) = row[t];
        targets(b, t) = row[t + 1];
      }
    }
    losses.push_back(static_cast<float>(attn::train_step_on(s, config, inputs, targets).loss));
  }
  const std::array<std::size_t, 1> loss_shape{steps};
  compare_values(c, "losses", losses, loss_shape, cmp);
}

// ---------------------------------------------------------------------------------------------
// Chapter 11's ops (the reference, in float): rope, rmsnorm, swiglu, gqa, swa. Their keys have
// defaults where the library has one (theta 10000, offset 0, rope 0, window 0 for gqa) and are
// checked here, against case.txt, before the library sees them.

constexpr std::size_t kMaxWindow = 1 << 20;  // a window of positions (above any T of a case)
constexpr std::size_t kMaxOffset = 1 << 24;  // a first position: exact in float and double

// A count that may be 0, with a default when the key is absent (offset, gqa's window).
std::size_t count_or(const Case& c, const std::string& key, std::size_t absent, std::size_t max) {
  if (!c.has(key)) return absent;
  const std::string& v = c.text(key);
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n > max) {
    c.fail(fmt::format("key {} must be an integer from 0 to {}, got '{}'", key, max, v));
  }
  return n;
}

// RoPE's base: a finite number > 0, 10000 when absent.
double theta_or_default(const Case& c) {
  if (!c.has("theta")) return 10000.0;
  const std::string& v = c.text("theta");
  std::size_t used = 0;
  double x = 0.0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || !std::isfinite(x) || x <= 0.0) {
    c.fail(fmt::format("key theta must be a number > 0 (RoPE's base, e.g. 10000), got '{}'", v));
  }
  return x;
}

template <std::size_t N>
void run_rmsnorm(const Case& c, float eps, Comparison& cmp) {
  const attn::Tensor<N> x = attn::load_npy<N>(c.file("x"));  // (..., C)
  const attn::Vector gamma = attn::load_npy<1>(c.file("gamma"));
  attn::RmsNormCache<float> cache;
  const attn::Tensor<N> y = attn::rms_norm<float, N>(x, gamma, eps, cache);
  compare<N>(c, "y", y, cmp);
  if (!c.backward()) return;
  const attn::Tensor<N> dy = load_upstream<N>(c, "y", y.shape());
  const attn::RmsNormGrads<float, N> g = attn::rms_norm_backward<float, N>(dy, x, gamma, cache);
  compare_grad<N>(c, "x", g.dx, cmp);
  compare_grad<1>(c, "gamma", g.dgamma, cmp);
}

void run_rope(const Case& c, Comparison& cmp) {
  const double theta = theta_or_default(c);
  const std::size_t offset = count_or(c, "offset", 0, kMaxOffset);
  const attn::Tensor<4> x = attn::load_npy<4>(c.file("x"));  // (B, H, T, hs)
  const attn::Tensor<4> y = attn::rope<float>(x, theta, offset);
  compare<4>(c, "y", y, cmp);
  if (!c.backward()) return;
  const attn::Tensor<4> dy = load_upstream<4>(c, "y", y.shape());
  compare_grad<4>(c, "x", attn::rope_backward<float>(dy, theta, offset), cmp);
}

void run_swiglu(const Case& c, Comparison& cmp) {
  const attn::Tensor<3> x = attn::load_npy<3>(c.file("x"));  // (B, T, C)
  const attn::Matrix w_gate = attn::load_npy<2>(c.file("w_gate"));
  const attn::Matrix w_up = attn::load_npy<2>(c.file("w_up"));
  const attn::Matrix w_down = attn::load_npy<2>(c.file("w_down"));
  const attn::SwigluWeights<float> w{w_gate, w_up, w_down};
  attn::SwigluCache<float> cache;
  const attn::Tensor<3> y = attn::swiglu_forward<float>(x, w, cache);
  compare<3>(c, "y", y, cmp);
  if (!c.backward()) return;
  const attn::Tensor<3> dy = load_upstream<3>(c, "y", y.shape());
  attn::Tensor<3> dx;
  attn::SwigluWeights<float> g{xt::zeros_like(w.w_gate), xt::zeros_like(w.w_up),
                               xt::zeros_like(w.w_down)};
  attn::swiglu_backward<float>(dy, cache, w, dx, g);
  compare_grad<3>(c, "x", dx, cmp);
  compare_grad<2>(c, "w_gate", g.w_gate, cmp);
  compare_grad<2>(c, "w_up", g.w_up, cmp);
  compare_grad<2>(c, "w_down", g.w_down, cmp);
}

void run_gqa(const Case& c, Comparison& cmp) {
  attn::GqaConfig config;
  config.n_heads = c.positive("n_heads", kMaxHeads);
  config.n_kv_heads = c.positive("n_kv_heads", kMaxHeads);
  if (config.n_heads % config.n_kv_heads != 0) {
    c.fail(fmt::format("key n_kv_heads = {} does not divide n_heads = {}", config.n_kv_heads,
                       config.n_heads));
  }
  config.causal = c.flag("causal");
  config.rope = c.flag_or("rope", false);
  config.theta = theta_or_default(c);
  // window 0 (or no window key): none.
  if (const std::size_t W = count_or(c, "window", 0, kMaxWindow); W != 0) config.window = W;
  if (config.window && !config.causal) {
    c.fail(fmt::format("key window {} needs causal 1 (a sliding window looks back only)",
                       *config.window));
  }
  const attn::Tensor<3> x = attn::load_npy<3>(c.file("x"));  // (B, T, C)
  const attn::Matrix w_q = attn::load_npy<2>(c.file("w_q"));
  const attn::Matrix w_k = attn::load_npy<2>(c.file("w_k"));
  const attn::Matrix w_v = attn::load_npy<2>(c.file("w_v"));
  const attn::Matrix w_o = attn::load_npy<2>(c.file("w_o"));
  const attn::GqaWeights<float> w{w_q, w_k, w_v, w_o};
  attn::GqaCache<float> cache;
  const attn::Tensor<3> out = attn::gqa_forward<float>(x, w, config, cache);
  compare<3>(c, "out", out, cmp);                // (B, T, C)
  compare<4>(c, "weights", cache.weights, cmp);  // (B, H, T, T)
  if (!c.backward()) return;
  const attn::Tensor<3> dout = load_upstream<3>(c, "out", out.shape());
  attn::Tensor<3> dx;
  attn::GqaWeights<float> g{xt::zeros_like(w.w_q), xt::zeros_like(w.w_k), xt::zeros_like(w.w_v),
                            xt::zeros_like(w.w_o)};
  attn::gqa_backward<float>(dout, cache, w, config, dx, g);
  compare_grad<3>(c, "x", dx, cmp);
  compare_grad<2>(c, "w_q", g.w_q, cmp);
  compare_grad<2>(c, "w_k", g.w_k, cmp);
  compare_grad<2>(c, "w_v", g.w_v, cmp);
  compare_grad<2>(c, "w_o", g.w_o, cmp);
}

void run_swa(const Case& c, Comparison& cmp) {
  const std::size_t window = c.positive("window", kMaxWindow);
  const attn::Tensor<4> q = attn::load_npy<4>(c.file("q"));  // (B, H, T, hs)
  const attn::Tensor<4> k = attn::load_npy<4>(c.file("k"));
  const attn::Tensor<4> v = attn::load_npy<4>(c.file("v"));
  const attn::WindowAttention<float> r = attn::sliding_window_attention<float>(q, k, v, window);
  compare<4>(c, "out", r.out, cmp);
  compare<4>(c, "weights", r.weights, cmp);
  if (!c.backward()) return;
  const attn::Tensor<4> dout = load_upstream<4>(c, "out", r.out.shape());
  const attn::WindowAttentionGrads<float> g =
      attn::sliding_window_attention_backward<float>(dout, q, k, v, r.weights, window);
  compare_grad<4>(c, "q", g.dq, cmp);
  compare_grad<4>(c, "k", g.dk, cmp);
  compare_grad<4>(c, "v", g.dv, cmp);
}

// ALiBi (chapter 11): causal attention with the bias -m_h (t - s), optionally windowed; the
// reference attention with alibi_bias (attn/ops/attention_ref.hpp).
void run_alibi(const Case& c, Comparison& cmp) {
  if (!c.flag("causal")) c.fail("key causal must be 1: ALiBi's bias is a causal model's");
  attn::AttentionOptions options;
  options.causal = true;
  if (const std::size_t W = count_or(c, "window", 0, kMaxWindow); W != 0) options.window = W;
  const attn::Tensor<4> q = attn::load_npy<4>(c.file("q"));  // (B, H, T, hs)
  const attn::Tensor<4> k = attn::load_npy<4>(c.file("k"));
  const attn::Tensor<4> v = attn::load_npy<4>(c.file("v"));
  const std::size_t H = q.shape()[1], T = q.shape()[2];
  const xt::xtensor<float, 3> bias = attn::alibi_bias<float>(H, T, k.shape()[2]);
  const attn::AttentionRefResult<float> r = attn::attention_ref<float>(q, k, v, options, bias);
  compare<4>(c, "out", r.out, cmp);
  compare<4>(c, "weights", r.probs, cmp);
  if (!c.backward()) return;
  const attn::Tensor<4> dout = load_upstream<4>(c, "out", r.out.shape());
  const attn::AttentionRefGrads<float> g =
      attn::attention_ref_backward<float>(dout, q, k, v, r.probs, options);
  compare_grad<4>(c, "q", g.dq, cmp);
  compare_grad<4>(c, "k", g.dk, cmp);
  compare_grad<4>(c, "v", g.dv, cmp);
}

// The grad. files of chapter 11's ops; false when `op` is not one of them.
bool modern_grad_names(const std::string& op, GradNames& names) {
  const std::pair<std::string, std::string> no_weights{"weights", kMhaNames.no_grad[0].second};
  if (op == "rope") {
    names = {{"x"}, "y", {}};
  } else if (op == "rmsnorm") {
    names = {{"x", "gamma"}, "y", {}};
  } else if (op == "swiglu") {
    names = {{"x", "w_gate", "w_up", "w_down"}, "y", {}};
  } else if (op == "gqa") {
    names = {{"x", "w_q", "w_k", "w_v", "w_o"}, "out", {no_weights}};
  } else if (op == "swa" || op == "alibi") {
    names = {{"q", "k", "v"}, "out", {no_weights}};
  } else {
    return false;
  }
  return true;
}

// Runs chapter 11's op `c.op()`; false when it is not one of them.
bool run_modern_op(const Case& c, Comparison& cmp) {
  const std::string& op = c.op();
  GradNames names;
  if (!modern_grad_names(op, names)) return false;
  if (op == "rope") c.allow_keys({"theta", "offset"});
  if (op == "rmsnorm") c.allow_keys({"eps"});
  if (op == "swiglu") c.allow_keys({});
  if (op == "gqa") c.allow_keys({"n_heads", "n_kv_heads", "causal", "rope", "theta", "window"});
  if (op == "swa") c.allow_keys({"window"});
  if (op == "alibi") c.allow_keys({"causal", "window"});
  check_grad_names(c, names);
  if (op == "rope") {
    run_rope(c, cmp);
  } else if (op == "rmsnorm") {
    const float eps = c.eps("eps");
    switch (rank_of(c, "x")) {
      case 2:
        run_rmsnorm<2>(c, eps, cmp);
        break;
      case 3:
        run_rmsnorm<3>(c, eps, cmp);
        break;
      case 4:
        run_rmsnorm<4>(c, eps, cmp);
        break;
      default:
        bad_rank(c, "x", "rank 2-4 (..., C)");
    }
  } else if (op == "swiglu") {
    run_swiglu(c, cmp);
  } else if (op == "gqa") {
    run_gqa(c, cmp);
  } else if (op == "alibi") {
    run_alibi(c, cmp);
  } else {
    run_swa(c, cmp);
  }
  return true;
}

// The grad. files each op accepts (check_grad_names). lm's depend on the model's layers.
GradNames grad_names(const Case& c) {
  const std::string& op = c.op();
  if (GradNames modern; modern_grad_names(op, modern)) return modern;
  if (op == "softmax" || op == "masked_softmax") return {{"x"}, "y", {}};
  if (op == "sdpa") {
    return {{"q", "k", "v"}, "out", {{"weights", kMhaNames.no_grad[0].second}}};
  }
  if (op == "mha") return kMhaNames;
  if (op == "layernorm") return {{"x", "gamma", "beta"}, "y", {}};
  if (op == "ffn") return {{"x", "w1", "b1", "w2", "b2"}, "y", {}};
  if (op == "block") {
    GradNames n{{"x", "w_q", "w_k", "w_v", "w_o", "w1", "b1", "w2", "b2"}, "y", {}};
    const std::vector<std::string> ln{"ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta"};
    if (c.flag_or("layer_norm", true)) {
      n.params.insert(n.params.end(), ln.begin(), ln.end());
    } else {
      for (const std::string& name : ln)
        n.no_grad.emplace_back(name,
                               "the case has layer_norm 0: the block has no LayerNorm weights");
    }
    return n;
  }
  if (op == "cross_entropy") {
    return {{"logits"},
            "",
            {{"targets", kIdsWhy},
             {"loss",
              "the loss is where the backward "
              "starts (dloss/dloss = 1)"}}};
  }
  if (op == "lm") {
    GradNames n{{"wte", "wpe"},
                "",
                {{"tokens", kIdsWhy},
                 {"targets", kIdsWhy},
                 {"loss", "the loss is where the backward starts"},
                 {"logits",
                  "lm's backward starts from the loss of "
                  "targets.npy, not from an upstream gradient"}}};
    const std::size_t L = c.positive("n_layers", kMaxLayers);
    for (std::size_t i = 0; i < L; ++i) {
      for (const char* p : {"w_q", "w_k", "w_v", "w_o", "ln1_gamma", "ln1_beta", "ln2_gamma",
                            "ln2_beta", "w1", "b1", "w2", "b2"}) {
        n.params.push_back(fmt::format("h{}.{}", i, p));
      }
    }
    n.params.insert(n.params.end(), {"ln_f_gamma", "ln_f_beta"});
    return n;
  }
  return {};
}

void run_op(const Case& c, Comparison& cmp) {
  const std::string& op = c.op();
  if (op == "softmax") {
    c.allow_keys({});
    check_grad_names(c, grad_names(c));
    switch (rank_of(c, "x")) {
      case 1:
        return run_softmax<1>(c, cmp);
      case 2:
        return run_softmax<2>(c, cmp);
      case 3:
        return run_softmax<3>(c, cmp);
      case 4:
        return run_softmax<4>(c, cmp);
      default:
        bad_rank(c, "x", "rank 1-4");
    }
  }
  if (op == "masked_softmax") {
    c.allow_keys({"causal"});
    check_grad_names(c, grad_names(c));
    const bool causal = c.flag("causal");
    switch (rank_of(c, "x")) {
      case 2:
        return run_masked_softmax<2>(c, causal, cmp);
      case 3:
        return run_masked_softmax<3>(c, causal, cmp);
      case 4:
        return run_masked_softmax<4>(c, causal, cmp);
      default:
        bad_rank(c, "x", "rank 2-4 (..., T, T)");
    }
  }
  if (op == "sdpa") {
    c.allow_keys({"causal", "kernel"});
    check_grad_names(c, grad_names(c));
    return run_sdpa(c, cmp);
  }
  if (op == "mha") {
    c.allow_keys({"n_heads", "causal", "kernel"});
    check_grad_names(c, grad_names(c));
    return run_mha(c, cmp);
  }
  if (op == "layernorm") {
    c.allow_keys({"eps"});
    check_grad_names(c, grad_names(c));
    const float eps = c.eps("eps");
    switch (rank_of(c, "x")) {
      case 2:
        return run_layernorm<2>(c, eps, cmp);
      case 3:
        return run_layernorm<3>(c, eps, cmp);
      default:
        bad_rank(c, "x", "rank 2 or 3 (..., C)");
    }
  }
  if (op == "ffn") {
    c.allow_keys({"activation"});
    check_grad_names(c, grad_names(c));
    return run_ffn(c, cmp);
  }
  if (op == "block") {
    c.allow_keys({"n_heads", "causal", "norm", "activation", "eps", "layer_norm"});
    check_grad_names(c, grad_names(c));
    return run_block(c, cmp);
  }
  if (op == "cross_entropy") {
    c.allow_keys({});
    check_grad_names(c, grad_names(c));
    return run_cross_entropy(c, cmp);
  }
  if (op == "lm") {
    c.allow_keys({"n_layers", "n_heads"});
    check_grad_names(c, grad_names(c));
    return run_lm(c, cmp);
  }
  if (op == "train") {
    c.allow_keys(
        {"n_layers", "n_heads", "lr", "beta1", "beta2", "adam_eps", "weight_decay", "grad_clip"});
    check_grad_names(c, grad_names(c));
    return run_train(c, cmp);
  }
  if (run_modern_op(c, cmp)) return;
  c.fail(
      fmt::format("unknown op '{}' (known: softmax, masked_softmax, sdpa, mha, layernorm, "
                  "ffn, block, cross_entropy, lm, train, rope, rmsnorm, swiglu, gqa, swa)",
                  op));
}

void run_case(Case& c, Comparison& cmp) {
  c.scan_grads();
  run_op(c, cmp);
  // Every grad. reference must have been compared (a safety net for this runner's own bugs).
  const std::string upstream = grad_names(c).upstream;
  for (const std::string& g : c.grads()) {
    if (g != upstream &&
        std::find(cmp.compared.begin(), cmp.compared.end(), "grad." + g) == cmp.compared.end()) {
      throw CaseError(fmt::format("{}: was not compared (attn-golden does not know how)",
                                  c.grad_file(g).string()));
    }
  }
  // Every file of the case was read: an input, or a reference compared. One nothing read (the
  // attention weights of a `kernel flash` case: flash keeps none) would pass whatever it holds.
  if (const fs::path unread = c.unread_file(); !unread.empty()) {
    const std::string kernel = c.has("kernel") ? " with kernel " + c.text("kernel") : "";
    throw CaseError(fmt::format(
        "{}: not compared: op {}{} never reads it, and a reference nobody compares passes "
        "whatever it holds (remove the file{})",
        unread.string(), c.op(), kernel, kernel.empty() ? "" : ", or the kernel key"));
  }
}

// ---------------------------------------------------------------------------------------------

// What walking the case folders found: the case folders, and every path that could not be
// looked at (an unreadable folder, a link to itself) with the reason.
struct Found {
  std::vector<fs::path> cases;
  std::vector<std::pair<fs::path, std::string>> problems;
};

constexpr int kMaxDepth = 64;  // deeper trees are not case trees

// Every folder under `dir` (or `dir` itself) that holds a case.txt. Only the non-throwing
// std::filesystem overloads are used: a bad path is reported and the walk goes on. Links to
// folders are looked into but not walked (no cycles).
void find_cases(const fs::path& dir, bool follow, int depth, Found& found) {
  std::error_code ec;
  // Any case.txt counts, even a link to /dev/zero: Case::parse then says what is wrong with it.
  if (fs::exists(fs::symlink_status(dir / "case.txt", ec))) found.cases.push_back(dir);
  if (!follow) return;
  if (depth > kMaxDepth) {
    found.problems.emplace_back(dir, fmt::format("more than {} folders deep", kMaxDepth));
    return;
  }
  std::vector<std::pair<fs::path, bool>> subfolders;  // (path, walk into it)
  fs::directory_iterator it(dir, ec);
  const fs::directory_iterator end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code entry_ec;
    const bool is_link = it->is_symlink(entry_ec);
    const fs::file_status status = it->status(entry_ec);  // follows links: a loop fails here
    if (entry_ec) {
      found.problems.emplace_back(it->path(), entry_ec.message());
      continue;
    }
    if (fs::is_directory(status)) subfolders.emplace_back(it->path(), !is_link);
  }
  if (ec) found.problems.emplace_back(dir, "cannot read the folder: " + ec.message());
  for (const auto& [sub, walk] : subfolders) find_cases(sub, walk, depth + 1, found);
}

Found find_cases(const fs::path& root) {
  Found found;
  find_cases(root, true, 0, found);
  std::sort(found.cases.begin(), found.cases.end());
  return found;
}

std::string fmt_err(double e) {
  return std::isfinite(e) ? fmt::format("{:.2e}", e) : fmt::format("{}", e);
}

int usage_error(std::string_view what) {
  // A path quoted in the message reaches the terminal escaped (ESC, a newline as \xNN, \n).
  fmt::print(stderr, "attn-golden: error: {} (run attn-golden --help)\n",
             attn::printable_bytes(what));
  return 2;
}

// `code`, unless what was printed could not be written (> /dev/full, past `ulimit -f`): then one
// line on stderr and 1.
int checked_exit(int code) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    std::fprintf(stderr, "attn-golden: error: cannot write the output (stdout)\n");
    return 1;
  }
  return code;
}

}  // namespace

int run(int argc, char** argv) {
  // 1. Arguments: --help, or one or more folders.
  std::vector<fs::path> roots;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kUsage);
      return checked_exit(0);
    }
    if (arg.size() > 1 && arg.front() == '-')
      return usage_error(fmt::format("unknown option '{}'", arg));
    roots.emplace_back(arg);
  }
  if (roots.empty()) return usage_error("no case folders given");

  // 2. Collect the cases.
  std::vector<fs::path> cases;
  std::vector<std::pair<fs::path, std::string>> problems;
  for (const fs::path& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      return usage_error(fmt::format("'{}' is not a folder", root.string()));
    Found found = find_cases(root);
    if (found.cases.empty() && found.problems.empty()) {
      return usage_error(fmt::format("no case.txt under '{}'", root.string()));
    }
    cases.insert(cases.end(), found.cases.begin(), found.cases.end());
    problems.insert(problems.end(), found.problems.begin(), found.problems.end());
  }

  // 3. Run each, one line per case: path, op, max abs and max rel error, PASS/FAIL (+ why).
  std::size_t width = 0;
  for (const fs::path& dir : cases) width = std::max(width, dir.string().size());
  // A path the walk could not look at may hide cases: it fails the run, on a line of its own.
  for (const auto& [path, why] : problems) {
    fmt::print("{:<{}}  {:<14}  FAIL  {}: {}\n", path.string(), width, "?", path.string(), why);
  }
  std::size_t passed = 0;
  for (const fs::path& dir : cases) {
    Case c(dir);
    Comparison cmp;
    std::string error;
    try {
      c.parse();
      run_case(c, cmp);
    } catch (const std::exception& e) {
      error = e.what();
      // Library shape errors do not know the case; npy and case.txt errors already name a file.
      if (error.find(dir.string()) == std::string::npos) error = dir.string() + ": " + error;
    }
    const bool ok = error.empty() && cmp.first_failure.empty();
    std::string line =
        fmt::format("{:<{}}  {:<14}", dir.string(), width, c.op().empty() ? "?" : c.op());
    if (error.empty()) {
      line +=
          fmt::format("  max abs {:>9}  max rel {:>9}", fmt_err(cmp.max_abs), fmt_err(cmp.max_rel));
    } else {
      line += fmt::format("  max abs {:>9}  max rel {:>9}", "-", "-");
    }
    line += ok ? "  PASS" : "  FAIL";
    if (!error.empty()) line += "  " + error;
    if (error.empty() && !ok) line += "  " + cmp.first_failure;
    fmt::print("{}\n", line);
    if (ok) ++passed;
  }

  // 4. Summary.
  const std::size_t failed = cases.size() - passed;
  fmt::print("{} case{}: {} passed, {} failed{}\n", cases.size(), cases.size() == 1 ? "" : "s",
             passed, failed,
             problems.empty() ? ""
                              : fmt::format(", {} unreadable path{}", problems.size(),
                                            problems.size() == 1 ? "" : "s"));
  // Output that cannot be written (> /dev/full) is an error too.
  return checked_exit(failed == 0 && problems.empty() ? 0 : 1);
}

// A write to a full stdout (> /dev/full) throws from fmt::print as soon as the buffer is flushed,
// that is after enough cases: one line and exit 1, like the final check above, never an abort.
int main(int argc, char** argv) {
  attn::setup_threads();
  std::signal(SIGXFSZ, SIG_IGN);  // past `ulimit -f`, a write fails (EFBIG) and is reported
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    if (std::ferror(stdout) != 0) {
      std::fprintf(stderr, "attn-golden: error: cannot write the output (stdout)\n");
    } else {
      std::fprintf(stderr, "attn-golden: error: %s\n", e.what());
    }
    return 1;
  }
}
