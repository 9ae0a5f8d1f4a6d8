// keyvalue.cpp: `key value` lines (attn/io/keyvalue.hpp).
#include "attn/io/keyvalue.hpp"

#include <fmt/format.h>

#include <set>

namespace attn {

namespace {

// At most 40 bytes of a line for a message, every byte outside printable ASCII as \xNN (a line of
// a binary file may hold anything, a terminal escape included).
std::string shown(std::string_view line) {
  std::string out;
  for (const char c : line.substr(0, 40)) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
  }
  return out;
}

}  // namespace

std::vector<KeyValue> parse_key_values(std::string_view text) {
  std::vector<KeyValue> out;
  std::set<std::string, std::less<>> seen;
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++number;
    std::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // a file saved on Windows
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;  // blank, or a comment
    line.remove_prefix(first);
    const std::size_t gap = line.find_first_of(" \t");
    if (gap == std::string_view::npos || gap + 1 == line.size()) {
      throw KeyValueError(fmt::format("line {} is not `key value`: '{}'", number, shown(line)));
    }
    KeyValue kv{number, std::string(line.substr(0, gap)), std::string(line.substr(gap + 1))};
    if (!seen.insert(kv.key).second) {
      throw KeyValueError(fmt::format("line {}: key '{}' appears twice", number, shown(kv.key)));
    }
    out.push_back(std::move(kv));
  }
  return out;
}

}  // namespace attn
