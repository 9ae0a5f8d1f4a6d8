// Tests for attn/io/safetensors.hpp: the header checked against the file, F32 read as is, F16
// and BF16 converted exactly, every broken file a one-line error naming the file and the field.
#include "attn/io/safetensors.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// A safetensors file's bytes: the 8-byte length of `header`, `header`, then `data`.
std::string file_of(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// A file of two F32 tensors: a (2, 3) then b (2,).
std::string good_file() {
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[24,32]},"__metadata__":{"format":"pt"}})";
  return file_of(header, floats({1, 2, 3, 4, 5, 6, -7, 8.5f}));
}

attn::SafetensorsHeader parse(const std::string& bytes) {
  return attn::parse_safetensors_header(bytes, bytes.size(), "m.safetensors");
}

// The one-line message of parsing `bytes`.
std::string error_of(const std::string& bytes) {
  try {
    (void)parse(bytes);
  } catch (const attn::SafetensorsError& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.rfind("m.safetensors: ", 0) == 0);
    return what;
  }
  FAIL("no error for a broken file");
  return "";
}

std::string one_tensor(const std::string& dtype, const std::string& shape,
                       const std::string& offsets) {
  return R"({"t":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets +
         "}}";
}

}  // namespace

TEST_SUITE("safetensors") {

TEST_CASE("a good file: tensors by offset, metadata, values read back") {
  const std::string bytes = good_file();
  const attn::SafetensorsHeader h = parse(bytes);
  REQUIRE(h.tensors.size() == 2);
  CHECK(h.tensors[0].name == "a");
  CHECK(h.tensors[0].shape == std::vector<std::size_t>{2, 3});
  CHECK(h.tensors[0].elements() == 6);
  CHECK(h.tensors[1].begin == 24);
  CHECK(h.metadata.at("format") == "pt");
  REQUIRE(h.find("b") != nullptr);
  CHECK(h.find("c") == nullptr);
  std::vector<float> b(2);
  attn::decode_tensor(bytes, h, *h.find("b"), b);
  CHECK(b == std::vector<float>{-7.0f, 8.5f});
  // The same from a file on disk.
  const fs::path path = fs::temp_directory_path() / "attn_test_good.safetensors";
  std::ofstream(path, std::ios::binary) << bytes;
  const attn::SafetensorsHeader disk = attn::read_safetensors_header(path);
  std::vector<float> a(6);
  attn::read_tensor(disk, *disk.find("a"), a);
  CHECK(a == std::vector<float>{1, 2, 3, 4, 5, 6});
  fs::remove(path);
}

TEST_CASE("F16 and BF16 are converted exactly, subnormals and signs included") {
  CHECK(attn::half_to_float(0x3c00) == 1.0f);
  CHECK(attn::half_to_float(0xc000) == -2.0f);
  CHECK(attn::half_to_float(0x7bff) == 65504.0f);
  CHECK(attn::half_to_float(0x0001) == std::ldexp(1.0f, -24));  // the smallest subnormal
  CHECK(attn::half_to_float(0x03ff) == 1023.0f * std::ldexp(1.0f, -24));
  CHECK(std::signbit(attn::half_to_float(0x8000)));
  CHECK(std::isinf(attn::half_to_float(0x7c00)));
  CHECK(std::isnan(attn::half_to_float(0x7e00)));
  CHECK(attn::bfloat16_to_float(0x3f80) == 1.0f);
  CHECK(attn::bfloat16_to_float(0xc0a0) == -5.0f);
  // Through a file: [1.0, -2.0] in F16, [1.0, -5.0] in BF16.
  const std::string header = R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
                             R"("g":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}})";
  const std::string bytes = file_of(header, std::string("\x00\x3c\x00\xc0\x80\x3f\xa0\xc0", 8));
  const attn::SafetensorsHeader h = parse(bytes);
  std::vector<float> v(2);
  attn::decode_tensor(bytes, h, *h.find("h"), v);
  CHECK(v == std::vector<float>{1.0f, -2.0f});
  attn::decode_tensor(bytes, h, *h.find("g"), v);
  CHECK(v == std::vector<float>{1.0f, -5.0f});
}

TEST_CASE("a scalar and an empty tensor are tensors too") {
  const std::string header = R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                             R"("e":{"dtype":"F32","shape":[0,5],"data_offsets":[4,4]}})";
  const attn::SafetensorsHeader h = parse(file_of(header, floats({3.0f})));
  CHECK(h.find("s")->elements() == 1);
  CHECK(h.find("e")->elements() == 0);
}

TEST_CASE("a truncated file names what is missing") {
  const std::string bytes = good_file();
  CHECK(error_of(bytes.substr(0, 5)).find("truncated") != std::string::npos);
  // Cut inside the data: the header's length still fits, the offsets run past the end.
  CHECK(error_of(bytes.substr(0, bytes.size() - 4))
            .find("tensor 'b': data_offsets [24, 32] run "
                  "past the data section") != std::string::npos);
  // Cut inside the header.
  CHECK(error_of(bytes.substr(0, 20)).find("runs past the end of the file") != std::string::npos);
}

TEST_CASE("a header length larger than the file is refused before anything is allocated") {
  std::string bytes = good_file();
  const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max() - 3;
  std::memcpy(bytes.data(), &huge, 8);
  CHECK(error_of(bytes).find("header length 18446744073709551612 runs past the end") !=
        std::string::npos);
}

TEST_CASE("offsets that overlap, leave a hole, run past the end or disagree with the shape") {
  const std::string data = floats({1, 2, 3, 4});
  CHECK(error_of(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         floats({1, 2, 3})))
            .find("tensor 'b': data_offsets [4, 12] overlap the tensor before it") !=
        std::string::npos);
  CHECK(error_of(file_of(one_tensor("F32", "[2]", "[8,16]"), data))
            .find("leave bytes 0 to 8 unused") != std::string::npos);
  CHECK(error_of(file_of(one_tensor("F32", "[2]", "[8,24]"), data))
            .find("run past the data section (16 bytes after the header)") != std::string::npos);
  CHECK(error_of(file_of(one_tensor("F32", "[3]", "[0,16]"), data))
            .find("hold 16 bytes, but F32 of shape (3,) needs 12") != std::string::npos);
  CHECK(error_of(file_of(one_tensor("F32", "[2]", "[0,8]"), data)).find("trailing bytes") !=
        std::string::npos);
  CHECK(error_of(file_of(one_tensor("F32", "[2]", "[8,0]"), data))
            .find("data_offsets [8, 0] run past") != std::string::npos);
}

TEST_CASE("a shape whose byte count overflows is refused") {
  CHECK(error_of(
            file_of(one_tensor("F32", "[4294967296,4294967296]", "[0,16]"), floats({1, 2, 3, 4})))
            .find("overflows a byte count") != std::string::npos);
  CHECK(error_of(file_of(one_tensor("F32", "[-1]", "[0,16]"), floats({1, 2, 3, 4})))
            .find("shape must hold non-negative integers") != std::string::npos);
}

TEST_CASE("dtypes other than F32, F16 and BF16 are refused by name") {
  for (const char* dtype : {"F64", "I64", "I32", "U8", "BOOL", "F8_E4M3"}) {
    CAPTURE(dtype);
    CHECK(error_of(file_of(one_tensor(dtype, "[2]", "[0,16]"), floats({1, 2, 3, 4})))
              .find(std::string("tensor 't': dtype ") + dtype + " is not supported") !=
          std::string::npos);
  }
}

TEST_CASE("a header that is not the format's JSON names the field") {
  const std::string data = floats({1, 2});
  CHECK(error_of(file_of("{not json", data)).find("not valid JSON") != std::string::npos);
  CHECK(error_of(file_of("[1, 2]", data)).find("not a JSON object") != std::string::npos);
  // A number no type holds (found by fuzz_safetensors: nlohmann throws out_of_range for it).
  CHECK(error_of(file_of(R"({"t":{"dtype":"F32","shape":[2E9999999],"data_offsets":[0,8]}})", data))
            .find("a number out of range") != std::string::npos);
  CHECK(error_of(file_of(R"({"t":{"dtype":"F32","shape":[2]}})", data)).find("no data_offsets") !=
        std::string::npos);
  CHECK(error_of(file_of(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", data))
            .find("unknown field 'x'") != std::string::npos);
  CHECK(error_of(file_of(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data))
            .find("data_offsets must be [begin, end]") != std::string::npos);
  CHECK(error_of(file_of(R"({"__metadata__":{"a":1}})", "")).find("__metadata__ 'a'") !=
        std::string::npos);
  // A name with control characters is shown escaped, on one line.
  CHECK(error_of(file_of(one_tensor("F64", "[1]", "[0,8]").replace(2, 1, "t\\n"), floats({1, 2})))
            .find("'t\\x0a'") != std::string::npos);
}

TEST_CASE("a file that is not a regular file, or missing, is named") {
  CHECK_THROWS_WITH_AS(attn::read_safetensors_header("/no/such/file.safetensors"),
                       "/no/such/file.safetensors: cannot read: no such file",
                       attn::SafetensorsError);
  CHECK_THROWS_WITH_AS(attn::read_safetensors_header("/dev/zero"),
                       "/dev/zero: cannot read: not a regular file", attn::SafetensorsError);
}

}  // TEST_SUITE
