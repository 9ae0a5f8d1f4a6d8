// Tests for attn/io/corpus.hpp: reading the text every chapter starts from.
// Bad files get one-line messages a learner can act on; --data beats $ATTN_DATA beats the
// shipped data/sonnets.txt; and the shipped corpus itself is checked to be usable.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include "attn/io/corpus.hpp"
#include "attn/core/limits.hpp"
#include "attn/io/text.hpp"
#include "attn/io/data.hpp"

namespace fs = std::filesystem;

namespace {

// A fresh folder under the system temp directory, removed with everything in it at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("attn_test_corpus_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path / "locked.txt", fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  fs::path write(const std::string& name, const std::string& contents) const {
    const fs::path file = path / name;
    std::ofstream(file, std::ios::binary) << contents;
    return file;
  }
};

// Sets (or unsets, with nullopt) ATTN_DATA for one test and restores the caller's value after.
struct EnvGuard {
  std::optional<std::string> saved;
  explicit EnvGuard(const std::optional<std::string>& value) {
    if (const char* old = std::getenv("ATTN_DATA")) saved = old;
    if (value) {
      ::setenv("ATTN_DATA", value->c_str(), 1);
    } else {
      ::unsetenv("ATTN_DATA");
    }
  }
  ~EnvGuard() {
    if (saved) {
      ::setenv("ATTN_DATA", saved->c_str(), 1);
    } else {
      ::unsetenv("ATTN_DATA");
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
};

std::string read_error(const fs::path& path) {
  try {
    (void)attn::read_corpus(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string load_error(const std::optional<std::string>& flag) {
  try {
    (void)attn::load_corpus(flag);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("corpus") {

TEST_CASE("a valid file is read byte for byte") {
  TempDir dir;
  const std::string text = "First Citizen:\r\nBefore we proceed, caf\xC3\xA9.\n\n";
  const fs::path file = dir.write("valid.txt", text);
  const attn::Corpus corpus = attn::read_corpus(file);
  CHECK(corpus.text == text);
  CHECK(corpus.origin == file.string());
}

TEST_CASE("a missing file is one line naming the path and the reason") {
  TempDir dir;
  const fs::path file = dir.path / "nope.txt";
  CHECK(read_error(file) ==
        "cannot read corpus '" + file.string() + "': No such file or directory");
}

TEST_CASE("a path with a newline or a byte that is not UTF-8 is named on one line") {
  TempDir dir;
  const fs::path file = dir.path / "a\nb\xff\x1b[31m\xc3\xa9.txt";  // ... and an ESC, and an é
  const std::string error = read_error(file);
  CHECK(error.find('\n') == std::string::npos);
  CHECK(error.find('\x1b') == std::string::npos);
  CHECK(error == "cannot read corpus '" + dir.path.string() +
                     "/a\\nb\\xff\\x1b[31m\xc3\xa9.txt': No such file or directory");
  std::ofstream(file) << "some text";
  CHECK(attn::read_corpus(file).origin == dir.path.string() + "/a\\nb\\xff\\x1b[31m\xc3\xa9.txt");
}

TEST_CASE("printable_bytes keeps UTF-8 and escapes control bytes and invalid ones") {
  CHECK(attn::printable_bytes("plain/path.txt") == "plain/path.txt");
  CHECK(attn::printable_bytes("a\tb\r\x7f") == "a\\tb\\x0d\\x7f");
  CHECK(attn::printable_bytes("\xe2\x82\xac") == "\xe2\x82\xac");  // the euro sign
  CHECK(attn::printable_bytes("\xe2\x82") == "\\xe2\\x82");        // cut short
  CHECK(attn::printable_bytes("\xc0\xaf") == "\\xc0\\xaf");        // overlong '/'
  CHECK(attn::printable_bytes("\xc2\x9b") == "\\xc2\\x9b");        // C1 CSI acts on terminals
}

TEST_CASE("a directory is not a corpus") {
  TempDir dir;
  CHECK(read_error(dir.path) == "cannot read corpus '" + dir.path.string() + "': Is a directory");
}

TEST_CASE("an unreadable file says permission denied") {
  if (::geteuid() == 0) {
    MESSAGE("skipped: running as root, which can read any file");
    return;
  }
  TempDir dir;
  const fs::path file = dir.write("locked.txt", "secret");
  fs::permissions(file, fs::perms::none);
  CHECK(read_error(file) == "cannot read corpus '" + file.string() + "': Permission denied");
}

TEST_CASE("only regular files are read: /dev/zero and links to it never end (issue 7)") {
  CHECK(read_error("/dev/zero") ==
        "cannot read corpus '/dev/zero': not a regular file (a device, a pipe or a socket); give "
        "a text file");
  TempDir dir;
  const fs::path link = dir.path / "zero.txt";
  fs::create_symlink("/dev/zero", link);
  CHECK(read_error(link) == "cannot read corpus '" + link.string() +
                                "': not a regular file (a device, a pipe or a socket); give a "
                                "text file");
  const fs::path loop = dir.path / "loop.txt";
  fs::create_symlink(loop, loop);
  CHECK(read_error(loop) ==
        "cannot read corpus '" + loop.string() + "': Too many levels of symbolic links");
}

TEST_CASE("a file above 64 MiB is rejected from its size, before it is read") {
  TempDir dir;
  const fs::path file = dir.write("huge.txt", "a");
  fs::resize_file(file, attn::limits::kMaxCorpusBytes + 1);  // sparse: no disk space used
  CHECK(read_error(file) == "cannot read corpus '" + file.string() +
                                "': the file holds 67108865 bytes, more than the limit of 64 MiB "
                                "for a corpus");
}

TEST_CASE("an empty file is rejected") {
  TempDir dir;
  const fs::path file = dir.write("empty.txt", "");
  CHECK(read_error(file) == "corpus '" + file.string() + "' is empty");
}

TEST_CASE("invalid UTF-8 is reported with its byte offset") {
  TempDir dir;
  const fs::path file = dir.write("latin1.txt", "Hello world\n\xFF and more");
  CHECK(read_error(file) ==
        "corpus '" + file.string() + "' is not valid UTF-8: invalid UTF-8 at byte 12 (0xff)");
}

TEST_CASE("every error message is a single line") {
  TempDir dir;
  for (const fs::path& p :
       {dir.path / "missing.txt", dir.path, dir.write("e.txt", ""), dir.write("bad.txt", "\xC3")}) {
    const std::string message = read_error(p);
    CAPTURE(message);
    CHECK_FALSE(message.empty());
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("--data beats ATTN_DATA, which beats the shipped corpus") {
  TempDir dir;
  const fs::path flag_file = dir.write("flag.txt", "from the flag\n");
  const fs::path env_file = dir.write("env.txt", "from the environment\n");

  SUBCASE("the flag wins over the environment") {
    EnvGuard env(env_file.string());
    const attn::Corpus corpus = attn::load_corpus(flag_file.string());
    CHECK(corpus.text == "from the flag\n");
    CHECK(corpus.origin == flag_file.string() + " (--data)");
  }
  SUBCASE("the environment wins over the shipped corpus") {
    EnvGuard env(env_file.string());
    const attn::Corpus corpus = attn::load_corpus(std::nullopt);
    CHECK(corpus.text == "from the environment\n");
    CHECK(corpus.origin == env_file.string() + " (ATTN_DATA)");
  }
  SUBCASE("an empty ATTN_DATA counts as unset") {
    EnvGuard env(std::string{});
    CHECK(attn::load_corpus(std::nullopt).origin == "data/sonnets.txt (shipped)");
  }
  SUBCASE("without either, the shipped corpus") {
    EnvGuard env(std::nullopt);
    const attn::Corpus corpus = attn::load_corpus(std::nullopt);
    CHECK(corpus.origin == "data/sonnets.txt (shipped)");
    CHECK(corpus.text == attn::read_corpus(attn::shipped_corpus_path()).text);
  }
}

TEST_CASE("a bad --data path is an error, never a silent fallback") {
  TempDir dir;
  const fs::path env_file = dir.write("env.txt", "fine\n");
  EnvGuard env(env_file.string());
  const std::string missing = (dir.path / "typo.txt").string();
  CHECK(load_error(missing) == "cannot read corpus '" + missing + "': No such file or directory");
}

TEST_CASE("a bad ATTN_DATA path says that it came from the environment") {
  TempDir dir;
  const std::string missing = (dir.path / "old.txt").string();
  EnvGuard env(missing);
  CHECK(load_error(std::nullopt) ==
        "cannot read corpus '" + missing + "': No such file or directory (from $ATTN_DATA)");
}

TEST_CASE("the shipped corpus loads, is plain ASCII verse and has a sensible vocabulary") {
  const fs::path path = attn::shipped_corpus_path();
  CHECK(path.filename() == "sonnets.txt");
  CHECK(path.parent_path().filename() == "data");
  const attn::Corpus corpus = attn::read_corpus(path);
  REQUIRE_FALSE(corpus.text.empty());

  // Plain ASCII (printable characters and newlines), so the vocabulary table of chapter 01
  // prints cleanly in any terminal.
  std::size_t bad = 0;
  for (char ch : corpus.text) bad += !(ch == '\n' || (ch >= ' ' && ch <= '~'));
  CHECK(bad == 0);
  CHECK(corpus.text.back() == '\n');

  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  MESSAGE("shipped corpus: " << corpus.text.size() << " bytes, vocabulary of " << vocab.size()
                             << " characters");
  CHECK(vocab.size() >= 40);
  CHECK(vocab.size() <= 90);
  // Both cases and the usual punctuation, or a bigram model learns little about English.
  for (char32_t c : std::u32string(U"aezAETW ,.;:'!?\n")) {
    CAPTURE(attn::printable(c));
    CHECK(vocab.contains(c));
  }
  // Enough text for chapter 01's defaults: a validation split longer than a block.
  const std::vector<int> ids = vocab.encode(corpus.text);
  CHECK(ids.size() == corpus.text.size());
  CHECK(attn::train_val_split(ids).val.size() > 1000);
}

}  // TEST_SUITE
