// attn/term/cli.hpp: the command line every chapter shares.
// Every chapter binary takes the same flags and ends with the same exit codes:
//   --seed N     random seed (default 1337); same seed, same output on any machine
//   --data PATH  corpus to read instead of the shipped one (else $ATTN_DATA, else shipped)
//   --svg DIR    also write the chapter's figures as SVG files into DIR
//   --mine       run the walkthrough on your exercise solutions instead of the reference
//   --timing     add wall-clock timings to the output (they vary, so they are off by default)
//   --help       describe the chapter and its flags
// Exit codes: 0 success, 1 runtime error (bad corpus, unknown character, unfinished exercise,
// out of memory, stdout not writable), 2 usage error (unknown flag, bad value, a size above its
// bound). Errors are one line on stderr: "<program>: error: ...".
// CLI11 does the parsing; it stays inside cli.cpp so chapters compile fast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "attn/core/limits.hpp"

namespace attn {

struct CommonOptions {
  std::uint64_t seed = 1337;
  std::optional<std::string> data;
  std::optional<std::filesystem::path> svg_dir;
  bool mine = false;
  bool timing = false;
};

// Thrown for a usage problem found after parsing (two flags that contradict each other, a
// size the data cannot satisfy...). Cli::run turns it into exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Cli {
 public:
  // `program` is the binary's name ("01_bigram"); `description` heads --help.
  Cli(std::string program, std::string description);
  ~Cli();
  Cli(const Cli&) = delete;
  Cli& operator=(const Cli&) = delete;

  // Chapter-specific options. `value` holds the default and receives the parsed value.
  // Sizes are parsed as signed integers and must lie in [min, max] (so "-5" and "0" are rejected
  // with "--steps must be at least 1, got -5", not wrapped around, and "--steps 1000000000" with
  // "--steps must be at most 100000, got 1000000000"). Every size has an upper bound (the input
  // contract, CONTRIBUTING.md): choose `max` so that the run stays within seconds and memory
  // within limits::kMaxElements; --help shows it as "(at most N)". The default `max` is only a
  // backstop (limits::kMaxSizeFlag): give every flag its own. `why`, when given, ends the
  // message: "--time-steps must be at most 64, got 100 (every (T, T) matrix is printed)".
  void add_size(const std::string& name, std::size_t& value, const std::string& help,
                std::size_t min = 1, std::size_t max = limits::kMaxSizeFlag,
                const std::string& why = "");
  // Floats must be finite, > `greater_than` when given (e.g. a temperature must be > 0) and
  // <= `at_most` when given (shown in --help).
  void add_float(const std::string& name, float& value, const std::string& help,
                 std::optional<float> greater_than = std::nullopt,
                 std::optional<float> at_most = std::nullopt);
  void add_string(const std::string& name, std::string& value, const std::string& help);
  void add_flag(const std::string& name, bool& value, const std::string& help);
  // An old spelling of a flag, accepted but not shown in --help: add_alias("channels", "n-embd")
  // makes "--channels 32" and "--channels=32" mean "--n-embd 32". run() rewrites argv in place
  // to the new name before parsing, so messages and flag_given() see the name --help shows.
  void add_alias(const std::string& old_name, const std::string& name);

  // Parses argv, then runs `body` with the common options, translating every failure into the
  // exit codes above. Returns the exit code for main to return.
  int run(int argc, char** argv, const std::function<void(const CommonOptions&)>& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// For --mine: when `e` is an exercise stub's "TODO exNN.M: ..." error, the friendly one-line
// message naming the exercise, its file and the checker command; otherwise empty.
std::string unfinished_exercise_message(const std::exception& e);

// --top-k as chapters 07 and 10 take it: an integer from 1 to V (the vocabulary size, known only
// once the model is loaded, so the flag is read as text first). Throws UsageError naming the flag.
std::size_t parse_top_k(std::string_view text, std::size_t V);

// True when argv holds `flag` as "--flag value", "--flag=value" or the bare flag: for telling a
// flag given with its default value apart from one not given at all.
bool flag_given(int argc, char** argv, std::string_view flag);

}  // namespace attn
