// attn/io/corpus.hpp: where the text comes from.
// Every chapter runs on a fresh clone: the repository ships a small corpus (data/sonnets.txt).
// The full Tiny Shakespeare (1,115,394 bytes) is used when the learner points at it, with
// --data PATH or the ATTN_DATA environment variable (the flag wins). scripts/get-data.sh
// downloads it and checks its sha256.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace attn {

struct Corpus {
  std::string text;    // the whole file, valid UTF-8, never empty
  std::string origin;  // where it came from, for the narration: "data/sonnets.txt (shipped)"
  std::filesystem::path path;  // the file it was read from (what a checkpoint records)
};

// The path of the corpus the repository ships.
std::filesystem::path shipped_corpus_path();

// Reads a corpus file: a regular file (or a link to one) of at most limits::kMaxCorpusBytes
// (64 MiB). Throws std::runtime_error with a one-line message for a missing or unreadable file
// ("cannot read corpus 'x.txt': No such file or directory"), a device or pipe ("cannot read
// corpus '/dev/zero': not a regular file ..."), a file above the limit, an empty file
// ("corpus 'x.txt' is empty") or one that is not UTF-8 ("corpus 'x.txt' is not valid UTF-8:
// invalid UTF-8 at byte 12 (0xff)").
Corpus read_corpus(const std::filesystem::path& path);

// The corpus a chapter should use: --data if given, else $ATTN_DATA if set and non-empty,
// else the shipped one.
Corpus load_corpus(const std::optional<std::string>& data_flag);

}  // namespace attn
