// The command line every chapter shares (attn/term/cli.hpp): common flags, exit codes, one-line
// errors. CLI11 splits argv into options; we convert and check every value ourselves, so that a
// learner gets a message such as "--steps must be at least 1, got -5" instead of a wrapped-around
// number.
#include "attn/term/cli.hpp"

#include <fmt/format.h>

#include "attn/core/limits.hpp"
#include "attn/core/threads.hpp"
#include "attn/io/text.hpp"

// GCC 12 reports a false "potential null pointer dereference" inside CLI11's inline string
// helpers (CLI::detail::split) at -O2; the code is fine, so that one warning is off for CLI11.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <new>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <list>
#include <string_view>
#include <system_error>
#include <vector>

#ifndef ATTN_SOURCE_DIR
#define ATTN_SOURCE_DIR "."
#endif

namespace attn {
namespace {

constexpr std::string_view kCommonGroup = "Common options";
constexpr std::string_view kChapterGroup = "Options";

// "steps" and "--steps" both name the option --steps.
std::string long_name(const std::string& name) {
  return name.rfind('-', 0) == 0 ? name : "--" + name;
}

// Errors are one line: newlines and tabs become spaces, blanks at both ends go.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  const auto first = out.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

// A value as the learner typed it, shown on one line: a newline as \n, ESC or a byte that is
// not UTF-8 as \xNN (never raw, where it would act on the terminal).
std::string shown(std::string_view text) { return printable_bytes(text); }

// Thrown by the value conversions below; Cli::run reports it as a usage error.
struct BadValue : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses the whole of `text` as a T with std::from_chars (a leading '+' is allowed).
template <class T>
std::errc parse_number(std::string_view text, T& out) {
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  if (ec != std::errc{}) return ec;
  return ptr == end ? std::errc{} : std::errc::invalid_argument;
}

std::size_t parse_size(const std::string& flag, const std::string& text, std::size_t min,
                       std::size_t max, const std::string& why) {
  const std::string too_large = fmt::format("{} must be at most {}, got {}{}", flag, max,
                                            shown(text), why.empty() ? "" : " (" + why + ")");
  long long v = 0;
  const std::errc ec = parse_number(text, v);
  if (ec == std::errc::result_out_of_range) {
    const bool negative = !text.empty() && text.front() == '-';
    throw BadValue(negative ? fmt::format("{} must be at least {}, got {}", flag, min, shown(text))
                            : too_large);
  }
  if (ec != std::errc{}) {
    throw BadValue(fmt::format("{} expects an integer, got '{}'", flag, shown(text)));
  }
  if (v < 0 || static_cast<unsigned long long>(v) < min) {
    throw BadValue(fmt::format("{} must be at least {}, got {}", flag, min, shown(text)));
  }
  if (static_cast<unsigned long long>(v) > max) throw BadValue(too_large);
  return static_cast<std::size_t>(v);
}

float parse_float(const std::string& flag, const std::string& text,
                  std::optional<float> greater_than, std::optional<float> at_most) {
  float v = 0.0f;
  const std::errc ec = parse_number(text, v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc{} && !std::isfinite(v))) {
    throw BadValue(fmt::format("{} must be a finite number, got {}", flag, shown(text)));
  }
  if (ec != std::errc{}) {
    throw BadValue(fmt::format("{} expects a number, got '{}'", flag, shown(text)));
  }
  if (greater_than && !(v > *greater_than)) {
    throw BadValue(fmt::format("{} must be > {}, got {}", flag, *greater_than, shown(text)));
  }
  if (at_most && v > *at_most) {
    throw BadValue(fmt::format("{} must be at most {}, got {}", flag, *at_most, shown(text)));
  }
  return v;
}

std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t v = 0;
  if (text.empty() || text.front() == '-' || parse_number(text, v) != std::errc{}) {
    throw BadValue(fmt::format("--seed expects an integer from 0 to 18446744073709551615, got '{}'",
                               shown(text)));
  }
  return v;
}

// "optimizer steps" -> "optimizer steps (at most 100000)": every bound is shown in --help.
std::string with_bound(const std::string& help, const std::string& max) {
  return fmt::format("{} (at most {})", help, max);
}

// Everything printed must reach its destination: `01_bigram > /dev/full` fails (exit code 1)
// instead of pretending success. Returns the reason when stdout could not be written.
std::optional<std::string> stdout_failure() {
  errno = 0;
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout;
  if (!failed) return std::nullopt;
  if (errno == 0) {
    // The write that failed was earlier (stdio keeps only the error flag, not its reason), so
    // ask again: one more byte to the output that is already broken gives the reason back.
    std::clearerr(stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);  // fails again, and sets errno
  }
  return fmt::format("cannot write the output (stdout): {}",
                     errno != 0 ? std::strerror(errno) : "write error");
}

// What a learner can do about std::bad_alloc.
std::string out_of_memory_message(std::string_view what) {
  return fmt::format(
      "out of memory ({}): the sizes asked for need more memory than this machine can give; "
      "try smaller values (--help shows each flag's limit)",
      what);
}

// CLI11's own messages, reworded where a learner would stumble.
std::string parse_error_message(const CLI::ParseError& e) {
  std::string message = one_line(e.what());
  // "--steps: 1 required TEXT missing" -> "--steps needs a value"
  if (const auto colon = message.find(": 1 required");
      colon != std::string::npos && message.find("missing") != std::string::npos) {
    return message.substr(0, colon) + " needs a value";
  }
  // "--steps: At Most 1 required but received 2" -> "--steps was given more than once"
  if (const auto colon = message.find(": At Most 1 required"); colon != std::string::npos) {
    return message.substr(0, colon) + " was given more than once";
  }
  // "Could not convert: --timing = maybe" (an on/off flag given a value CLI11 cannot read) ->
  // "--timing is an on/off flag: give it alone, without '=maybe'"
  constexpr std::string_view convert = "Could not convert: ";
  if (message.rfind(convert, 0) == 0) {
    const std::string rest = message.substr(convert.size());
    if (const auto eq = rest.find(" = "); eq != std::string::npos && rest.rfind("--", 0) == 0) {
      return fmt::format("{} is an on/off flag: give it alone, without '={}'", rest.substr(0, eq),
                         shown(rest.substr(eq + 3)));
    }
  }
  if (!message.empty()) message.front() = static_cast<char>(std::tolower(message.front()));
  return message;
}

}  // namespace

struct Cli::Impl {
  std::string program;
  std::string description;
  CLI::App app;                                   // without the description: help() prints it
  std::list<std::string> texts;                   // raw option values (stable addresses)
  std::vector<std::function<void()>> converters;  // run after parsing, in order
  CommonOptions common;
  bool common_added = false;
  std::vector<std::pair<std::string, std::string>> aliases;  // (--old, --new)

  Impl(std::string program_name, std::string description_text)
      : program(std::move(program_name)),
        description(std::move(description_text)),
        app("", program) {
    app.set_help_flag();     // re-added after the chapter's options, see add_common()
    app.allow_extras(true);  // we report extra arguments ourselves, by name
    app.get_formatter()->column_width(24);
  }

  std::string& text_slot() { return texts.emplace_back(); }

  // The common options come last in --help, after the chapter's own.
  void add_common() {
    if (common_added) return;
    common_added = true;
    const std::string group(kCommonGroup);
    std::string& seed = text_slot();
    CLI::Option* seed_opt = app.add_option("--seed", seed, "random seed: same seed, same output")
                                ->type_name("N")
                                ->default_str(std::to_string(common.seed))
                                ->group(group);
    converters.emplace_back([this, &seed, seed_opt] {
      if (seed_opt->count() > 0) common.seed = parse_seed(seed);
    });
    std::string& data = text_slot();
    CLI::Option* data_opt =
        app.add_option("--data", data,
                       "text to learn from (default: $ATTN_DATA, else the shipped corpus)")
            ->type_name("PATH")
            ->group(group);
    converters.emplace_back([this, &data, data_opt] {
      if (data_opt->count() > 0) common.data = data;
    });
    std::string& svg = text_slot();
    CLI::Option* svg_opt =
        app.add_option("--svg", svg, "also write the chapter's figures as SVG files into DIR")
            ->type_name("DIR")
            ->group(group);
    converters.emplace_back([this, &svg, svg_opt] {
      if (svg_opt->count() == 0) return;
      // An empty name would write the figures into the current folder without a word.
      if (svg.empty()) throw BadValue("--svg needs a folder to write the figures into, got ''");
      common.svg_dir = std::filesystem::path(svg);
    });
    app.add_flag("--mine", common.mine, "run on your exercise solutions instead of the reference")
        ->group(group);
    app.add_flag("--timing", common.timing, "add wall-clock timings to the output")->group(group);
    app.set_help_flag("-h,--help", "print this help and exit")->group(group);
  }

  // CLI11's help, with the description set apart and at most one blank line in a row:
  //   <description>
  //
  //   Usage: 03_masked_softmax [OPTIONS]
  //
  //   Options: ...
  std::string help() const {
    std::string out = description;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (!out.empty()) out += "\n\n";
    std::size_t newlines = 2;
    for (char c : app.help()) {
      newlines = c == '\n' ? newlines + 1 : 0;
      if (newlines <= 2) out += c;
    }
    while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') {
      out.pop_back();
    }
    return out;
  }

  void print_error(std::string_view message, bool usage) const {
    std::cout.exceptions(std::ios::goodbit);  // reporting one error never raises another
    std::cout.flush();
    std::fflush(stdout);
    // A message that already points to --help is not told to again. Whatever a message quotes
    // (a value, a path, a line of a file) reaches the terminal escaped: ESC and bytes that are
    // not UTF-8 as \xNN, never raw.
    const std::string line = printable_bytes(one_line(message));
    const bool points =
        line.size() >= 12 && line.compare(line.size() - 12, 12, "(see --help)") == 0;
    fmt::print(stderr, "{}: error: {}{}\n", program, line, usage && !points ? " (see --help)" : "");
    std::fflush(stderr);
  }
};

Cli::Cli(std::string program, std::string description)
    : impl_(std::make_unique<Impl>(std::move(program), std::move(description))) {}

Cli::~Cli() = default;

void Cli::add_size(const std::string& name, std::size_t& value, const std::string& help,
                   std::size_t min, std::size_t max, const std::string& why) {
  const std::string flag = long_name(name);
  std::string& text = impl_->text_slot();
  CLI::Option* opt = impl_->app.add_option(flag, text, with_bound(help, std::to_string(max)))
                         ->type_name("N")
                         ->default_str(std::to_string(value))
                         ->group(std::string(kChapterGroup));
  impl_->converters.emplace_back([&value, &text, flag, min, max, why, opt] {
    if (opt->count() > 0) value = parse_size(flag, text, min, max, why);
  });
}

void Cli::add_float(const std::string& name, float& value, const std::string& help,
                    std::optional<float> greater_than, std::optional<float> at_most) {
  const std::string flag = long_name(name);
  std::string& text = impl_->text_slot();
  CLI::Option* opt =
      impl_->app
          .add_option(flag, text, at_most ? with_bound(help, fmt::format("{}", *at_most)) : help)
          ->type_name("X")
          ->default_str(fmt::format("{}", value))
          ->group(std::string(kChapterGroup));
  impl_->converters.emplace_back([&value, &text, flag, greater_than, at_most, opt] {
    if (opt->count() > 0) value = parse_float(flag, text, greater_than, at_most);
  });
}

void Cli::add_string(const std::string& name, std::string& value, const std::string& help) {
  impl_->app.add_option(long_name(name), value, help)
      ->type_name("TEXT")
      ->default_str(value)
      ->group(std::string(kChapterGroup));
}

void Cli::add_flag(const std::string& name, bool& value, const std::string& help) {
  impl_->app.add_flag(long_name(name), value, help)->group(std::string(kChapterGroup));
}

void Cli::add_alias(const std::string& old_name, const std::string& name) {
  impl_->aliases.emplace_back(long_name(old_name), long_name(name));
}

int Cli::run(int argc, char** argv, const std::function<void(const CommonOptions&)>& body) {
  setup_threads();  // the thread budget from OPENBLAS_NUM_THREADS, BLAS pinned to one thread
  // A file past `ulimit -f` (stdout redirected to one, --svg, --export, a checkpoint) would
  // kill the process with SIGXFSZ and no word (exit 153). Ignored, the write fails with EFBIG
  // and is reported like any other write error: one line, exit code 1.
  std::signal(SIGXFSZ, SIG_IGN);
  // Written a line at a time, a full disk or a file limit is found at the first line that
  // fails, not after the whole run (a chapter 09 run to /dev/full would train for minutes
  // first). Before anything is written: setvbuf must come first on a stream.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  Impl& d = *impl_;
  d.add_common();

  // 0. Old spellings become the names --help shows ("--channels=32" -> "--n-embd=32"). The new
  //    strings live in d.texts, as long as the Cli.
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--") break;
    for (const auto& [old_flag, new_flag] : d.aliases) {
      if (arg == old_flag || (arg.size() > old_flag.size() && arg.starts_with(old_flag) &&
                              arg[old_flag.size()] == '=')) {
        std::string& renamed = d.text_slot();
        renamed = new_flag + std::string(arg.substr(old_flag.size()));
        argv[i] = renamed.data();
        break;
      }
    }
  }

  // 1. Parse. --help wins over everything else; any problem is a usage error (exit code 2).
  try {
    d.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      std::cout << d.help() << std::flush;
      if (const auto failure = stdout_failure()) {
        d.print_error(*failure, false);
        return 1;
      }
      return 0;
    }
    d.print_error(parse_error_message(e), true);
    return 2;
  }
  try {
    const std::vector<std::string> extras = d.app.remaining();
    if (!extras.empty()) {
      const std::string& first = extras.front();
      throw BadValue(first.rfind('-', 0) == 0 && first.size() > 1
                         ? fmt::format("unknown option '{}'", shown(first))
                         : fmt::format("unexpected argument '{}'", shown(first)));
    }
    for (const auto& convert : d.converters) convert();
  } catch (const BadValue& e) {
    d.print_error(e.what(), true);
    return 2;
  }

  // 2. Run the chapter (exit code 1 for anything that goes wrong, 2 for a late usage error).
  // OpenBLAS's buffer for this thread, mapped now: under a memory limit, an error here (or
  // later, in the chapter's own allocations) instead of a BLAS call that retries its mapping
  // forever (attn/core/threads.hpp). The pool reserves one per worker when it starts them.
  try {
    reserve_blas_buffers(1);
  } catch (const std::bad_alloc& e) {
    d.print_error(out_of_memory_message(e.what()), false);
    // Out at once, past the exit handlers: under a limit this low, OpenBLAS's own thread may be
    // retrying the mapping of its buffer forever, and the normal exit would wait for it
    // (OpenBLAS joins its threads at exit). Nothing of the chapter has run yet.
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }
  try {
    std::cout.exceptions(std::ios::badbit);  // as fmt::print: a failed write throws, not ignored
    body(d.common);
    if (const auto failure = stdout_failure()) {
      d.print_error(*failure, false);
      return 1;
    }
    return 0;
  } catch (const UsageError& e) {
    d.print_error(e.what(), true);
    return 2;
  } catch (const std::bad_alloc& e) {
    d.print_error(out_of_memory_message(e.what()), false);
    return 1;
  } catch (const std::length_error& e) {
    // SizeError (attn/core/limits.hpp) names the size; a container's own length_error
    // ("vector::reserve") is the same story as bad_alloc.
    d.print_error(dynamic_cast<const SizeError*>(&e) != nullptr ? std::string(e.what())
                                                                : out_of_memory_message(e.what()),
                  false);
    return 1;
  } catch (const std::exception& e) {
    const int write_errno = errno;  // why the write failed, before anything else can reset it
    // fmt::print throws "cannot write to file" when stdout is full or closed, and std::cout
    // throws ios_base::failure (its badbit raises, see above): say which file, and why.
    if (std::ferror(stdout) != 0) {
      std::string_view why = e.what();  // "cannot write to file: No space left on device"
      if (dynamic_cast<const std::ios_base::failure*>(&e) != nullptr) {
        why = write_errno != 0 ? std::strerror(write_errno) : "write error";
      } else if (const auto colon = why.rfind(": "); colon != std::string_view::npos) {
        why = why.substr(colon + 2);
      }
      d.print_error(fmt::format("cannot write the output (stdout): {}", why), false);
      return 1;
    }
    const std::string unfinished = unfinished_exercise_message(e);
    d.print_error(unfinished.empty() ? std::string(e.what()) : unfinished, false);
    return 1;
  } catch (...) {
    d.print_error("unknown exception", false);
    return 1;
  }
}

std::string unfinished_exercise_message(const std::exception& e) {
  // 1. Is it a stub's "TODO exNN.M: title"?
  if (dynamic_cast<const std::logic_error*>(&e) == nullptr) return {};
  const std::string_view what = e.what();
  constexpr std::string_view prefix = "TODO ex";
  if (what.substr(0, prefix.size()) != prefix) return {};
  auto digits = [&](std::size_t from) {
    std::size_t to = from;
    while (to < what.size() && what[to] >= '0' && what[to] <= '9') ++to;
    return to;
  };
  const std::size_t chapter_end = digits(prefix.size());
  if (chapter_end == prefix.size() || chapter_end >= what.size() || what[chapter_end] != '.') {
    return {};
  }
  const std::size_t number_end = digits(chapter_end + 1);
  if (number_end == chapter_end + 1) return {};
  std::string chapter(what.substr(prefix.size(), chapter_end - prefix.size()));
  if (chapter.size() == 1) chapter.insert(0, "0");  // folders are numbered 01, 02, ...
  const std::string number(what.substr(chapter_end + 1, number_end - chapter_end - 1));
  std::string title;
  if (number_end < what.size() && what[number_end] == ':') {
    title = one_line(what.substr(number_end + 1));
  }

  // 2. Find its file: chapters/NN_*/exercises/exNN_M_*.cpp, relative to the source folder.
  namespace fs = std::filesystem;
  const fs::path source(ATTN_SOURCE_DIR);
  std::string where = fmt::format("chapters/{}_*/exercises/", chapter);
  try {
    std::vector<fs::path> chapter_dirs;
    for (const fs::directory_entry& entry : fs::directory_iterator(source / "chapters")) {
      if (entry.is_directory() && entry.path().filename().string().rfind(chapter + "_", 0) == 0) {
        chapter_dirs.push_back(entry.path());
      }
    }
    std::sort(chapter_dirs.begin(), chapter_dirs.end());
    if (!chapter_dirs.empty()) {
      where = fs::relative(chapter_dirs.front() / "exercises", source).generic_string() + "/";
    }
    const std::string stem = fmt::format("ex{}_{}_", chapter, number);
    std::vector<fs::path> files;
    for (const fs::path& dir : chapter_dirs) {
      std::error_code ec;
      for (fs::directory_iterator it(dir / "exercises", ec), end; !ec && it != end;
           it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(stem, 0) == 0 && it->path().extension() == ".cpp")
          files.push_back(it->path());
      }
    }
    std::sort(files.begin(), files.end());
    if (!files.empty()) where = fs::relative(files.front(), source).generic_string();
  } catch (const std::exception&) {
    // No source tree (an installed binary): keep the generic folder name.
  }

  // 3. The message.
  return fmt::format(
      "exercise ex{}.{}{} is not done yet: write it in {}, then check it with "
      "build/default/bin/attn-check {}",
      chapter, number, title.empty() ? "" : " (" + title + ")", where, chapter);
}

std::size_t parse_top_k(std::string_view text, std::size_t V) {
  long long k = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, k);
  if (ec != std::errc{} || ptr != end) {
    throw UsageError(fmt::format("--top-k expects an integer, got '{}'", shown(text)));
  }
  if (k < 1) throw UsageError(fmt::format("--top-k must be at least 1, got {}", k));
  if (static_cast<unsigned long long>(k) > V) {
    throw UsageError(
        fmt::format("--top-k must be at most V = {} (the vocabulary size), got {}", V, k));
  }
  return static_cast<std::size_t>(k);
}

bool flag_given(int argc, char** argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == flag || (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag &&
                        arg[flag.size()] == '=')) {
      return true;
    }
  }
  return false;
}

}  // namespace attn
