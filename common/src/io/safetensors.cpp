// safetensors.cpp: Hugging Face's .safetensors format, read and checked (chapter 14;
// attn/io/safetensors.hpp). The JSON header is parsed by nlohmann-json; every number it holds
// is checked against the file's size before a byte of tensor data is read or allocated.
#include "attn/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/core/check.hpp"

namespace attn {

static_assert(std::endian::native == std::endian::little,
              "safetensors.cpp copies little-endian file data straight into memory");

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

[[noreturn]] void fail(const fs::path& path, std::string_view what) {
  throw SafetensorsError(fmt::format("{}: {}", path.string(), what));
}

// A name from the file, printable on one line: control characters and quotes escaped, long
// names cut.
std::string shown(std::string_view name) {
  std::string out;
  for (const char ch : name.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f || ch == '\'' || ch == '\\') {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += ch;
    }
  }
  if (name.size() > 80) out += "...";
  return out;
}

StDtype parse_dtype(const fs::path& path, const std::string& tensor, const json& v) {
  if (!v.is_string()) fail(path, fmt::format("tensor '{}': dtype is not a string", shown(tensor)));
  const std::string& d = v.get_ref<const std::string&>();
  if (d == "F32") return StDtype::f32;
  if (d == "F16") return StDtype::f16;
  if (d == "BF16") return StDtype::bf16;
  fail(path, fmt::format("tensor '{}': dtype {} is not supported (F32, or F16 and BF16, converted "
                         "to float on load)",
                         shown(tensor), shown(d)));
}

// A non-negative integer of the header that fits in size_t.
std::size_t header_size(const fs::path& path, const std::string& tensor, const char* field,
                        const json& v) {
  if (!v.is_number_unsigned()) {
    fail(path,
         fmt::format("tensor '{}': {} must hold non-negative integers", shown(tensor), field));
  }
  const auto n = v.get<std::uint64_t>();
  if (n > std::numeric_limits<std::size_t>::max()) {
    fail(path, fmt::format("tensor '{}': {} value {} is too large", shown(tensor), field, n));
  }
  return static_cast<std::size_t>(n);
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string_view st_dtype_name(StDtype d) {
  switch (d) {
    case StDtype::f32:
      return "F32";
    case StDtype::f16:
      return "F16";
    case StDtype::bf16:
      return "BF16";
  }
  return "?";
}

std::size_t st_dtype_bytes(StDtype d) { return d == StDtype::f32 ? 4 : 2; }

std::size_t StTensor::elements() const {
  std::size_t n = 1;
  for (const std::size_t s : shape) n *= s;  // checked against overflow when parsed
  return n;
}

const StTensor* SafetensorsHeader::find(std::string_view name) const {
  for (const StTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

SafetensorsHeader parse_safetensors_header(std::string_view prefix, std::uint64_t file_size,
                                           const fs::path& path) {
  // 1. N, the header's length: 8 little-endian bytes, then N bytes inside the file.
  if (file_size < 8 || prefix.size() < 8) {
    fail(path, fmt::format("file is truncated: {} bytes, but a safetensors file starts with an "
                           "8-byte header length",
                           file_size));
  }
  std::uint64_t n = 0;
  std::memcpy(&n, prefix.data(), 8);
  if (n > file_size - 8) {
    fail(path, fmt::format("header length {} runs past the end of the file ({} bytes; the header "
                           "must fit in the {} bytes after the length)",
                           n, file_size, file_size - 8));
  }
  if (n > kMaxSafetensorsHeader) {
    fail(path, fmt::format("header length {} is above the format's limit of {} bytes", n,
                           kMaxSafetensorsHeader));
  }
  if (n < 2) fail(path, fmt::format("header length {} is too short for a JSON object", n));
  if (prefix.size() - 8 < n) {
    fail(path, fmt::format("file is truncated inside its {}-byte header", n));
  }
  const std::size_t data_size = static_cast<std::size_t>(file_size - 8 - n);
  // 2. The JSON: an object of tensors, and perhaps "__metadata__".
  json header;
  try {
    header = json::parse(prefix.substr(8, static_cast<std::size_t>(n)));
  } catch (const json::parse_error& e) {
    fail(path, fmt::format("header is not valid JSON (error at byte {} of the header)", e.byte));
  } catch (const json::exception&) {  // out_of_range: a number too large for any type
    fail(path, "header is not valid JSON (a number out of range)");
  }
  if (!header.is_object()) fail(path, "header is not a JSON object of tensors");
  SafetensorsHeader out;
  out.path = path;
  out.data_start = static_cast<std::size_t>(8 + n);
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, "__metadata__ is not an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          fail(path, fmt::format("__metadata__ '{}' is not a string", shown(key)));
        }
        out.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object()) fail(path, fmt::format("tensor '{}' is not an object", shown(name)));
    for (const auto& [field, value] : entry.items()) {
      (void)value;
      if (field != "dtype" && field != "shape" && field != "data_offsets") {
        fail(path, fmt::format("tensor '{}': unknown field '{}' (dtype, shape, data_offsets)",
                               shown(name), shown(field)));
      }
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(field)) {
        fail(path, fmt::format("tensor '{}': no {} field", shown(name), field));
      }
    }
    StTensor t;
    t.name = name;
    t.dtype = parse_dtype(path, name, entry["dtype"]);
    const json& shape = entry["shape"];
    if (!shape.is_array() || shape.size() > 8) {
      fail(path,
           fmt::format("tensor '{}': shape must be an array of at most 8 sizes", shown(name)));
    }
    // 3. Its byte count: product(shape) * dtype size, every product checked.
    std::size_t bytes = st_dtype_bytes(t.dtype);
    for (const json& s : shape) {
      const std::size_t d = header_size(path, name, "shape", s);
      t.shape.push_back(d);
      if (d != 0 && bytes > std::numeric_limits<std::size_t>::max() / d) {
        fail(path, fmt::format("tensor '{}': shape {} overflows a byte count", shown(name),
                               shape_text(t.shape)));
      }
      bytes *= d;
    }
    const json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2) {
      fail(path, fmt::format("tensor '{}': data_offsets must be [begin, end]", shown(name)));
    }
    t.begin = header_size(path, name, "data_offsets", offsets[0]);
    t.end = header_size(path, name, "data_offsets", offsets[1]);
    if (t.begin > t.end || t.end > data_size) {
      fail(path, fmt::format("tensor '{}': data_offsets [{}, {}] run past the data section "
                             "({} bytes after the header)",
                             shown(name), t.begin, t.end, data_size));
    }
    if (t.end - t.begin != bytes) {
      fail(path, fmt::format("tensor '{}': data_offsets [{}, {}] hold {} bytes, but {} of shape "
                             "{} needs {}",
                             shown(name), t.begin, t.end, t.end - t.begin, st_dtype_name(t.dtype),
                             shape_text(t.shape), bytes));
    }
    out.tensors.push_back(std::move(t));
  }
  // 4. The offsets in order tile the data section: no overlap, no hole, nothing after the last.
  std::sort(out.tensors.begin(), out.tensors.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::size_t at = 0;
  for (const StTensor& t : out.tensors) {
    if (t.begin < at) {
      fail(path, fmt::format("tensor '{}': data_offsets [{}, {}] overlap the tensor before it, "
                             "which ends at {}",
                             shown(t.name), t.begin, t.end, at));
    }
    if (t.begin > at) {
      fail(path, fmt::format("tensor '{}': data_offsets [{}, {}] leave bytes {} to {} unused "
                             "(tensors must follow each other)",
                             shown(t.name), t.begin, t.end, at, t.begin));
    }
    at = t.end;
  }
  if (at != data_size) {
    fail(path, fmt::format("the tensors end at byte {} of the data section, but the file holds {} "
                           "(trailing bytes)",
                           at, data_size));
  }
  return out;
}

SafetensorsHeader read_safetensors_header(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) fail(path, "cannot read: no such file");
  if (!fs::is_regular_file(st)) fail(path, "cannot read: not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot read its size");
  if (size > kMaxSafetensorsBytes) {
    fail(path, fmt::format("file of {} bytes is above the limit of {} bytes", size,
                           kMaxSafetensorsBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  char len_bytes[8] = {};
  in.read(len_bytes, 8);
  std::string prefix(len_bytes, static_cast<std::size_t>(in.gcount()));
  if (prefix.size() == 8) {
    std::uint64_t n = 0;
    std::memcpy(&n, len_bytes, 8);
    // Read the header only once its length is known to fit in the file (checked again below).
    if (n <= size - 8 && n <= kMaxSafetensorsHeader) {
      prefix.resize(8 + static_cast<std::size_t>(n));
      in.read(prefix.data() + 8, static_cast<std::streamsize>(n));
      prefix.resize(8 + static_cast<std::size_t>(in.gcount()));
    }
  }
  return parse_safetensors_header(prefix, size, path);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  std::uint32_t bits = 0;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // infinity or NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant != 0) {
    // Subnormal: mant * 2^-24, exact in float.
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign != 0 ? -v : v;
  } else {
    bits = sign;  // +-0
  }
  return std::bit_cast<float>(bits);
}

float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

namespace {

// The tensor's bytes `raw` (t's byte count) into floats.
void convert(const StTensor& t, const char* raw, std::span<float> out) {
  const std::size_t n = out.size();
  if (t.dtype == StDtype::f32) {
    if (n != 0) std::memcpy(out.data(), raw, n * 4);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t v = 0;
    std::memcpy(&v, raw + 2 * i, 2);
    out[i] = t.dtype == StDtype::f16 ? half_to_float(v) : bfloat16_to_float(v);
  }
}

void check_out(const SafetensorsHeader& h, const StTensor& t, std::span<float> out) {
  if (out.size() != t.elements()) {
    fail(h.path, fmt::format("tensor '{}': {} elements asked for, the tensor holds {}",
                             shown(t.name), out.size(), t.elements()));
  }
}

}  // namespace

void read_tensor(const SafetensorsHeader& h, const StTensor& t, std::span<float> out) {
  check_out(h, t, out);
  std::ifstream in(h.path, std::ios::binary);
  if (!in) fail(h.path, "cannot open");
  in.seekg(static_cast<std::streamoff>(h.data_start + t.begin));
  const std::size_t bytes = t.end - t.begin;
  if (t.dtype == StDtype::f32) {
    // Straight into the floats: no second copy of a 150 MB embedding table.
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(bytes));
    if (static_cast<std::size_t>(in.gcount()) != bytes) {
      fail(h.path,
           fmt::format("tensor '{}': file is truncated (changed since its header was read?)",
                       shown(t.name)));
    }
    return;
  }
  std::vector<char> raw(bytes);
  in.read(raw.data(), static_cast<std::streamsize>(bytes));
  if (static_cast<std::size_t>(in.gcount()) != bytes) {
    fail(h.path, fmt::format("tensor '{}': file is truncated (changed since its header was read?)",
                             shown(t.name)));
  }
  convert(t, raw.data(), out);
}

void decode_tensor(std::string_view file_bytes, const SafetensorsHeader& h, const StTensor& t,
                   std::span<float> out) {
  check_out(h, t, out);
  if (h.data_start + t.end > file_bytes.size()) {
    fail(h.path, fmt::format("tensor '{}': the bytes given end before the tensor", shown(t.name)));
  }
  convert(t, file_bytes.data() + h.data_start + t.begin, out);
}

}  // namespace attn
