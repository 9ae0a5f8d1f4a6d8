// tools/doccheck.cpp: attn-doccheck keeps the program output shown in the course's pages honest.
// It runs every `<!-- attn:run CMD -->` directive and compares the ```text block after it, runs
// every `<!-- attn:figures CMD --svg DIR -->` and compares the SVGs, checks the headings of
// chapter pages (CONTRIBUTING.md, "A doc page"), and checks that every relative link points to a
// file or folder that exists. With --update it rewrites blocks and figures.
//
//   attn-doccheck [--update] --bin-dir DIR --root SRC FILE.md...
//   attn-doccheck --mask LINE      (prints LINE as the comparison sees it: the masks' tests)
//
// Exit codes: 0 every page matches, 1 a mismatch or a broken directive, 2 usage error.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Options {
  bool update = false;
  fs::path bin_dir;
  fs::path root;
  std::vector<fs::path> pages;
};

// The headings every chapter page (docs/NN-name.md) has, in this order.
constexpr std::string_view kChapterHeadings[] = {
    "## Goal",      "## Shapes",         "## The math",        "## Walkthrough", "## Run it",
    "## Exercises", "## Check yourself", "## Further reading", "## Next"};

constexpr std::string_view kUpdateCommand = "cmake --build --preset default --target update-docs";

// ---------------------------------------------------------------------------------------------
// Small text helpers.

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{16} << 20;  // a page or a figure

// The whole of a regular file of at most kMaxFileBytes; nothing for anything else (a folder,
// /dev/zero, a file too large to be a page).
std::optional<std::string> read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  if (const auto size = fs::file_size(path, ec); ec || size > kMaxFileBytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

// Text -> lines without their '\n'. "a\nb\n" and "a\nb" both give {"a", "b"}; "" gives {}.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// "a b  \"c d\"" -> {a, b, c d}. Double quotes group words; there are no escapes.
std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  bool quoted = false;
  for (const char c : text) {
    if (c == '"') {
      quoted = !quoted;
      in_word = true;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// Rewrites every number of a line: digits, optionally followed by .digits, not inside a word
// and not after a '.'. rewrite(line, begin, end, next) gets the number's span [begin, end),
// returns the text that replaces line[begin, next), and may move `next` (initially end) further
// to swallow a suffix.
template <class Rewrite>
std::string rewrite_numbers(const std::string& line, const Rewrite& rewrite) {
  std::string out;
  std::size_t i = 0;
  while (i < line.size()) {
    const bool starts_number =
        is_digit(line[i]) && (i == 0 || (!is_alnum(line[i - 1]) && line[i - 1] != '.'));
    if (!starts_number) {
      out += line[i++];
      continue;
    }
    std::size_t end = i;
    while (end < line.size() && is_digit(line[end])) ++end;
    if (end + 1 < line.size() && line[end] == '.' && is_digit(line[end + 1])) {
      ++end;
      while (end < line.size() && is_digit(line[end])) ++end;
    }
    std::size_t next = end;
    out += rewrite(line, i, end, next);
    i = next;
  }
  return out;
}

// Rounding noise: a number in scientific notation below 1e-5 ("4.17e-07") becomes "~0". Such
// values are differences between two float computations of the same thing, and their last
// digits depend on the machine's BLAS kernels (which order they add products in), so a page
// written on one CPU must still match on another. The page keeps the real value; the check only
// requires the program to print some value that small at that place.
std::string mask_rounding_noise(const std::string& line) {
  return rewrite_numbers(
      line, [](const std::string& l, std::size_t begin, std::size_t end, std::size_t& next) {
        // e-NN with NN >= 6, and not followed by more of a word.
        std::size_t exp_end = end;
        int exponent = -1;
        if (end + 2 < l.size() && l[end] == 'e' && l[end + 1] == '-' && is_digit(l[end + 2])) {
          exponent = 0;
          for (exp_end = end + 2; exp_end < l.size() && is_digit(l[exp_end]); ++exp_end)
            exponent = std::min(exponent * 10 + (l[exp_end] - '0'), 1000);
        }
        if (exponent >= 6 && (exp_end == l.size() || !is_alnum(l[exp_end]))) {
          next = exp_end;
          return std::string("~0");
        }
        return l.substr(begin, end - begin);
      });
}

// For --timing: every number followed by a time unit becomes "#" ("12.5 ms" -> "# ms").
std::string mask_timings(const std::string& line) {
  static constexpr std::string_view units[] = {"ns", "us", "\xC2\xB5s", "ms", "s"};
  return rewrite_numbers(line, [](const std::string& l, std::size_t begin, std::size_t end,
                                  std::size_t&) {
    std::size_t unit_at = end;
    if (unit_at < l.size() && l[unit_at] == ' ') ++unit_at;
    const std::string_view rest = std::string_view(l).substr(unit_at);
    for (const auto unit : units) {
      if (starts_with(rest, unit) && (rest.size() == unit.size() || !is_alnum(rest[unit.size()])))
        return std::string("#");
    }
    return l.substr(begin, end - begin);
  });
}

// ---------------------------------------------------------------------------------------------
// Running a command: no shell, stdout and stderr merged, ATTN_DATA unset, NO_COLOR=1.

struct RunResult {
  std::string output;
  int exit_code = 0;  // valid when !signaled
  bool signaled = false;
  int signal = 0;
};

std::optional<RunResult> run_command(const fs::path& program, const std::vector<std::string>& args,
                                     const fs::path& cwd, std::string& error) {
  int fds[2];
  if (pipe(fds) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<std::string> argv_text = {program.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_text) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    if (chdir(cwd.c_str()) != 0) _exit(127);
    unsetenv("ATTN_DATA");
    setenv("NO_COLOR", "1", 1);
    // The pages were made with OpenBLAS's Haswell (AVX2) kernels. OpenBLAS picks its kernels by
    // CPU, and another kernel (e.g. AVX-512 on a Zen 4 or a Xeon) adds the products of a GEMM in
    // another order: the last digits of the BLAS-backed chapters differ. Pinning the kernel makes
    // the transcripts the same on every x86-64 machine with AVX2; a value set by the caller wins.
    setenv("OPENBLAS_CORETYPE", "Haswell", 0);
    execv(argv[0], argv.data());
    const char message[] = "attn-doccheck: exec failed\n";
    [[maybe_unused]] const auto ignored = write(STDERR_FILENO, message, sizeof message - 1);
    _exit(127);
  }
  close(fds[1]);
  RunResult result;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

// What the page shows for a run: the output's lines, then "[exit code N]" if it failed.
std::vector<std::string> shown_lines(const RunResult& run) {
  std::vector<std::string> lines = split_lines(run.output);
  if (run.signaled) {
    lines.push_back(fmt::format("[killed by signal {}]", run.signal));
  } else if (run.exit_code != 0) {
    lines.push_back(fmt::format("[exit code {}]", run.exit_code));
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// A line diff (longest common subsequence), printed as unified-diff hunks with page line numbers.

struct Edit {
  char op;           // ' ' same, '-' only in the page, '+' only in the new output
  std::size_t page;  // index in the page block (for ' ' and '-')
  std::size_t out;   // index in the output (for ' ' and '+')
};

std::vector<Edit> diff(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  std::vector<Edit> edits;
  if (n * m > 25'000'000) {  // too big for the table: everything differs from the first change
    std::size_t same = 0;
    while (same < n && same < m && a[same] == b[same]) ++same;
    for (std::size_t i = 0; i < same; ++i) edits.push_back({' ', i, i});
    for (std::size_t i = same; i < n; ++i) edits.push_back({'-', i, same});
    for (std::size_t j = same; j < m; ++j) edits.push_back({'+', n, j});
    return edits;
  }
  // lcs[i][j] = length of the LCS of a[i:] and b[j:]
  std::vector<std::vector<std::size_t>> lcs(n + 1, std::vector<std::size_t>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      edits.push_back({' ', i++, j++});
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      edits.push_back({'-', i++, j});
    } else {
      edits.push_back({'+', i, j++});
    }
  }
  return edits;
}

// Prints the hunks; page line numbers start at `first_page_line` (1-based line of the block).
void print_diff(const std::vector<std::string>& page, const std::vector<std::string>& output,
                const std::vector<Edit>& edits, std::size_t first_page_line) {
  constexpr std::size_t context = 2;
  constexpr std::size_t max_printed = 40;
  std::vector<std::pair<std::size_t, std::size_t>> hunks;  // [begin, end) ranges of edits
  for (std::size_t k = 0; k < edits.size(); ++k) {
    if (edits[k].op == ' ') continue;
    const std::size_t lo = k >= context ? k - context : 0;
    const std::size_t hi = std::min(edits.size(), k + context + 1);
    if (!hunks.empty() && lo <= hunks.back().second) {
      hunks.back().second = std::max(hunks.back().second, hi);
    } else {
      hunks.emplace_back(lo, hi);
    }
  }
  std::size_t printed = 0;
  for (const auto& [begin, end] : hunks) {
    fmt::print("  @@ page line {}, output line {} @@\n", first_page_line + edits[begin].page,
               edits[begin].out + 1);
    for (std::size_t k = begin; k < end; ++k) {
      if (printed++ == max_printed) {
        fmt::print("  ... (more differences)\n");
        return;
      }
      const Edit& e = edits[k];
      fmt::print("  {}{}\n", e.op, e.op == '+' ? output[e.out] : page[e.page]);
    }
  }
}

// Tracks fenced code blocks (``` or ~~~, 3 or more) so directives and headings inside examples
// are left alone. step() returns true for a line that is code or a fence line.
class Fences {
 public:
  bool step(std::string_view line) {
    std::size_t n = 0;
    const char c = line.empty() ? '\0' : line[0];
    if (c == '`' || c == '~') {
      while (n < line.size() && line[n] == c) ++n;
    }
    if (open_ == 0) {
      if (n >= 3) {
        open_ = n;
        char_ = c;
        return true;
      }
      return false;
    }
    if (c == char_ && n >= open_ && trim(line.substr(n)).empty()) open_ = 0;
    return true;
  }

 private:
  std::size_t open_ = 0;  // length of the opening fence; 0 outside code
  char char_ = 0;
};

// ---------------------------------------------------------------------------------------------
// One page.

class Page {
 public:
  Page(const Options& options, fs::path path) : options_(options), path_(std::move(path)) {}

  // Checks (or updates) the page; returns true if everything matched (or was written).
  bool process() {
    const auto text = read_file(path_);
    if (!text) {
      std::error_code ec;
      const fs::file_status status = fs::status(path_, ec);
      std::string why;
      if (fs::is_directory(status)) {
        why = ": it is a folder, not a page (give the .md files)";
      } else if (fs::exists(status) && !fs::is_regular_file(status)) {
        why = ": not a regular file";
      } else if (fs::is_regular_file(status)) {
        why = fmt::format(": larger than {} MiB", kMaxFileBytes >> 20);
      }
      fail(0, fmt::format("cannot read {}{}", path_.string(), why));
      return false;
    }
    ends_with_newline_ = !text->empty() && text->back() == '\n';
    lines_ = split_lines(*text);
    check_control_bytes();
    check_headings();
    check_links();

    Fences fences;
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const std::string_view line = trim(lines_[i]);
      if (fences.step(line)) continue;
      if (!starts_with(line, "<!-- attn:")) continue;
      if (starts_with(line, "<!-- attn:run ") && line.size() > 17 &&
          line.substr(line.size() - 3) == "-->") {
        i = run_directive(i, trim(line.substr(14, line.size() - 17)));
      } else if (starts_with(line, "<!-- attn:figures ") && line.substr(line.size() - 3) == "-->") {
        figures_directive(i, trim(line.substr(18, line.size() - 21)));
      } else {
        fail(i, fmt::format("unknown or malformed directive: {}", line));
      }
    }

    if (options_.update && changed_) {
      std::string out;
      for (std::size_t i = 0; i < lines_.size(); ++i) {
        out += lines_[i];
        if (i + 1 < lines_.size() || ends_with_newline_) out += '\n';
      }
      if (!write_file(path_, out)) fail(0, "cannot write the page");
    }
    if (failures_ == 0) {
      fmt::print("{}: {} {}, {} {}{}, {} {}\n", display(), outputs_,
                 outputs_ == 1 ? "output" : "outputs", figures_,
                 figures_ == 1 ? "figure" : "figures",
                 options_.update ? (changed_ ? " (updated)" : " (unchanged)") : " match", links_,
                 links_ == 1 ? "relative link ok" : "relative links ok");
    }
    return failures_ == 0;
  }

 private:
  std::string display() const {
    const fs::path rel = path_.lexically_relative(options_.root);
    return rel.empty() || *rel.begin() == ".." ? path_.string() : rel.string();
  }

  void fail(std::size_t line_index, const std::string& message) {
    ++failures_;
    if (line_index == 0 && lines_.empty()) {
      fmt::print("{}: {}\n", display(), message);
    } else {
      fmt::print("{}:{}: {}\n", display(), line_index + 1, message);
    }
  }

  // A control byte in a page is almost always a LaTeX command eaten by an escape ("\\text"
  // written as "\text" in a script: a TAB then "ext"); it renders as garbage, so none may pass.
  void check_control_bytes() {
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      for (std::size_t c = 0; c < lines_[i].size(); ++c) {
        const auto byte = static_cast<unsigned char>(lines_[i][c]);
        if (byte < 0x20 || byte == 0x7f) {
          fail(i, fmt::format("control byte 0x{:02x} at column {} (a LaTeX \\t, \\b or \\f eaten "
                              "by an escape?); write the character it stands for",
                              byte, c + 1));
        }
      }
    }
  }

  void check_headings() {
    const std::string name = path_.filename().string();
    const bool chapter_page = name.size() > 3 && is_digit(name[0]) && is_digit(name[1]) &&
                              name[2] == '-' && path_.extension() == ".md";
    if (!chapter_page) return;
    std::vector<std::string> headings;  // level-2 headings outside code blocks
    Fences fences;
    for (const auto& raw : lines_) {
      const std::string_view line = trim(raw);
      if (!fences.step(line) && starts_with(line, "## ")) headings.emplace_back(line);
    }
    std::size_t at = 0;
    std::string_view previous;
    for (const auto required : kChapterHeadings) {
      const auto found = std::find_if(
          headings.begin() + static_cast<std::ptrdiff_t>(at), headings.end(),
          [required](const std::string& h) {
            return h == required || (starts_with(h, required) &&
                                     (h[required.size()] == ' ' || h[required.size()] == ':'));
          });
      if (found == headings.end()) {
        ++failures_;
        std::string list;
        for (const auto h : kChapterHeadings) list += (list.empty() ? "" : ", ") + std::string(h);
        fmt::print("{}: missing heading '{}'{}; a chapter page has, in order: {}\n", display(),
                   required, previous.empty() ? "" : fmt::format(" after '{}'", previous), list);
        return;
      }
      at = static_cast<std::size_t>(found - headings.begin()) + 1;
      previous = required;
    }
  }

  // Every Markdown link or image `](target)` outside code (fenced blocks and `inline code`) whose
  // target is a relative path must name an existing file or folder, relative to the page
  // (the #anchor part is not checked). http(s), mailto and in-page #anchors are left alone.
  void check_links() {
    Fences fences;
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const std::string_view line = lines_[i];
      if (fences.step(trim(line))) continue;
      bool in_code = false;
      for (std::size_t j = 0; j + 1 < line.size(); ++j) {
        if (line[j] == '`') in_code = !in_code;
        if (in_code || line[j] != ']' || line[j + 1] != '(') continue;
        const std::size_t start = j + 2;
        std::size_t end = start;
        while (end < line.size() && line[end] != ')' && line[end] != ' ') ++end;
        std::string_view target = line.substr(start, end - start);
        if (target.empty() || starts_with(target, "http://") || starts_with(target, "https://") ||
            starts_with(target, "mailto:") || starts_with(target, "#")) {
          continue;
        }
        target = target.substr(0, target.find('#'));
        std::error_code ec;
        if (!fs::exists(path_.parent_path() / std::string(target), ec)) {
          fail(i, fmt::format("link to '{}', which does not exist (relative to the page)", target));
        }
        ++links_;
      }
    }
  }

  // Resolves the command's first word in --bin-dir. Empty path (and a failure) if missing.
  fs::path resolve(std::size_t line_index, const std::string& command) {
    const fs::path program = options_.bin_dir / fs::path(command).filename();
    std::error_code ec;
    if (!fs::is_regular_file(program, ec) || access(program.c_str(), X_OK) != 0) {
      fail(line_index,
           fmt::format("command '{}' not found: {} is not an executable (build the project "
                       "first: cmake --build --preset default)",
                       command, program.string()));
      return {};
    }
    return program;
  }

  // <!-- attn:run CMD ARGS --> then a ```text block. Returns the index of the block's last line.
  std::size_t run_directive(std::size_t i, std::string_view command_line) {
    const auto words = split_words(command_line);
    if (words.empty()) {
      fail(i, "attn:run without a command");
      return i;
    }
    if (i + 1 >= lines_.size() || trim(lines_[i + 1]) != "```text") {
      fail(i, "attn:run must be followed immediately by a ```text line");
      return i;
    }
    std::size_t close = i + 2;
    while (close < lines_.size() && trim(lines_[close]) != "```") ++close;
    if (close == lines_.size()) {
      fail(i + 1, "the ```text block is never closed");
      return lines_.size();
    }
    ++outputs_;
    const fs::path program = resolve(i, words.front());
    if (program.empty()) return close;

    std::string error;
    const std::vector<std::string> args(words.begin() + 1, words.end());
    const auto run = run_command(program, args, options_.root, error);
    if (!run) {
      fail(i, fmt::format("cannot run '{}': {}", command_line, error));
      return close;
    }
    const std::vector<std::string> actual = shown_lines(*run);
    for (const auto& line : actual) {
      if (starts_with(trim(line), "```")) {
        fail(i, fmt::format("the output of '{}' contains a ``` line; it cannot go in a text block",
                            command_line));
        return close;
      }
    }
    const std::vector<std::string> shown(lines_.begin() + static_cast<std::ptrdiff_t>(i + 2),
                                         lines_.begin() + static_cast<std::ptrdiff_t>(close));
    const bool timing = std::find(args.begin(), args.end(), "--timing") != args.end();
    const auto normalise = [timing](std::vector<std::string> lines) {
      for (auto& line : lines) {
        line = mask_rounding_noise(line);
        if (timing) line = mask_timings(line);
      }
      return lines;
    };
    const auto want = normalise(shown);
    const auto got = normalise(actual);
    if (want == got) return close;

    if (options_.update) {
      lines_.erase(lines_.begin() + static_cast<std::ptrdiff_t>(i + 2),
                   lines_.begin() + static_cast<std::ptrdiff_t>(close));
      lines_.insert(lines_.begin() + static_cast<std::ptrdiff_t>(i + 2), actual.begin(),
                    actual.end());
      changed_ = true;
      return i + 2 + actual.size();
    }
    fail(i, fmt::format("the output of '{}' differs from the page (- page, + program; values below "
                        "1e-5 shown as ~0{}):",
                        command_line, timing ? ", timings as #" : ""));
    print_diff(want, got, diff(want, got), i + 3);
    fmt::print("  to accept the new output: {}\n", kUpdateCommand);
    return close;
  }

  // <!-- attn:figures CMD ARGS --svg DIR -->: run with DIR swapped for a temporary folder.
  void figures_directive(std::size_t i, std::string_view command_line) {
    auto words = split_words(command_line);
    const auto svg = std::find(words.begin(), words.end(), "--svg");
    if (words.empty() || svg == words.end() || svg + 1 == words.end()) {
      fail(i, "attn:figures needs a command with --svg DIR");
      return;
    }
    ++figures_;
    const fs::path program = resolve(i, words.front());
    if (program.empty()) return;
    const fs::path committed_dir = options_.root / *(svg + 1);

    std::string pattern = (fs::temp_directory_path() / "attn-doccheck-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      fail(i, fmt::format("cannot create a temporary folder: {}", std::strerror(errno)));
      return;
    }
    const fs::path temp_dir = pattern;
    *(svg + 1) = temp_dir.string();

    std::string error;
    const std::vector<std::string> args(words.begin() + 1, words.end());
    const auto run = run_command(program, args, options_.root, error);
    compare_figures(i, command_line, run, error, temp_dir, committed_dir);
    std::error_code ec;
    fs::remove_all(temp_dir, ec);
  }

  void compare_figures(std::size_t i, std::string_view command_line,
                       const std::optional<RunResult>& run, const std::string& error,
                       const fs::path& temp_dir, const fs::path& committed_dir) {
    if (!run) {
      fail(i, fmt::format("cannot run '{}': {}", command_line, error));
      return;
    }
    if (run->signaled || run->exit_code != 0) {
      fail(i, fmt::format("'{}' failed:", command_line));
      for (const auto& line : shown_lines(*run)) fmt::print("  {}\n", line);
      return;
    }
    std::vector<fs::path> written;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(temp_dir, ec)) {
      if (entry.is_regular_file()) written.push_back(entry.path());
    }
    std::sort(written.begin(), written.end());
    if (written.empty()) {
      fail(i, fmt::format("'{}' wrote no figure", command_line));
      return;
    }
    const fs::path shown_dir = committed_dir.lexically_relative(options_.root);
    for (const auto& file : written) {
      const fs::path committed = committed_dir / file.filename();
      const auto fresh = read_file(file);
      const auto old = read_file(committed);
      if (fresh && old && *fresh == *old) continue;
      if (options_.update) {
        fs::create_directories(committed_dir, ec);
        if (!fresh || !write_file(committed, *fresh)) {
          fail(i, fmt::format("cannot write {}", committed.string()));
        } else {
          fmt::print("{}: wrote {}\n", display(), (shown_dir / file.filename()).string());
        }
        continue;
      }
      if (!old) {
        fail(i, fmt::format("figure {} is missing (the program writes it); to add it: {}",
                            (shown_dir / file.filename()).string(), kUpdateCommand));
      } else {
        const auto a = split_lines(*old);
        const auto b = split_lines(fresh.value_or(""));
        std::size_t first = 0;
        while (first < a.size() && first < b.size() && a[first] == b[first]) ++first;
        fail(i,
             fmt::format(
                 "figure {} differs from what '{}' writes (first at line {}); to accept it: {}",
                 (shown_dir / file.filename()).string(), command_line, first + 1, kUpdateCommand));
      }
    }
  }

  const Options& options_;
  fs::path path_;
  std::vector<std::string> lines_;
  bool ends_with_newline_ = true;
  bool changed_ = false;
  int failures_ = 0;
  int outputs_ = 0;
  int figures_ = 0;
  int links_ = 0;
};

constexpr const char* kUsage =
    "usage: attn-doccheck [--update] --bin-dir DIR --root SRC FILE.md...";

// Exits with 0, or with 1 and one line on stderr when what was printed could not be written
// (> /dev/full, past `ulimit -f`): --help and --mask end here.
[[noreturn]] void exit_checked() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    std::fprintf(stderr, "attn-doccheck: error: cannot write the output (stdout)\n");
    std::exit(1);
  }
  std::exit(0);
}

std::optional<Options> parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--mask" && i + 1 < argc) {
      // For the tests of the masks: print a line as the comparison sees it, and exit.
      fmt::print("{}\n", mask_timings(mask_rounding_noise(argv[++i])));
      exit_checked();
    } else if (arg == "--update") {
      options.update = true;
    } else if ((arg == "--bin-dir" || arg == "--root") && i + 1 < argc) {
      (arg == "--bin-dir" ? options.bin_dir : options.root) =
          fs::absolute(argv[++i]).lexically_normal();
    } else if (arg == "--help" || arg == "-h") {
      fmt::print(
          "{}\nChecks (or with --update rewrites) the program output and figures in the pages;\n"
          "see CONTRIBUTING.md, \"A doc page\".\n",
          kUsage);
      exit_checked();
    } else if (starts_with(arg, "-")) {
      fmt::print(stderr, "attn-doccheck: error: unknown option '{}' ({})\n", arg, kUsage);
      return std::nullopt;
    } else {
      options.pages.push_back(fs::absolute(argv[i]).lexically_normal());
    }
  }
  if (options.bin_dir.empty() || options.root.empty() || options.pages.empty()) {
    fmt::print(stderr,
               "attn-doccheck: error: --bin-dir, --root and at least one page are required ({})\n",
               kUsage);
    return std::nullopt;
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);  // a write past `ulimit -f` fails (EFBIG) instead of killing
  const auto options = parse(argc, argv);
  if (!options) return 2;
  bool ok = true;
  for (const auto& page : options->pages) {
    Page checked(*options, page);
    ok = checked.process() && ok;
  }
  // Output that cannot be written (> /dev/full) is an error too.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    std::fprintf(stderr, "attn-doccheck: error: cannot write the output (stdout)\n");
    return 1;
  }
  return ok ? 0 : 1;
}
