// Tests for attn/io/npy.hpp: the .npy reader and writer (chapter 07, golden tests).
// Files written by numpy itself are read by the golden tests (tests/golden); here we round-trip
// our own files and craft byte-exact files for every layout and every error path.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "attn/core/limits.hpp"
#include "attn/io/npy.hpp"
#include "attn/core/random.hpp"
#include "test_helpers.hpp"

namespace {

namespace fs = std::filesystem;

// A fresh folder for this test binary, removed at exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("attn_test_npy_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
};

const TempDir& temp() {
  static const TempDir dir;
  return dir;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::string bytes(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

// Raw bytes of some values, little-endian (the host is little-endian; npy.cpp asserts it).
template <class T>
std::string raw(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A .npy file: magic, version major.0, header length (2 bytes in 1.0, else 4), header, data.
std::string npy_bytes(const std::string& header, const std::string& data, int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }\n";
}

// Writes a crafted file and returns its path.
fs::path craft(const std::string& name, const std::string& bytes) {
  const fs::path p = temp() / name;
  write_bytes(p, bytes);
  return p;
}

// The message a read of `p` should fail with: "<path>: <what>".
std::string msg(const fs::path& p, const std::string& what) { return p.string() + ": " + what; }

}  // namespace

TEST_SUITE("npy") {

TEST_CASE("save_npy then load_npy gives the same tensor, ranks 1 to 4") {
  attn::Rng rng(7);
  SUBCASE("rank 1") {
    const attn::Tensor<1> x = attn::randn<1>(rng, {5});
    attn::save_npy(temp() / "r1.npy", x);
    CHECK_TENSOR_NEAR(attn::load_npy<1>(temp() / "r1.npy"), x, 0.0, 0.0);
  }
  SUBCASE("rank 2") {
    const attn::Tensor<2> x = attn::randn<2>(rng, {3, 4});
    attn::save_npy(temp() / "r2.npy", x);
    CHECK_TENSOR_NEAR(attn::load_npy<2>(temp() / "r2.npy"), x, 0.0, 0.0);
  }
  SUBCASE("rank 3") {
    const attn::Tensor<3> x = attn::randn<3>(rng, {2, 3, 5});
    attn::save_npy(temp() / "r3.npy", x);
    CHECK_TENSOR_NEAR(attn::load_npy<3>(temp() / "r3.npy"), x, 0.0, 0.0);
  }
  SUBCASE("rank 4, with an axis of length 1") {
    const attn::Tensor<4> x = attn::randn<4>(rng, {2, 1, 3, 2});
    attn::save_npy(temp() / "r4.npy", x);
    CHECK_TENSOR_NEAR(attn::load_npy<4>(temp() / "r4.npy"), x, 0.0, 0.0);
  }
  SUBCASE("an empty tensor") {
    const attn::Tensor<2> x(std::array<std::size_t, 2>{0, 3});
    attn::save_npy(temp() / "empty.npy", x);
    const attn::NpyArray a = attn::read_npy(temp() / "empty.npy");
    CHECK(a.shape == std::vector<std::size_t>{0, 3});
    CHECK(a.values.empty());
  }
}

TEST_CASE("save_npy writes numpy's own layout: version 1.0, the dict, data at a multiple of 64") {
  const attn::Tensor<2> x = {
      {1.0f, 2.0f, 3.0f, 4.0f}, {5.0f, 6.0f, 7.0f, 8.0f}, {9.0f, 10.0f, 11.0f, 12.0f}};
  const fs::path p = temp() / "layout.npy";
  attn::save_npy(p, x);
  const std::string bytes = read_bytes(p);
  REQUIRE(bytes.size() == 128 + 48);  // numpy's np.save writes exactly these 176 bytes
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]) == 118);
  const std::string header = bytes.substr(10, 118);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 0) == 0);
  CHECK(header.back() == '\n');
  float first = 0.0f;
  std::memcpy(&first, bytes.data() + 128, sizeof first);
  CHECK(first == 1.0f);

  attn::save_npy(temp() / "vec.npy", attn::Tensor<1>{1.0f, 2.0f});
  CHECK(read_bytes(temp() / "vec.npy").find("'shape': (2,), }") != std::string::npos);
}

TEST_CASE("read_npy converts float64, int64 and int32 to double") {
  SUBCASE("<f8") {
    const fs::path p =
        craft("f8.npy", npy_bytes(dict("<f8", "(3,)"), raw<double>({0.1, -2.5, 1e300})));
    const attn::NpyArray a = attn::read_npy(p);
    CHECK(a.descr == "<f8");
    CHECK(a.values == std::vector<double>{0.1, -2.5, 1e300});
    CHECK_THROWS_WITH_AS(attn::load_npy<1>(p),
                         msg(p, "value 1e+300 at flat index 2 does not fit in float32").c_str(),
                         std::runtime_error);
  }
  SUBCASE("<f8 loads as float") {
    const fs::path p = craft("f8b.npy", npy_bytes(dict("<f8", "(2,)"), raw<double>({0.1, -2.5})));
    CHECK_TENSOR_NEAR(attn::load_npy<1>(p), (attn::Tensor<1>{0.1f, -2.5f}), 0.0, 0.0);
  }
  SUBCASE("<i8") {
    const fs::path p = craft(
        "i8.npy", npy_bytes(dict("<i8", "(2, 2)"), raw<std::int64_t>({0, -1, 64, 1LL << 40})));
    const attn::NpyArray a = attn::read_npy(p);
    CHECK(a.shape == std::vector<std::size_t>{2, 2});
    CHECK(a.values == std::vector<double>{0.0, -1.0, 64.0, 1099511627776.0});
  }
  SUBCASE("<i4") {
    const fs::path p =
        craft("i4.npy", npy_bytes(dict("<i4", "(3,)"), raw<std::int32_t>({7, -7, 0})));
    CHECK(attn::read_npy(p).values == std::vector<double>{7.0, -7.0, 0.0});
  }
  SUBCASE("a scalar has shape ()") {
    const fs::path p = craft("scalar.npy", npy_bytes(dict("<f4", "()"), raw<float>({3.5f})));
    const attn::NpyArray a = attn::read_npy(p);
    CHECK(a.shape.empty());
    CHECK(a.values == std::vector<double>{3.5});
  }
}

TEST_CASE("headers in versions 2.0 and 3.0, any key order, double quotes, no trailing comma") {
  const std::string data = raw<float>({1.0f, 2.0f});
  const fs::path v2 = craft("v2.npy", npy_bytes(dict("<f4", "(2,)"), data, 2));
  CHECK(attn::read_npy(v2).values == std::vector<double>{1.0, 2.0});
  const fs::path v3 = craft("v3.npy", npy_bytes(dict("<f4", "(1, 2)"), data, 3));
  CHECK(attn::read_npy(v3).shape == std::vector<std::size_t>{1, 2});
  const fs::path odd = craft(
      "odd.npy",
      npy_bytes("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<f4\"}   \n", data));
  CHECK(attn::read_npy(odd).values == std::vector<double>{1.0, 2.0});
}

TEST_CASE("Fortran-order data is transposed into C order") {
  // The C-order matrix [[0, 1, 2], [3, 4, 5]] stored column by column: 0 3 1 4 2 5.
  const fs::path p2 =
      craft("f2.npy", npy_bytes(dict("<f4", "(2, 3)", true), raw<float>({0, 3, 1, 4, 2, 5})));
  const attn::Tensor<2> want2 = {{0, 1, 2}, {3, 4, 5}};
  CHECK_TENSOR_NEAR(attn::load_npy<2>(p2), want2, 0.0, 0.0);

  // Rank 3, shape (2, 3, 2): element (i, j, k) = 100 i + 10 j + k sits at Fortran offset
  // i + 2 j + 6 k.
  std::vector<float> fortran(12);
  attn::Tensor<3> want3(std::array<std::size_t, 3>{2, 3, 2});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = 0; k < 2; ++k) {
        const float v = static_cast<float>(100 * i + 10 * j + k);
        fortran[i + 2 * j + 6 * k] = v;
        want3(i, j, k) = v;
      }
  const fs::path p3 = craft("f3.npy", npy_bytes(dict("<f4", "(2, 3, 2)", true), raw(fortran)));
  CHECK_TENSOR_NEAR(attn::load_npy<3>(p3), want3, 0.0, 0.0);

  // A 1-D array is the same in both orders.
  const fs::path p1 = craft("f1.npy", npy_bytes(dict("<f4", "(3,)", true), raw<float>({1, 2, 3})));
  CHECK(attn::read_npy(p1).values == std::vector<double>{1.0, 2.0, 3.0});
}

TEST_CASE("every broken file is one runtime_error naming the file") {
  const std::string ok_data = raw<float>(std::vector<float>(12, 1.0f));  // 48 bytes for (3, 4)

  SUBCASE("missing file") {
    const fs::path p = temp() / "does_not_exist.npy";
    CHECK_THROWS_WITH_AS(attn::read_npy(p), msg(p, "no such file").c_str(), std::runtime_error);
    CHECK_THROWS_WITH_AS(attn::load_npy<2>(p), msg(p, "no such file").c_str(), std::runtime_error);
  }
  SUBCASE("a directory") {
    CHECK_THROWS_WITH_AS(attn::read_npy(temp().path),
                         msg(temp().path, "is a directory, not a .npy file").c_str(),
                         std::runtime_error);
  }
  SUBCASE("bad magic, including an empty file and a text file") {
    for (const std::string& bytes :
         {std::string(), std::string("\x93NUM"), std::string("hello, world\n"),
          std::string("\x93NUMPx\x01\x00") + dict("<f4", "(3, 4)")}) {
      const fs::path p = craft("x.npy", bytes);
      CHECK_THROWS_WITH_AS(attn::read_npy(p), msg(p, "not a .npy file (bad magic)").c_str(),
                           std::runtime_error);
    }
  }
  SUBCASE("unsupported version") {
    std::string bytes = npy_bytes(dict("<f4", "(3, 4)"), ok_data);
    bytes[6] = 4;
    const fs::path p = craft("v4.npy", bytes);
    CHECK_THROWS_WITH_AS(attn::read_npy(p),
                         msg(p, "unsupported .npy version 4.0 (supported: 1.0, 2.0, 3.0)").c_str(),
                         std::runtime_error);
    bytes[6] = 1;
    bytes[7] = 1;
    const fs::path q = craft("v11.npy", bytes);
    CHECK_THROWS_WITH_AS(attn::read_npy(q),
                         msg(q, "unsupported .npy version 1.1 (supported: 1.0, 2.0, 3.0)").c_str(),
                         std::runtime_error);
  }
  SUBCASE("truncated header") {
    const std::string full = npy_bytes(dict("<f4", "(3, 4)"), ok_data);
    const fs::path p = craft("th1.npy", full.substr(0, 7));
    CHECK_THROWS_WITH_AS(attn::read_npy(p),
                         msg(p, "truncated header: the file ends inside the version").c_str(),
                         std::runtime_error);
    const fs::path q = craft("th2.npy", full.substr(0, 9));
    CHECK_THROWS_WITH_AS(attn::read_npy(q),
                         msg(q, "truncated header: the file ends inside the header length").c_str(),
                         std::runtime_error);
    const fs::path r = craft("th3.npy", full.substr(0, 30));  // header is 60 bytes, 20 present
    CHECK_THROWS_WITH_AS(attn::read_npy(r),
                         msg(r, "truncated header: expected 60 bytes of header, got 20").c_str(),
                         std::runtime_error);
  }
  SUBCASE("malformed header dict") {
    struct Bad {
      std::string header;
      std::string what;
    };
    const std::vector<Bad> cases = {
        {"'descr': '<f4'}\n", "the header must start with '{'"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (3, 4)}",
         "expected ':' after key 'descr'"},
        {"{'fortran_order': False, 'shape': (3, 4), }", "missing key 'descr'"},
        {"{'descr': '<f4', 'shape': (3, 4), }", "missing key 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, }", "missing key 'shape'"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3, 4)}",
         "'fortran_order' must be True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4]}",
         "'shape' must be a tuple such as (3, 4)"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, -4)}",
         "'shape' must hold non-negative integers"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3 4)}",
         "expected ',' or ')' in 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'x': 1}", "unexpected key 'x'"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3, 4)}",
         "'descr' must be a string such as '<f4' (structured dtypes are not supported)"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (3, 4)}",
         "expected ',' or '}' after a value"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)} x",
         "unexpected text after '}'"},
        {"{'descr: <f4}", "unterminated string"},
        {"{'shape': (99999999999999999999999,)}", "a dimension of 'shape' is too large"},
    };
    for (const Bad& bad : cases) {
      CAPTURE(bad.header);
      const fs::path p = craft("bad_dict.npy", npy_bytes(bad.header, ok_data));
      std::string header = bad.header;
      while (!header.empty() && (header.back() == '\n' || header.back() == ' ')) header.pop_back();
      CHECK_THROWS_WITH_AS(attn::read_npy(p),
                           msg(p, "malformed header (" + bad.what + "): " + header).c_str(),
                           std::runtime_error);
    }
  }
  SUBCASE("unsupported dtype names itself and lists the supported ones") {
    const fs::path p = craft("f2.npy", npy_bytes(dict("<f2", "(3, 4)"), ok_data));
    CHECK_THROWS_WITH_AS(
        attn::read_npy(p),
        msg(p, "unsupported dtype '<f2' (supported: '<f4', '<f8', '<i4', '<i8')").c_str(),
        std::runtime_error);
    const fs::path q = craft("bool.npy", npy_bytes(dict("|b1", "(3, 4)"), ok_data));
    CHECK_THROWS_WITH_AS(
        attn::read_npy(q),
        msg(q, "unsupported dtype '|b1' (supported: '<f4', '<f8', '<i4', '<i8')").c_str(),
        std::runtime_error);
  }
  SUBCASE("big-endian data") {
    const fs::path p = craft("be.npy", npy_bytes(dict(">f4", "(3, 4)"), ok_data));
    CHECK_THROWS_WITH_AS(attn::read_npy(p),
                         msg(p,
                             "big-endian data ('>f4') is not supported (supported: '<f4', "
                             "'<f8', '<i4', '<i8'); save it little-endian, e.g. "
                             "a.astype('<f4')")
                             .c_str(),
                         std::runtime_error);
  }
  SUBCASE("truncated data") {
    const fs::path p = craft("x.npy", npy_bytes(dict("<f4", "(3, 4)"), ok_data.substr(0, 20)));
    CHECK_THROWS_WITH_AS(
        attn::read_npy(p),
        msg(p, "truncated data: expected 48 bytes for shape (3, 4) '<f4', got 20").c_str(),
        std::runtime_error);
    const fs::path q = craft("nodata.npy", npy_bytes(dict("<i8", "(2,)"), ""));
    CHECK_THROWS_WITH_AS(
        attn::read_npy(q),
        msg(q, "truncated data: expected 16 bytes for shape (2,) '<i8', got 0").c_str(),
        std::runtime_error);
  }
  SUBCASE("trailing data") {
    const fs::path p = craft("long.npy", npy_bytes(dict("<f4", "(3, 4)"), ok_data + "abcd"));
    CHECK_THROWS_WITH_AS(
        attn::read_npy(p),
        msg(p, "unexpected trailing data: expected 48 bytes for shape (3, 4) '<f4', got 52")
            .c_str(),
        std::runtime_error);
  }
  SUBCASE("a shape too large to exist") {
    const fs::path p = craft("huge.npy", npy_bytes(dict("<f4", "(4294967296, 4294967296)"), ""));
    CHECK_THROWS_WITH_AS(
        attn::read_npy(p),
        msg(p, "shape (4294967296, 4294967296) is too large (the limit is 256 MiB of data)")
            .c_str(),
        std::runtime_error);
  }
  SUBCASE("a shape holding no element whose other dimensions overflow (issue 7)") {
    // Accepted before: the zero made the element count 0, while xtensor's strides overflowed.
    const fs::path p =
        craft("zero_huge.npy", npy_bytes(dict("<f4", "(0, 4294967296, 4294967296)"), ""));
    CHECK_THROWS_WITH_AS(attn::read_npy(p),
                         msg(p,
                             "shape (0, 4294967296, 4294967296) is too large (the limit is "
                             "256 MiB of data)")
                             .c_str(),
                         std::runtime_error);
    const fs::path q =
        craft("zero_max.npy", npy_bytes(dict("<f4", "(0, 18446744073709551615)"), ""));
    CHECK_THROWS_AS(attn::read_npy(q), std::runtime_error);
  }
  SUBCASE("a header that declares more data than the file holds is rejected before reading") {
    const fs::path p = craft("big_decl.npy", npy_bytes(dict("<f4", "(1000, 1000)"), "abcd"));
    CHECK_THROWS_WITH_AS(
        attn::read_npy(p),
        msg(p, "truncated data: expected 4000000 bytes for shape (1000, 1000) '<f4', got 4")
            .c_str(),
        std::runtime_error);
  }
}

TEST_CASE("only regular files are read: /dev/zero, a link to it, a pipe (issue 7)") {
  const fs::path zero = "/dev/zero";
  CHECK_THROWS_WITH_AS(
      attn::read_npy(zero),
      "/dev/zero: not a regular file (a device, a pipe or a socket), not a .npy file",
      std::runtime_error);
  const fs::path link = temp() / "zero_link.npy";
  fs::remove(link);
  fs::create_symlink(zero, link);
  CHECK_THROWS_WITH_AS(
      attn::read_npy(link),
      msg(link, "not a regular file (a device, a pipe or a socket), not a .npy file").c_str(),
      std::runtime_error);
  const fs::path loop = temp() / "loop.npy";  // a link to itself
  fs::remove(loop);
  fs::create_symlink(loop, loop);
  CHECK_THROWS_AS(attn::read_npy(loop), std::runtime_error);
}

TEST_CASE("a file above the size limit is rejected from its size alone") {
  const fs::path p = temp() / "sparse.npy";
  { std::ofstream(p, std::ios::binary) << "\x93NUMPY"; }
  fs::resize_file(p, attn::limits::kMaxNpyBytes + 1);  // sparse: no disk space used
  CHECK_THROWS_WITH_AS(attn::read_npy(p),
                       msg(p,
                           "the file holds 268435457 bytes, more than the limit of 256 MiB "
                           "for a .npy file")
                           .c_str(),
                       std::runtime_error);
  fs::remove(p);
}

TEST_CASE("an array with a zero dimension reads as no values (fuzz_npy's first finding)") {
  // The data part is empty: reading it copied 0 bytes to a null pointer, undefined behaviour.
  const std::string bytes = npy_bytes(dict("<f4", "(0, 3)"), "");
  const attn::NpyArray a = attn::parse_npy(bytes, "empty.npy");
  CHECK(a.shape == std::vector<std::size_t>{0, 3});
  CHECK(a.values.empty());
  const fs::path p = craft("empty_0x3.npy", bytes);
  CHECK(attn::read_npy(p).values.empty());
}

TEST_CASE("parse_npy reads bytes from memory like read_npy reads a file") {
  const std::string bytes = npy_bytes(dict("<f4", "(2,)"), raw<float>({1.5f, -2.0f}));
  const attn::NpyArray a = attn::parse_npy(bytes, "mem.npy");
  CHECK(a.shape == std::vector<std::size_t>{2});
  CHECK(a.values == std::vector<double>{1.5, -2.0});
  CHECK_THROWS_WITH_AS(attn::parse_npy(bytes.substr(0, 5), "mem.npy"),
                       "mem.npy: not a .npy file (bad magic)", std::runtime_error);
}

TEST_CASE("load_npy checks the rank and that the array holds floats") {
  const fs::path p = craft("w_q.npy", npy_bytes(dict("<f4", "(3,)"), raw<float>({1, 2, 3})));
  CHECK_THROWS_WITH_AS(attn::load_npy<2>(p),
                       msg(p, "expected a rank-2 float array, got shape (3,)").c_str(),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(attn::load_npy<4>(p),
                       msg(p, "expected a rank-4 float array, got shape (3,)").c_str(),
                       std::runtime_error);
  const fs::path q = craft("ints.npy", npy_bytes(dict("<i8", "(1, 2)"), raw<std::int64_t>({1, 2})));
  CHECK_THROWS_WITH_AS(attn::load_npy<2>(q),
                       msg(q, "expected a rank-2 float array, got (1, 2) '<i8'").c_str(),
                       std::runtime_error);
}

TEST_CASE("load_npy_tokens reads int64, int32 and integral floats as (B, T) ids") {
  const xt::xtensor<int, 2> want = {{0, 5, 64}, {3, 2, 1}};
  const fs::path i8 =
      craft("t8.npy", npy_bytes(dict("<i8", "(2, 3)"), raw<std::int64_t>({0, 5, 64, 3, 2, 1})));
  CHECK(attn::load_npy_tokens(i8) == want);
  const fs::path i4 =
      craft("t4.npy", npy_bytes(dict("<i4", "(2, 3)"), raw<std::int32_t>({0, 5, 64, 3, 2, 1})));
  CHECK(attn::load_npy_tokens(i4) == want);
  const fs::path f4 =
      craft("tf.npy", npy_bytes(dict("<f4", "(2, 3)"), raw<float>({0, 5, 64, 3, 2, 1})));
  CHECK(attn::load_npy_tokens(f4) == want);
  const fs::path fortran = craft(
      "tF.npy", npy_bytes(dict("<i8", "(2, 3)", true), raw<std::int64_t>({0, 3, 5, 2, 64, 1})));
  CHECK(attn::load_npy_tokens(fortran) == want);
}

TEST_CASE("load_npy_tokens rejects the wrong rank, fractions and ids beyond int") {
  const fs::path rank1 =
      craft("tr.npy", npy_bytes(dict("<i8", "(3,)"), raw<std::int64_t>({1, 2, 3})));
  CHECK_THROWS_WITH_AS(
      attn::load_npy_tokens(rank1),
      msg(rank1, "expected a rank-2 array of token ids (B, T), got shape (3,)").c_str(),
      std::runtime_error);
  const fs::path frac = craft("tq.npy", npy_bytes(dict("<f4", "(1, 2)"), raw<float>({1.0f, 1.5f})));
  CHECK_THROWS_WITH_AS(attn::load_npy_tokens(frac),
                       msg(frac, "token ids must be integers, got 1.5 at flat index 1").c_str(),
                       std::runtime_error);
  const fs::path nan =
      craft("tn.npy", npy_bytes(dict("<f8", "(1, 1)"), raw<double>({std::nan("")})));
  CHECK_THROWS_AS(attn::load_npy_tokens(nan), std::runtime_error);
  const fs::path big =
      craft("tb.npy", npy_bytes(dict("<i8", "(1, 2)"), raw<std::int64_t>({1, 5000000000LL})));
  CHECK_THROWS_WITH_AS(attn::load_npy_tokens(big),
                       msg(big, "token id 5000000000 at flat index 1 does not fit in int").c_str(),
                       std::runtime_error);
}

TEST_CASE("save_npy reports a folder it cannot write to") {
  const fs::path p = temp() / "no_such_dir" / "x.npy";
  CHECK_THROWS_WITH_AS(attn::save_npy(p, attn::Tensor<1>{1.0f}),
                       msg(p, "cannot open file for writing").c_str(), std::runtime_error);
}

}  // TEST_SUITE
