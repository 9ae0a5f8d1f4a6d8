// tests/tokens/test_hard_strings.cpp: attn::Bpe against Hugging Face's tokenizer and tiktoken on
// hard strings (emoji, CJK, combining marks, whitespace runs, contractions, numbers, invalid
// UTF-8). hard_strings_expected.json was written by scripts/make_bpe_fixture.py from the same
// vocab.json + merges.txt (sonnets-1024/, trained by 13_tokens); it holds the chunks of Python's
// `regex` module, both tokenizers' ids (they agree on every string) and, for invalid bytes,
// Python's bytes.decode(errors="replace") and both tokenizers' decoding.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/io/bpe.hpp"

namespace {

const std::filesystem::path kHere = std::filesystem::path(ATTN_SOURCE_DIR) / "tests" / "tokens";

nlohmann::json expected() {
  std::ifstream in(kHere / "hard_strings_expected.json", std::ios::binary);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

}  // namespace

TEST_SUITE("tokens.hard_strings") {

TEST_CASE("the fixture's tokenizers agree with each other") {
  const nlohmann::json fixture = expected();
  CHECK(fixture.at("disagreements").get<int>() == 0);
  CHECK(fixture.at("cases").size() >= 30);
}

TEST_CASE("chunks, ids and decoding match Hugging Face's tokenizer and tiktoken") {
  const attn::Bpe bpe = attn::Bpe::load(kHere / "sonnets-1024");
  REQUIRE(bpe.vocab_size() == 1024);
  int texts = 0, hexes = 0;
  const nlohmann::json fixture = expected();  // kept alive: the loop reads into it
  for (const nlohmann::json& c : fixture.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    CAPTURE(name);
    if (c.contains("text")) {
      ++texts;
      const std::string text = c.at("text").get<std::string>();
      std::vector<std::string> chunks;
      for (const auto chunk : attn::pretokenize(text)) chunks.emplace_back(chunk);
      CHECK(chunks == c.at("chunks").get<std::vector<std::string>>());
      const std::vector<int> ids = bpe.encode(text);
      CHECK(ids == c.at("hf").get<std::vector<int>>());
      CHECK(ids == c.at("tiktoken").get<std::vector<int>>());
      CHECK(bpe.decode(ids) == c.at("hf_decoded").get<std::string>());
      CHECK(bpe.decode(ids) == text);
    } else {
      ++hexes;
      const std::string raw = from_hex(c.at("hex").get<std::string>());
      const std::vector<int> byte_ids = c.at("byte_ids").get<std::vector<int>>();
      const std::string python = c.at("python_decoded").get<std::string>();
      CHECK(bpe.decode(byte_ids) == python);
      CHECK(python == c.at("hf_decoded").get<std::string>());
      CHECK(python == c.at("tiktoken_decoded").get<std::string>());
      CHECK(attn::utf8_replace(raw) == python);
      // attn::Bpe also encodes bytes that are not UTF-8 (Python's tokenizers take str only):
      // the ids spell the bytes back exactly.
      CHECK(bpe.bytes_of(bpe.encode(raw)) == raw);
    }
  }
  CHECK(texts >= 20);
  CHECK(hexes >= 8);
}

}  // TEST_SUITE
