// Where the text comes from (see attn/io/corpus.hpp): the first thing every chapter does.
// The shipped data/sonnets.txt makes a fresh clone work offline; --data or $ATTN_DATA points at
// the full Tiny Shakespeare once scripts/get-data.sh has fetched it.
#include "attn/io/corpus.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "attn/core/limits.hpp"
#include "attn/io/text.hpp"

namespace attn {

namespace {

// A path as bytes (it may hold a newline or a byte that is not UTF-8): shown on one line.
std::string quoted(const std::filesystem::path& path) {
  return "'" + printable_bytes(path.string()) + "'";
}

[[noreturn]] void cannot_read(const std::filesystem::path& path, const std::string& reason) {
  throw std::runtime_error("cannot read corpus " + quoted(path) + ": " + reason);
}

}  // namespace

std::filesystem::path shipped_corpus_path() {
  return std::filesystem::path(ATTN_SOURCE_DIR) / "data" / "sonnets.txt";
}

Corpus read_corpus(const std::filesystem::path& path) {
  // 1. Ask the filesystem first, so a missing file and a directory get the operating system's
  //    own words ("No such file or directory", "Is a directory") instead of a vague failure.
  //    Only a regular file (or a link to one) is read: /dev/zero or a pipe never ends.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) cannot_read(path, ec.message());
  if (!std::filesystem::exists(status)) {
    cannot_read(path, std::make_error_code(std::errc::no_such_file_or_directory).message());
  }
  if (std::filesystem::is_directory(status)) {
    cannot_read(path, std::make_error_code(std::errc::is_a_directory).message());
  }
  if (!std::filesystem::is_regular_file(status)) {
    cannot_read(path, "not a regular file (a device, a pipe or a socket); give a text file");
  }
  const auto too_large = [&path](const std::string& size) {
    cannot_read(path, "the file holds " + size + " bytes, more than the limit of " +
                          bytes_text(limits::kMaxCorpusBytes) + " for a corpus");
  };
  if (const auto size = std::filesystem::file_size(path, ec);
      !ec && size > limits::kMaxCorpusBytes) {
    too_large(std::to_string(size));
  }

  // 2. Read the whole file, never more than the limit (the file may grow while we read). C
  //    stdio sets errno on failure (permission denied...), which iostreams do not promise.
  errno = 0;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) cannot_read(path, errno != 0 ? std::strerror(errno) : "cannot open the file");
  Corpus corpus;
  char buffer[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
    corpus.text.append(buffer, got);
    if (corpus.text.size() > limits::kMaxCorpusBytes)
      too_large("over " + std::to_string(limits::kMaxCorpusBytes));
  }
  if (std::ferror(file.get())) {
    cannot_read(path, errno != 0 ? std::strerror(errno) : "read error");
  }

  // 3. The rest of the course assumes at least one character and valid UTF-8.
  if (corpus.text.empty()) throw std::runtime_error("corpus " + quoted(path) + " is empty");
  try {
    (void)decode_utf8(corpus.text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("corpus " + quoted(path) + " is not valid UTF-8: " + e.what());
  }
  corpus.origin = printable_bytes(path.string());
  corpus.path = path;
  return corpus;
}

Corpus load_corpus(const std::optional<std::string>& data_flag) {
  // The flag is what the learner typed just now, so it beats the environment, which beats the
  // default. Origins name the path as given (never the absolute source folder of the shipped
  // file), so the narration prints the same bytes on every machine.
  if (data_flag) {
    Corpus corpus = read_corpus(*data_flag);
    corpus.origin = printable_bytes(*data_flag) + " (--data)";
    return corpus;
  }
  const char* env = std::getenv("ATTN_DATA");
  if (env != nullptr && *env != '\0') {
    Corpus corpus;
    try {
      corpus = read_corpus(env);
    } catch (const std::runtime_error& e) {
      // An old export in a shell profile is easy to forget: say where the path came from.
      throw std::runtime_error(std::string(e.what()) + " (from $ATTN_DATA)");
    }
    corpus.origin = printable_bytes(env) + " (ATTN_DATA)";
    return corpus;
  }
  Corpus corpus = read_corpus(shipped_corpus_path());
  corpus.origin = "data/sonnets.txt (shipped)";
  return corpus;
}

}  // namespace attn
