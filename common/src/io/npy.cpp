// npy.cpp: a hand-written reader and writer for NumPy's .npy format (chapter 07, golden tests).
// The format is small enough to read in full: a magic string, a version, a Python dict literal
// describing dtype, order and shape, then the raw bytes. No library, no guessing.
#include "attn/io/npy.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "attn/core/check.hpp"
#include "attn/core/limits.hpp"

namespace attn {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp copies little-endian file data straight into memory");

namespace {

namespace fs = std::filesystem;

// The magic string every .npy file starts with: byte 0x93, then "NUMPY".
constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

[[noreturn]] void fail(const fs::path& path, std::string_view what) {
  throw std::runtime_error(fmt::format("{}: {}", path.string(), what));
}

// Where the bytes come from: a file (read_npy) or memory (parse_npy). The reader asks for the
// total size first and then only for ranges inside it, so a file is never read past what its
// header declares, and nothing is read before the header has been checked against the size.
class Source {
 public:
  virtual ~Source() = default;
  virtual std::size_t size() const = 0;
  virtual void read(std::size_t offset, std::size_t n, char* out) = 0;  // [offset, offset + n)
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  std::size_t size() const override { return bytes_.size(); }
  void read(std::size_t offset, std::size_t n, char* out) override {
    if (n == 0) return;  // out may be the null data() of an empty vector (fuzz_npy found it)
    std::memcpy(out, bytes_.data() + offset, n);
  }

 private:
  std::string_view bytes_;
};

// A regular file (or a link to one) of at most limits::kMaxNpyBytes: /dev/zero, a pipe or a
// directory is refused before anything is read.
class FileSource : public Source {
 public:
  explicit FileSource(const fs::path& path) : path_(path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) fail(path, ec.message());  // a loop
    if (!fs::exists(status)) fail(path, "no such file");
    if (fs::is_directory(status)) fail(path, "is a directory, not a .npy file");
    if (!fs::is_regular_file(status)) {
      fail(path, "not a regular file (a device, a pipe or a socket), not a .npy file");
    }
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) fail(path, "cannot read the file size: " + ec.message());
    if (size > limits::kMaxNpyBytes) {
      fail(path, fmt::format("the file holds {} bytes, more than the limit of {} for a .npy file",
                             size, bytes_text(limits::kMaxNpyBytes)));
    }
    size_ = static_cast<std::size_t>(size);
    in_.open(path, std::ios::binary);
    if (!in_) fail(path, "cannot open file");
  }
  std::size_t size() const override { return size_; }
  void read(std::size_t offset, std::size_t n, char* out) override {
    if (n == 0) return;
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(out, static_cast<std::streamsize>(n));
    if (!in_ || static_cast<std::size_t>(in_.gcount()) != n) fail(path_, "read error");
  }

 private:
  const fs::path& path_;
  std::size_t size_ = 0;
  std::ifstream in_;
};

// Little-endian unsigned integer of `n` bytes at `p`.
std::uint32_t read_le(const char* p, std::size_t n) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

// The header text, made printable and short enough for a one-line error message.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= 100) return out + "...";
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '?')) out.pop_back();  // padding, '\n'
  return out;
}

// What the header dict says.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
};

// A parser for the one Python literal numpy writes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Keys in any order; strings in single or double quotes; a trailing comma is allowed.
class HeaderParser {
 public:
  HeaderParser(const fs::path& path, std::string_view text) : path_(path), text_(text) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{', "the header must start with '{'");
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal("a quoted key");
      expect(':', fmt::format("expected ':' after key '{}'", key));
      if (key == "descr") {
        skip_space();
        if (peek() != '\'' && peek() != '"') {
          malformed("'descr' must be a string such as '<f4' (structured dtypes are not supported)");
        }
        h.descr = string_literal("a dtype string");
        seen_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        seen_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        seen_shape = true;
      } else {
        malformed(fmt::format("unexpected key '{}'", key));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') malformed("expected ',' or '}' after a value");
    }
    ++pos_;  // '}'
    skip_space();
    if (pos_ != text_.size()) malformed("unexpected text after '}'");
    if (!seen_descr) malformed("missing key 'descr'");
    if (!seen_order) malformed("missing key 'fortran_order'");
    if (!seen_shape) malformed("missing key 'shape'");
    return h;
  }

 private:
  [[noreturn]] void malformed(std::string_view what) const {
    fail(path_, fmt::format("malformed header ({}): {}", what, printable(text_)));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  void expect(char c, std::string_view what) {
    skip_space();
    if (peek() != c) malformed(what);
    ++pos_;
  }
  std::string string_literal(std::string_view what) {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') malformed(fmt::format("expected {}", what));
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) malformed("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    malformed("'fortran_order' must be True or False");
  }
  std::vector<std::size_t> tuple() {
    expect('(', "'shape' must be a tuple such as (3, 4)");
    std::vector<std::size_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') malformed("'shape' must hold non-negative integers");
      std::size_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        const auto digit = static_cast<std::size_t>(peek() - '0');
        if (d > (std::numeric_limits<std::size_t>::max() - digit) / 10) {
          malformed("a dimension of 'shape' is too large");
        }
        d = d * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long literal, e.g. (3L, 4L)
      dims.push_back(d);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') malformed("expected ',' or ')' in 'shape'");
    }
    ++pos_;  // ')'
    return dims;
  }

  const fs::path& path_;
  std::string_view text_;
  std::size_t pos_ = 0;
};

// The element types we read, by their descr string.
struct Dtype {
  std::string_view descr;
  std::size_t size;
  bool is_float;
};
constexpr Dtype kDtypes[] = {
    {"<f4", 4, true}, {"<f8", 8, true}, {"<i4", 4, false}, {"<i8", 8, false}};
constexpr std::string_view kSupported = "'<f4', '<f8', '<i4', '<i8'";

const Dtype& find_dtype(const fs::path& path, const std::string& descr) {
  for (const Dtype& d : kDtypes) {
    if (d.descr == descr) return d;
  }
  if (!descr.empty() && descr[0] == '>') {
    fail(path, fmt::format("big-endian data ('{}') is not supported (supported: {}); save it "
                           "little-endian, e.g. a.astype('<{}')",
                           descr, kSupported, descr.substr(1)));
  }
  fail(path, fmt::format("unsupported dtype '{}' (supported: {})", descr, kSupported));
}

// One element at `p` as a double.
double element(const char* p, const Dtype& d) {
  if (d.descr == "<f4") {
    float v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  }
  if (d.descr == "<f8") {
    double v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  if (d.descr == "<i4") {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  }
  std::int64_t v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

// "(3, 4) '<f4'", the way the messages name an array.
std::string describe(const NpyArray& a) {
  return fmt::format("{} '{}'", shape_str(a.shape), a.descr);
}

bool is_float_descr(std::string_view descr) { return descr == "<f4" || descr == "<f8"; }

}  // namespace

namespace {

NpyArray read_npy_from(Source& source, const fs::path& path) {
  const std::size_t n = source.size();
  char prefix[kMagicSize + 2 + 4] = {};
  source.read(0, std::min(n, sizeof prefix), prefix);

  // 1. Magic "\x93NUMPY", then the version (major, minor).
  if (n < kMagicSize || std::memcmp(prefix, kMagic, kMagicSize) != 0) {
    fail(path, "not a .npy file (bad magic)");
  }
  if (n < kMagicSize + 2) fail(path, "truncated header: the file ends inside the version");
  const int major = static_cast<unsigned char>(prefix[6]);
  const int minor = static_cast<unsigned char>(prefix[7]);
  // 2. The header length: 2 bytes in version 1.0, 4 bytes in 2.0 and 3.0 (3.0 allows UTF-8).
  std::size_t len_size = 0;
  if (major == 1 && minor == 0) {
    len_size = 2;
  } else if ((major == 2 || major == 3) && minor == 0) {
    len_size = 4;
  } else {
    fail(path,
         fmt::format("unsupported .npy version {}.{} (supported: 1.0, 2.0, 3.0)", major, minor));
  }
  const std::size_t len_at = kMagicSize + 2;
  if (n < len_at + len_size) fail(path, "truncated header: the file ends inside the header length");
  const std::size_t header_len = read_le(prefix + len_at, len_size);
  const std::size_t data_at = len_at + len_size + header_len;
  if (n < data_at) {  // checked against the size before the header is read
    fail(path, fmt::format("truncated header: expected {} bytes of header, got {}", header_len,
                           n - len_at - len_size));
  }

  // 3. The dict: dtype, memory order, shape.
  std::string header(header_len, '\0');
  source.read(len_at + len_size, header_len, header.data());
  Header h = HeaderParser(path, header).parse();
  const Dtype& dtype = find_dtype(path, h.descr);

  NpyArray out;
  out.descr = h.descr;
  out.shape = std::move(h.shape);

  // 4. The data: exactly prod(shape) elements. The element and byte counts are checked (a
  //    shape such as (0, 2^32, 2^32) overflows even though it holds nothing), and compared with
  //    the file size before a single data byte is read.
  std::size_t count = 0;
  std::size_t expected = 0;
  try {
    count = checked_elements(out.shape, "the array", limits::kMaxNpyBytes / dtype.size);
    expected = checked_mul(count, dtype.size, "the array's bytes");
  } catch (const SizeError&) {
    fail(path, fmt::format("shape {} is too large (the limit is {} of data)", shape_str(out.shape),
                           bytes_text(limits::kMaxNpyBytes)));
  }
  const std::size_t got = n - data_at;
  if (got < expected) {
    fail(path, fmt::format("truncated data: expected {} bytes for shape {}, got {}", expected,
                           describe(out), got));
  }
  if (got > expected) {
    fail(path, fmt::format("unexpected trailing data: expected {} bytes for shape {}, got {}",
                           expected, describe(out), got));
  }
  std::vector<char> bytes(expected);
  source.read(data_at, expected, bytes.data());
  const char* data = bytes.data();
  out.values.resize(count);
  if (!h.fortran_order || out.shape.size() < 2) {
    for (std::size_t i = 0; i < count; ++i) out.values[i] = element(data + i * dtype.size, dtype);
    return out;
  }

  // 5. Fortran (column-major) order: the first index varies fastest in the file. Walk the
  //    elements in C order with a multi-index and fetch each from its Fortran offset
  //    f = i0 + s0 * (i1 + s1 * (i2 + ...)).
  const std::size_t rank = out.shape.size();
  std::vector<std::size_t> fstride(rank, 1);  // Fortran strides, in elements
  for (std::size_t k = 1; k < rank; ++k) fstride[k] = fstride[k - 1] * out.shape[k - 1];
  std::vector<std::size_t> index(rank, 0);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t f = 0;
    for (std::size_t k = 0; k < rank; ++k) f += index[k] * fstride[k];
    out.values[i] = element(data + f * dtype.size, dtype);
    for (std::size_t k = rank; k-- > 0;) {  // increment the C-order multi-index
      if (++index[k] < out.shape[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  FileSource source(path);
  return read_npy_from(source, path);
}

NpyArray parse_npy(std::string_view bytes, const std::filesystem::path& name) {
  MemorySource source(bytes);
  return read_npy_from(source, name);
}

template <std::size_t N>
Tensor<N> load_npy(const std::filesystem::path& path) {
  const NpyArray a = read_npy(path);
  if (a.shape.size() != N) {
    fail(path, fmt::format("expected a rank-{} float array, got shape {}", N, shape_str(a.shape)));
  }
  if (!is_float_descr(a.descr)) {
    fail(path, fmt::format("expected a rank-{} float array, got {}", N, describe(a)));
  }
  std::array<std::size_t, N> shape{};
  std::copy(a.shape.begin(), a.shape.end(), shape.begin());
  Tensor<N> out(shape);
  float* dst = out.data();
  constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    const double v = a.values[i];
    // A float64 beyond float's range would be undefined behaviour to convert.
    if (std::isfinite(v) && std::abs(v) > kFloatMax) {
      fail(path, fmt::format("value {} at flat index {} does not fit in float32", v, i));
    }
    dst[i] = static_cast<float>(v);
  }
  return out;
}

template Tensor<1> load_npy<1>(const std::filesystem::path&);
template Tensor<2> load_npy<2>(const std::filesystem::path&);
template Tensor<3> load_npy<3>(const std::filesystem::path&);
template Tensor<4> load_npy<4>(const std::filesystem::path&);

xt::xtensor<int, 2> load_npy_tokens(const std::filesystem::path& path) {
  const NpyArray a = read_npy(path);
  if (a.shape.size() != 2) {
    fail(path, fmt::format("expected a rank-2 array of token ids (B, T), got shape {}",
                           shape_str(a.shape)));
  }
  xt::xtensor<int, 2> out(std::array<std::size_t, 2>{a.shape[0], a.shape[1]});
  int* dst = out.data();
  constexpr double kIntMin = static_cast<double>(std::numeric_limits<int>::min());
  constexpr double kIntMax = static_cast<double>(std::numeric_limits<int>::max());
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    const double v = a.values[i];
    // Integral floats (a token array saved as float) are accepted; 1.5 is not a token id.
    if (!(std::floor(v) == v)) {
      fail(path, fmt::format("token ids must be integers, got {} at flat index {}", v, i));
    }
    if (v < kIntMin || v > kIntMax) {
      fail(path, fmt::format("token id {} at flat index {} does not fit in int", v, i));
    }
    dst[i] = static_cast<int>(v);
  }
  return out;
}

template <std::size_t N>
void save_npy(const std::filesystem::path& path, const Tensor<N>& x) {
  // 1. The dict, exactly as numpy writes it, e.g. {'descr': '<f4', 'fortran_order': False,
  //    'shape': (3, 4), }. A 1-D shape keeps Python's trailing comma: (5,).
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}",
                                   shape_str(x.shape()));
  // 2. Pad with spaces and end with '\n' so the data starts at a multiple of 64 bytes
  //    (magic 6 + version 2 + length 2 + header), which is what numpy does.
  const std::size_t unpadded = kMagicSize + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xffff) fail(path, "header too long for .npy version 1.0");

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot open file for writing");
  const char version_and_len[4] = {1, 0, static_cast<char>(header.size() & 0xff),
                                   static_cast<char>(header.size() >> 8)};
  out.write(kMagic, kMagicSize);
  out.write(version_and_len, 4);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  // 3. The data: an xtensor container is contiguous and row-major, i.e. C order.
  out.write(reinterpret_cast<const char*>(x.data()),
            static_cast<std::streamsize>(x.size() * sizeof(float)));
  out.close();
  if (!out) fail(path, std::string("write error: ") + std::strerror(errno));  // e.g. a full disk
}

template void save_npy<1>(const std::filesystem::path&, const Tensor<1>&);
template void save_npy<2>(const std::filesystem::path&, const Tensor<2>&);
template void save_npy<3>(const std::filesystem::path&, const Tensor<3>&);
template void save_npy<4>(const std::filesystem::path&, const Tensor<4>&);

}  // namespace attn
