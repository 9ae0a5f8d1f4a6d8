// tests/fuzz/fuzz_tokenizer.cpp: libFuzzer target for chapter 13's tokenizer files. Each input
// is a vocab.json and a merges.txt, separated by the first NUL byte (JSON text never holds one);
// attn::Bpe::parse must accept it or throw BpeError, nothing else, and never crash or allocate
// beyond the input's size. What loads then encodes the input itself: the ids must spell its
// bytes back exactly, and decoding must give valid UTF-8. An input that starts with the NUL (an
// empty vocab.json) is read with the committed tests/tokens/sonnets-1024/vocab.json instead, so
// that merges.txt files made of real tokens, in any order, load and get encoded with.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/bpe.hpp"
#include "attn/io/text.hpp"

namespace {

// The committed tokenizer's vocab.json (read once).
const std::string& real_vocab() {
  static const std::string text = [] {
    std::ifstream in(ATTN_TOKENS_DIR "/sonnets-1024/vocab.json", std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    if (s.str().empty()) std::abort();  // the fuzz build runs from a source tree
    return s.str();
  }();
  return text;
}

std::size_t g_inputs = 0, g_loaded = 0;
void report() {
  std::fprintf(stderr, "fuzz_tokenizer: %zu inputs, %zu loaded and round-tripped\n", g_inputs,
               g_loaded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (g_inputs++ == 0) std::atexit(report);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view vocab = nul == 0 ? std::string_view(real_vocab()) : input.substr(0, nul);
  const std::string_view merges = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  try {
    const attn::Bpe bpe = attn::Bpe::parse(vocab, merges, "fuzz");
    ++g_loaded;
    const std::vector<int> ids = bpe.encode(input);
    if (bpe.bytes_of(ids) != input) std::abort();  // encoding lost or changed bytes
    (void)attn::decode_utf8(bpe.decode(ids));      // throws (uncaught: a finding) if not UTF-8
  } catch (const attn::BpeError&) {
    // a refused file: fine
  }
  return 0;
}
