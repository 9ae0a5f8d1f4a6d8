// tests/fuzz/fuzz_cli.cpp: libFuzzer target for the command line every chapter shares
// (attn::Cli). The input is an argv, one argument per line. Whatever it holds, Cli::run must
// return 0, 1 or 2, and a value it accepts must lie within its bounds. The same input is also
// read as an exception message by unfinished_exercise_message (the --mine error path).
// Run with -close_fd_mask=3: the help and the error lines would flood the terminal.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attn/term/cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // 1. argv: "prog", then one argument per line.
  std::vector<std::string> args = {"prog"};
  for (std::size_t begin = 0; begin <= input.size();) {
    std::size_t end = input.find('\n', begin);
    if (end == std::string_view::npos) end = input.size();
    if (end > begin || end < input.size()) args.emplace_back(input.substr(begin, end - begin));
    begin = end + 1;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // 2. A chapter-like command line with one option of each kind.
  attn::Cli cli("prog", "A fuzzed chapter.");
  std::size_t steps = 3000, window = 8;
  float temperature = 1.0f, shift = 0.0f;
  std::string prompt = "T";
  bool verbose = false;
  cli.add_size("steps", steps, "optimizer steps", 1, 100000);
  cli.add_size("window", window, "context length", 0, 4096, "every (T, T) matrix is printed");
  cli.add_float("temperature", temperature, "sampling temperature", 0.0f, 100.0f);
  cli.add_float("shift", shift, "any finite number");
  cli.add_string("prompt", prompt, "text to start from");
  cli.add_flag("verbose", verbose, "say more");
  bool ran = false;
  const int code = cli.run(static_cast<int>(args.size()), argv.data(),
                           [&](const attn::CommonOptions&) { ran = true; });
  if (code != 0 && code != 1 && code != 2) std::abort();
  if (ran) {  // every accepted value is within its bounds
    if (steps < 1 || steps > 100000 || window > 4096) std::abort();
    if (!(temperature > 0.0f) || temperature > 100.0f || !std::isfinite(shift)) std::abort();
  }

  // 3. The same bytes as a stub's exception message.
  if (input.substr(0, 7) == "TODO ex") {
    (void)attn::unfinished_exercise_message(std::logic_error(std::string(input)));
  }
  return 0;
}
