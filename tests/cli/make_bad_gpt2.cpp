// tests/cli/make_bad_gpt2.cpp: writes the broken GPT-2 folders of tests/cli/ch14.cmake at test
// time (so that nothing broken is committed), each a copy of the shipped fixture tests/gpt2/tiny
// with one thing wrong:  make_bad_gpt2 FIXTURE_DIR OUT_DIR
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "gpt2_files.hpp"

namespace fs = std::filesystem;
using namespace attn::testing;

namespace {

// A copy of the fixture in out/name, with its model.safetensors replaced by `bytes`.
void folder(const fs::path& src, const fs::path& out, const std::string& name,
            const std::string& bytes) {
  copy_folder(src, out / name);
  write_bytes(out / name / "model.safetensors", bytes);
}

// The fixture's file with its JSON header text changed (data unchanged, length recomputed).
std::string with_header(const std::string& file, const std::string& from, const std::string& to) {
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  std::string header = file.substr(8, n);
  const std::size_t at = header.find(from);
  if (at == std::string::npos) throw std::runtime_error("no '" + from + "' in the header");
  header.replace(at, from.size(), to);
  return st_bytes(header, file.substr(8 + n));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: make_bad_gpt2 FIXTURE_DIR OUT_DIR\n";
    return 2;
  }
  try {
    const fs::path src = argv[1], out = argv[2];
    fs::remove_all(out);
    const std::string good = read_bytes(src / "model.safetensors");
    // Cut short: in the data section, and inside the 8-byte length.
    folder(src, out, "truncated", good.substr(0, good.size() - 100));
    folder(src, out, "truncated_length", good.substr(0, 5));
    // A header length far past the file's end.
    std::string huge = good;
    const std::uint64_t n = std::uint64_t{1} << 40;
    std::memcpy(huge.data(), &n, 8);
    folder(src, out, "oversized_header", huge);
    // Offsets: ln_f.weight given ln_f.bias's bytes (they overlap); wte's end moved past the end.
    StFile f = read_st(src / "model.safetensors");
    std::string overlap_header = f.header.dump();
    {
      StFile g = f;
      // Rewrite with recomputed offsets first, then point ln_f.weight at ln_f.bias's range.
      const std::string file = write_st(g);
      std::uint64_t len = 0;
      std::memcpy(&len, file.data(), 8);
      const nlohmann::ordered_json h = nlohmann::ordered_json::parse(file.substr(8, len));
      const auto bias = h["transformer.ln_f.bias"]["data_offsets"].dump();
      const auto weight = h["transformer.ln_f.weight"]["data_offsets"].dump();
      folder(src, out, "overlap",
             with_header(file,
                         "\"transformer.ln_f.weight\":{\"dtype\":\"F32\","
                         "\"shape\":[32],\"data_offsets\":" +
                             weight,
                         "\"transformer.ln_f.weight\":{\"dtype\":\"F32\","
                         "\"shape\":[32],\"data_offsets\":" +
                             bias));
      const auto wte = h["transformer.wte.weight"]["data_offsets"];
      const std::uint64_t b = wte[0], e = wte[1];
      folder(src, out, "past_end",
             with_header(file, wte.dump(),
                         "[" + std::to_string(b + 8) + "," + std::to_string(e + 8) + "]"));
      // An unsupported dtype.
      folder(src, out, "dtype_f64",
             with_header(file, "\"transformer.wpe.weight\":{\"dtype\":\"F32\"",
                         "\"transformer.wpe.weight\":{\"dtype\":\"F64\""));
    }
    // A missing tensor.
    {
      StFile g = f;
      g.header.erase("transformer.h.1.mlp.c_fc.weight");
      folder(src, out, "missing", write_st(g));
    }
    // config.json disagreeing with the tensors: n_embd 48.
    copy_folder(src, out / "config_disagrees");
    std::string config = read_bytes(src / "config.json");
    config.replace(config.find("\"n_embd\": 32"), 12, "\"n_embd\": 48");
    write_bytes(out / "config_disagrees" / "config.json", config);
    // No tokenizer: --prompt needs one.
    copy_folder(src, out / "no_tokenizer");
    fs::remove(out / "no_tokenizer" / "vocab.json");
    std::cout << "ok: broken GPT-2 folders in " << out.string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "make_bad_gpt2: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
