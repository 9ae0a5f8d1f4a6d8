// tests/gpt2_files.hpp: GPT-2 folders rewritten for tests (test_gpt2, tests/cli/make_bad_gpt2):
// a safetensors file as a JSON header plus each tensor's bytes, changed and written back, with
// offsets recomputed or (for broken files) exactly as given.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace attn::testing {

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::string bytes(static_cast<std::size_t>(std::filesystem::file_size(path)), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A safetensors file taken apart: its header (names in the file's order) and each tensor's bytes.
struct StFile {
  nlohmann::ordered_json header;
  std::map<std::string, std::string> data;  // name -> raw bytes
};

inline StFile read_st(const std::filesystem::path& path) {
  const std::string bytes = read_bytes(path);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  StFile f;
  f.header = nlohmann::ordered_json::parse(bytes.substr(8, n));
  for (auto& [name, entry] : f.header.items()) {
    if (name == "__metadata__") continue;
    const std::size_t b = entry["data_offsets"][0], e = entry["data_offsets"][1];
    f.data[name] = bytes.substr(8 + n + b, e - b);
  }
  return f;
}

// The bytes of a file with this header text and data, the length as given.
inline std::string st_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

// Writes f back: tensors in the header's order, offsets recomputed from their bytes.
inline std::string write_st(StFile f) {
  std::string data;
  for (auto& [name, entry] : f.header.items()) {
    if (name == "__metadata__") continue;
    const std::string& d = f.data.at(name);
    entry["data_offsets"] = {data.size(), data.size() + d.size()};
    data += d;
  }
  return st_bytes(f.header.dump(), data);
}

// A copy of the folder `src` (config.json, model.safetensors, vocab.json, merges.txt) in `dst`.
inline void copy_folder(const std::filesystem::path& src, const std::filesystem::path& dst) {
  std::filesystem::create_directories(dst);
  for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
    std::filesystem::copy_file(src / name, dst / name,
                               std::filesystem::copy_options::overwrite_existing);
  }
}

// Renames key `from` of an ordered JSON object to `to`, keeping its place.
inline void rename_key(nlohmann::ordered_json& j, const std::string& from, const std::string& to) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (auto& [k, v] : j.items()) out[k == from ? to : k] = v;
  j = out;
}

}  // namespace attn::testing
