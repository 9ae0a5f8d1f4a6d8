// tools/attn_check.cpp: attn-check, the learner's loop: build, check, show the next step.
//   attn-check [NN | exNN.M] [--watch]       attn-check --hint exNN.M (the whole ladder)
// 1. Builds the learner's test binaries itself (cmake --build <this build> --target chNN_mine
//    NN_name: the tests and the walkthrough that --mine runs), one chapter at a time. A chapter
//    that does not compile is reported (the exercise, file:line and the first error in plain words)
//    and none of its old results are shown.
// 2. Runs each chapter's tests in a process of its own (chNN_mine --attn-records FILE): a crash
//    or an endless loop in one exercise never hides the others; after a crash the chapter's
//    remaining exercises run again without the one that crashed.
// 3. Prints the table of every exercise of the selected chapters, the count still to do and the
//    next exercise with its first hint (LaTeX made readable).
// --watch checks again whenever a file under chapters/*/exercises/ is saved (polling, twice a
// second); h + Enter shows the next hint, q + Enter or Ctrl-C stops.
// Hidden, for the tests: --watch-cycles N (stop after N checks), --build-command CMD (run
// "CMD chNN_mine" through /bin/sh instead of cmake --build), --timeout S (per chapter run),
// --chapter-binary NN=PATH (run PATH as chapter NN's tests, e.g. a catalogue build),
// --verify-shipped (every committed stub still carries its TODO marker; ctest
// exercise.shipped_markers).
#include <cerrno>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "course.hpp"

namespace {

namespace fs = std::filesystem;
namespace course = attn::course;
using course::CaseRecord;
using course::Failure;

constexpr const char* kUsage = "usage: attn-check [NN | exNN.M] [--watch] [--hint exNN.M] [--help]";

// ---------------------------------------------------------------------------------------------
// 1. The build this program belongs to (compiled in by tests/exercises/CMakeLists.txt).

// The chapters with exercise tests in this build: "01" -> "01_bigram" (the walkthrough's target).
const std::map<std::string, std::string>& chapter_targets() {
  static const std::map<std::string, std::string> targets = [] {
    std::map<std::string, std::string> found;
    std::istringstream list(ATTN_EXERCISE_CHAPTERS);
    for (std::string name; std::getline(list, name, ',');) {
      if (name.size() > 2) found[name.substr(0, 2)] = name;
    }
    return found;
  }();
  return targets;
}

std::vector<std::string> compiled_chapters() {  // "01", "02", ...
  std::vector<std::string> chapters;
  for (const auto& [nn, name] : chapter_targets()) chapters.push_back(nn);
  return chapters;
}

std::map<std::string, fs::path>& binary_overrides() {  // --chapter-binary NN=PATH
  static std::map<std::string, fs::path> overrides;
  return overrides;
}

fs::path mine_binary(const std::string& nn) {
  if (const auto found = binary_overrides().find(nn); found != binary_overrides().end()) {
    return found->second;
  }
  return fs::path(ATTN_EXERCISE_BIN_DIR) / ("ch" + nn + "_mine");
}

struct Options {
  std::optional<std::string> selection;  // "03" or "ex03.2"
  bool watch = false;
  int watch_cycles = 0;  // 0: until stopped
  std::optional<std::string> build_command;
  int timeout_s = 60;
};

// ---------------------------------------------------------------------------------------------
// 2. Child processes.

volatile std::sig_atomic_t g_stop = 0;

struct ChildResult {
  bool started = false;
  int exit_code = -1;  // when it exited normally
  int signal = 0;      // when a signal killed it
  bool timed_out = false;
  std::string output;  // stdout + stderr, when captured
};

ChildResult run_child(const std::vector<std::string>& args, bool capture, int timeout_s) {
  ChildResult result;
  int fds[2] = {-1, -1};
  if (capture && pipe(fds) != 0) return result;
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return result;
  if (pid == 0) {
    if (capture) {
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "attn-check: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  result.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  if (capture) {
    close(fds[1]);
    char buffer[4096];
    for (;;) {
      pollfd p{fds[0], POLLIN, 0};
      const int ready = poll(&p, 1, 100);
      if (ready > 0) {
        const ssize_t n = read(fds[0], buffer, sizeof buffer);
        if (n <= 0) break;
        result.output.append(buffer, static_cast<std::size_t>(n));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        result.timed_out = true;
        break;
      }
    }
    close(fds[0]);
    waitpid(pid, &status, 0);
  } else {
    for (;;) {
      const pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        result.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "a segmentation fault (SIGSEGV: memory outside a tensor?)";
    case SIGFPE:
      return "a floating-point exception (SIGFPE: an integer division by zero?)";
    case SIGABRT:
      return "an abort (SIGABRT: a failed assert or an uncaught exception)";
    case SIGBUS:
      return "a bus error (SIGBUS)";
    case SIGILL:
      return "an illegal instruction (SIGILL)";
    case SIGKILL:
      return "SIGKILL";
    default:
      return fmt::format("signal {}", sig);
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Building, and compile errors in plain words.

struct BuildError {
  std::optional<course::ExerciseId> exercise;  // from the stub's file name, when known
  std::string chapter;
  std::string where;  // "chapters/04_single_head/exercises/ex04_1_project.cpp:23:5"
  int line = 0;
  std::string file;     // absolute path of `where`
  std::string message;  // the compiler's first error
  std::string plain;    // the same in plain words
};

// The compiler's wording of the most common first errors, said plainly.
std::string plain_words(const std::string& message) {
  struct Rule {
    std::regex pattern;
    const char* text;
  };
  static const std::vector<Rule> rules = {
      {std::regex("^'([^']+)' was not declared in this scope.*"),
       "$1 is not declared here: a typo, a variable declared in another block, or a missing "
       "#include?"},
      {std::regex("^use of undeclared identifier '([^']+)'.*"),
       "$1 is not declared here: a typo, a variable declared in another block, or a missing "
       "#include?"},
      {std::regex("^expected '([^']+)' before (.*)"), "a '$1' is missing before $2"},
      {std::regex("^expected '([^']+)' at end of input.*"),
       "a '$1' is missing at the end of the file (an unclosed brace?)"},
      {std::regex("^expected ([^ ]+) after (.*)"), "a $1 is missing after $2"},
      {std::regex("^no matching function for call to '([^(']+).*"),
       "no version of $1 takes these arguments: check their number and types"},
      {std::regex("^no match for '(operator[^']+)' \\(operand types are (.*)\\)"),
       "$1 does not work on $2"},
      {std::regex("^invalid operands to binary expression \\((.*)\\)"),
       "this operator does not work on $1"},
      {std::regex("^cannot convert '([^']+)' to '([^']+)'.*"), "a $1 is used where a $2 is needed"},
      {std::regex("^conversion from '([^']+)' to non-scalar type '([^']+)' requested"),
       "a $1 cannot become a $2"},
      {std::regex("^'(?:class |struct )?([^']+)' has no member named '([^']+)'.*"),
       "$2 is not a member of $1"},
      {std::regex("^no member named '([^']+)' in '([^']+)'.*"), "$1 is not a member of $2"},
      {std::regex("^redeclaration of '([^']+)'"), "$1 is declared twice in the same block"},
      {std::regex("^assignment of read-only (variable|location|reference) '([^']+)'"),
       "$2 is const: it cannot be changed (make a copy, or drop const)"},
      {std::regex("^undefined reference to `([^(']+)\\(.*"),
       "$1 is declared in exercises.hpp but not defined with that signature: were its parameters "
       "or its name changed?"},
  };
  for (const Rule& rule : rules) {
    if (std::regex_match(message, rule.pattern)) {
      if (message.rfind("undefined reference", 0) == 0) {
        return std::regex_replace(message, rule.pattern, rule.text);
      }
      return std::regex_replace(message, rule.pattern, rule.text);
    }
  }
  return message;
}

std::optional<BuildError> first_error(const std::string& log, const std::string& chapter) {
  static const std::regex compile_error(R"(^(.+?):(\d+):(\d+): (?:fatal )?error: (.*)$)");
  static const std::regex link_error(R"(undefined reference to `([^']+)')");
  static const std::regex stub_location(
      R"(((?:/|[A-Za-z0-9_.-]+/)\S*ex\d\d_\d+_[A-Za-z0-9_]+\.cpp):(\d+))");
  BuildError error;
  error.chapter = chapter;
  std::istringstream lines(log);
  std::smatch m;
  bool found = false;
  for (std::string line; std::getline(lines, line);) {
    // Strip terminal colours, if the compiler added any, and its typographic quotes.
    line = std::regex_replace(line, std::regex("\x1b\\[[0-9;]*[mK]"), "");
    for (const char* quote : {"\u2018", "\u2019"}) {
      for (auto at = line.find(quote); at != std::string::npos; at = line.find(quote)) {
        line.replace(at, std::string_view(quote).size(), "'");
      }
    }
    if (std::regex_match(line, m, compile_error)) {
      error.file = m[1];
      error.line = std::stoi(m[2]);
      error.where = fmt::format("{}:{}:{}", course::repo_relative(fs::path(m[1].str())), m[2].str(),
                                m[3].str());
      error.message = m[4];
      found = true;
      break;
    }
    if (std::regex_search(line, m, link_error)) {
      error.message = "undefined reference to `" + m[1].str() + "'";
      static const std::regex ns(R"(ex(\d\d)::)");
      std::smatch n;
      const std::string symbol = m[1];
      if (std::regex_search(symbol, n, ns)) error.chapter = n[1];
      found = true;
      break;
    }
  }
  if (!found) return std::nullopt;
  // GCC spells out every alias: "'const attn::Matrix' {aka 'const xt::xtensor_container<...>'}".
  // The learner wrote the short name; keep only that.
  error.message = std::regex_replace(error.message, std::regex(R"( \{aka '[^']*'\})"), "");
  error.plain = plain_words(error.message);
  // A link error names a function: the stub that should define it is the exercise.
  if (error.file.empty()) {
    static const std::regex function(R"(`(ex\d\d::[A-Za-z0-9_]+)\()");
    std::smatch f;
    if (std::regex_search(error.message, f, function)) {
      const std::string name = f[1].str().substr(6);  // without "exNN::"
      for (const auto& [id, paths] : course::stubs_on_disk()) {
        const auto parsed = course::parse_id(id);
        if (!parsed || parsed->chapter != error.chapter) continue;
        if (course::read_file(paths.front()).value_or("").find(" " + name + "(") !=
            std::string::npos) {
          error.exercise = parsed;
          error.where = course::repo_relative(paths.front());
        }
      }
    }
    error.message = std::regex_replace(error.message, std::regex(R"(\(.*\)')"), "(...)'");
  }
  if (!error.file.empty()) error.exercise = course::id_of_stub(fs::path(error.file));
  // An error inside a header or the library, caused by a line of a stub ("required from here",
  // "In file included from"): point at the stub's line.
  if (!error.exercise) {
    std::smatch s;
    std::string rest = log;
    if (std::regex_search(rest, s, stub_location)) {
      const fs::path stub = s[1].str();
      if (auto id = course::id_of_stub(stub)) {
        error.exercise = id;
        error.file = s[1];
        error.line = std::stoi(s[2]);
        error.where = error.where.empty()
                          ? fmt::format("{}:{}", course::repo_relative(stub), error.line)
                          : fmt::format("{}:{} (the error itself is in {})",
                                        course::repo_relative(stub), error.line, error.where);
      }
    }
  }
  return error;
}

std::string source_line(const std::string& file, int line) {
  std::istringstream text(course::read_file(fs::path(file)).value_or(""));
  std::string content;
  for (int i = 1; std::getline(text, content); ++i) {
    if (i == line) return content;
  }
  return {};
}

struct ChapterBuild {
  bool ok = true;
  std::optional<BuildError> error;
  std::string log;                    // when it failed without an error we could read
  std::vector<std::string> warnings;  // "ex04.1 line 7: unused variable 'count'" (stubs only)
};

// The compiler's warnings about the learner's stubs, as "exNN.M line N: message". They never
// stop the build, but they are worth reading (a compiler only repeats them when it recompiles
// the file, that is, right after a save). -Wdouble-promotion fires on every float that meets a
// double, which is what adding up in double (as several stubs ask) does on every line: those
// are folded into one line per exercise and listed last, so that a warning that may name a bug
// (an unused variable, a comparison of signed and unsigned) is always among the first shown.
std::vector<std::string> stub_warnings(const std::string& log) {
  static const std::regex warning(R"(^(.+?):(\d+):\d+: warning: (.*?)(?: \[-W([^\]]*)\])?$)");
  std::vector<std::string> found;
  std::vector<std::pair<std::string, std::vector<std::string>>> promoted;  // id, its lines
  std::istringstream lines(log);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    for (const char* quote : {"\u2018", "\u2019"}) {
      for (auto at = line.find(quote); at != std::string::npos; at = line.find(quote)) {
        line.replace(at, std::string_view(quote).size(), "'");
      }
    }
    if (!std::regex_match(line, m, warning)) continue;
    const auto id = course::id_of_stub(fs::path(m[1].str()));
    if (!id) continue;
    if (m[4].str() == "double-promotion") {
      auto at = std::find_if(promoted.begin(), promoted.end(),
                             [&](const auto& p) { return p.first == id->id; });
      if (at == promoted.end()) at = promoted.insert(promoted.end(), {id->id, {}});
      if (std::find(at->second.begin(), at->second.end(), m[2].str()) == at->second.end())
        at->second.push_back(m[2].str());
      continue;
    }
    const std::string text = std::regex_replace(m[3].str(), std::regex(R"( \{aka '[^']*'\})"), "");
    found.push_back(fmt::format("{} line {}: {}", id->id, m[2].str(), text));
  }
  for (const auto& [id, at] : promoted) {
    found.push_back(
        fmt::format("{} line{} {}: float promoted to double (harmless where you add "
                    "up in double on purpose)",
                    id, at.size() == 1 ? "" : "s", fmt::join(at, ", ")));
  }
  return found;
}

ChapterBuild build_chapter(const std::string& nn, const Options& options) {
  // The tests on the learner's code, and the walkthrough, so that `NN_name --mine` runs it too.
  const std::string target = "ch" + nn + "_mine";
  const std::string walkthrough = chapter_targets().at(nn);
  std::vector<std::string> args;
  if (options.build_command) {
    args = {"/bin/sh", "-c", *options.build_command + " " + target + " " + walkthrough};
  } else {
    args = {ATTN_CMAKE_COMMAND, "--build", ATTN_BINARY_DIR, "--target", target, walkthrough};
  }
  const ChildResult r = run_child(args, /*capture=*/true, /*timeout_s=*/1800);
  ChapterBuild build;
  if (r.started && !r.timed_out && r.exit_code == 0) {
    build.warnings = stub_warnings(r.output);
    return build;
  }
  build.ok = false;
  build.error = first_error(r.output, nn);
  build.log = r.output;
  return build;
}

// ---------------------------------------------------------------------------------------------
// 4. Running a chapter's tests in processes of their own.

struct ChapterRun {
  std::vector<CaseRecord> cases;
  std::string problem;  // the runner itself failed (no binary...), empty otherwise
};

ChapterRun run_chapter(const std::string& nn, const Options& options) {
  ChapterRun run;
  const fs::path binary = mine_binary(nn);
  const fs::path records = fs::temp_directory_path() / fmt::format("attn-check-{}-ch{}.records",
                                                                   static_cast<long>(getpid()), nn);
  std::set<std::string> seen_suites;  // exercise ids already run (or crashed)
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::vector<std::string> args = {binary.string(), "--attn-records", records.string()};
    if (options.selection && options.selection->size() > 2) {
      args.push_back("--test-suite=" + *options.selection + " *");
    }
    if (!seen_suites.empty()) {
      std::string exclude;
      for (const auto& id : seen_suites) exclude += (exclude.empty() ? "" : ",") + id + " *";
      args.push_back("--test-suite-exclude=" + exclude);
    }
    const ChildResult r = run_child(args, /*capture=*/false, options.timeout_s);
    std::vector<CaseRecord> cases = course::parse_records(course::read_file(records).value_or(""));
    std::error_code ec;
    fs::remove(records, ec);
    if (!r.started || r.exit_code == 127) {
      run.problem = fmt::format("cannot run {}", course::repo_relative(binary));
      return run;
    }
    const bool died = r.signal != 0 || r.timed_out;
    // The case that crashed or hung is the last one that started (doctest may still have closed
    // it from its signal handler).
    const CaseRecord* culprit = nullptr;
    for (const CaseRecord& c : cases) {
      if (c.ran) culprit = &c;
    }
    for (CaseRecord& c : cases) {
      if (died && &c == culprit) {
        Failure f;
        if (r.timed_out) {
          f.text = fmt::format(
              "timed out after {} s: an endless loop? (the exercise's other cases did not run)",
              options.timeout_s);
        } else {
          f.text = fmt::format("crashed with {} (the exercise's other cases did not run)",
                               signal_name(r.signal));
        }
        // doctest's own report of the signal, if it got one out, says the same: keep ours.
        c.failures.erase(
            std::remove_if(c.failures.begin(), c.failures.end(),
                           [](const Failure& x) { return x.text.rfind("crashed: ", 0) == 0; }),
            c.failures.end());
        c.failures.insert(c.failures.begin(), f);
        c.finished = true;
      }
      seen_suites.insert(course::split_suite(c.suite).first);
      run.cases.push_back(std::move(c));
    }
    if (!died) return run;
    if (cases.empty()) {
      run.problem = r.timed_out
                        ? "the tests timed out before the first case"
                        : "the tests crashed before the first case: " + signal_name(r.signal);
      return run;
    }
  }
  return run;
}

// ---------------------------------------------------------------------------------------------
// 5. The table.

struct Row {
  course::ExerciseId id;
  std::string chapter_dir;  // "03_masked_softmax"
  std::string title;
  fs::path stub;
  std::string status;
  std::string failure;  // first failure, one line
  int hint = 0;         // the hint that fits the first failure's case (0: none declared)
  const BuildError* build_error = nullptr;
};

bool is_done(const Row& row) { return row.status == "done"; }

std::string status_of(const std::vector<const CaseRecord*>& cases, bool marker,
                      const std::string& id, std::string& first_failure, int& hint) {
  first_failure.clear();
  hint = 0;
  std::string todo_failure;
  bool crashed = false;
  bool timed_out = false;
  int failed = 0;
  for (const CaseRecord* c : cases) {
    if (!c->passed()) ++failed;
    for (const Failure& f : c->failures) {
      crashed = crashed || f.text.rfind("crashed", 0) == 0;
      timed_out = timed_out || f.text.rfind("timed out", 0) == 0;
      if (course::is_todo_exception(f.exception, id)) {
        if (todo_failure.empty()) todo_failure = f.text;
      } else if (first_failure.empty()) {
        first_failure = f.text;
        hint = c->hint;
      }
    }
  }
  if (crashed) return "crashed";
  if (timed_out) return "timed out";
  if (marker) {
    if (failed == 0) return "passes: delete TODO";
    if (first_failure.empty()) return "not started";
    return "failing";
  }
  if (failed == 0) return "done";
  if (first_failure.empty()) first_failure = todo_failure;
  return "failing";
}

void print_table(const std::vector<Row>& rows) {
  const std::vector<std::string> header = {"chapter", "exercise", "title", "status",
                                           "first failure"};
  std::vector<std::vector<std::string>> cells;
  for (const Row& row : rows) {
    cells.push_back(
        {row.chapter_dir, row.id.id, row.title, row.status, course::truncate(row.failure, 60)});
  }
  std::vector<std::size_t> widths;
  for (const auto& h : header) widths.push_back(course::width(h));
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i)
      widths[i] = std::max(widths[i], course::width(line[i]));
  }
  const auto print_line = [&widths](const std::vector<std::string>& line) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      text += (i + 1 == line.size()) ? line[i] : course::pad(line[i], widths[i]) + "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    fmt::print("{}\n", text);
  };
  print_line(header);
  for (const auto& line : cells) print_line(line);
}

std::string this_program() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("attn-check") : course::repo_relative(exe);
}

void print_build_error(const BuildError& e) {
  const std::string what = e.exercise ? e.exercise->id : "chapter " + e.chapter;
  fmt::print("\n{} does not {}", what, e.file.empty() && !e.message.empty() ? "link" : "compile");
  if (!e.where.empty()) fmt::print(": {}", e.where);
  fmt::print("\n  {}\n", e.plain);
  if (!e.file.empty() && e.line > 0) {
    const std::string code = source_line(e.file, e.line);
    if (!code.empty()) fmt::print("  {:>5} | {}\n", e.line, code);
  }
  if (e.plain != e.message) fmt::print("  (the compiler says: {})\n", e.message);
}

// Hints 1..level of the exercise's ladder (only the last of them with only_last).
void print_hint(const Row& row, int level, bool only_last = false) {
  const std::vector<std::string> ladder = course::hints(row.id.chapter, row.id.id);
  if (ladder.empty()) return;
  const int shown = std::clamp(level, 1, static_cast<int>(ladder.size()));
  for (int i = only_last ? shown - 1 : 0; i < shown; ++i) {
    fmt::print("\nHint {} of {}:\n", i + 1, ladder.size());
    std::istringstream lines(course::render_for_terminal(ladder[static_cast<std::size_t>(i)]));
    for (std::string line; std::getline(lines, line);) {
      fmt::print("{}\n", line.empty() ? line : "  " + line);
    }
  }
  if (shown < static_cast<int>(ladder.size())) {
    const auto page = course::chapter_page(row.id.chapter);
    fmt::print("\n(the next hint: {} --hint {}, or h + Enter in --watch; all of them in {})\n",
               this_program(), row.id.id,
               page ? course::repo_relative(*page) : "the chapter's page");
  }
}

void print_next(const Row& row, int hint_level) {
  const std::string stub =
      row.stub.empty() ? std::string("(no stub file)") : course::repo_relative(row.stub);
  fmt::print("\nNext: {} {}\n", row.id.id, row.title);
  fmt::print("  edit:   {}\n", stub);
  fmt::print("  check:  {} {}\n", this_program(), row.id.id);
  if (row.build_error != nullptr) {
    print_build_error(*row.build_error);
    return;
  }
  if (row.status == "passes: delete TODO") {
    fmt::print("\nIts tests pass: delete the TODO({}) line in {} to mark it done.\n", row.id.id,
               stub);
    return;
  }
  if (!row.failure.empty() && row.status != "not started") {
    fmt::print("  first failure:\n    {}\n", row.failure);
  }
  // The failing case names the hint that fits it: that one, unless the learner already asked
  // for more.
  if (row.hint > hint_level && row.status == "failing") {
    print_hint(row, row.hint, /*only_last=*/true);
    return;
  }
  print_hint(row, hint_level);
}

// ---------------------------------------------------------------------------------------------
// 6. One check: build, run, print. Returns 0 when every selected exercise is done.

struct Check {
  int exit_code = 1;
  std::optional<Row> next;
};

Check check_once(const Options& options, int hint_level) {
  Check result;
  // Every chapter this build has tests for, and every chapter with stubs on disk (one without
  // tests in this build is listed too, as not checked).
  const auto stubs = course::stubs_on_disk();
  const std::vector<std::string> compiled = compiled_chapters();
  std::set<std::string> all_chapters(compiled.begin(), compiled.end());
  for (const auto& [id, paths] : stubs) {
    if (const auto parsed = course::parse_id(id)) all_chapters.insert(parsed->chapter);
  }
  std::vector<std::string> chapters;
  for (const auto& nn : all_chapters) {
    if (!options.selection ||
        options.selection->substr(options.selection->size() > 2 ? 2 : 0, 2) == nn) {
      chapters.push_back(nn);
    }
  }
  std::vector<BuildError> errors;  // kept alive for the rows that point at them
  errors.reserve(chapters.size());
  std::vector<Row> rows;
  std::vector<std::string> problems;
  std::vector<std::string> warnings;
  for (const auto& nn : chapters) {
    const bool has_tests = std::find(compiled.begin(), compiled.end(), nn) != compiled.end();
    const ChapterBuild build = has_tests ? build_chapter(nn, options) : ChapterBuild{};
    warnings.insert(warnings.end(), build.warnings.begin(), build.warnings.end());
    // The chapter's exercises: every stub on disk, plus every suite its tests report.
    std::map<int, Row> by_number;
    for (const auto& [id, paths] : stubs) {
      const auto parsed = course::parse_id(id);
      if (!parsed || parsed->chapter != nn) continue;
      if (options.selection && options.selection->size() > 2 && *options.selection != id) continue;
      Row row;
      row.id = *parsed;
      row.stub = paths.front();
      row.chapter_dir = paths.front().parent_path().parent_path().filename().string();
      row.title = course::title_from_page(nn, id);
      by_number[parsed->number] = row;
    }
    if (!has_tests) {
      for (auto& [number, row] : by_number) {
        row.status = "not checked";
        row.failure = fmt::format("no exercise tests for chapter {} in this build", nn);
        rows.push_back(row);
      }
      continue;
    }
    if (!build.ok) {
      const BuildError* error = nullptr;
      if (build.error) {
        errors.push_back(*build.error);
        error = &errors.back();
      } else {
        problems.push_back(fmt::format(
            "chapter {} does not build, and the build log has no error "
            "line attn-check can read; its last lines:\n{}",
            nn, build.log.substr(build.log.size() > 2000 ? build.log.size() - 2000 : 0)));
      }
      for (auto& [number, row] : by_number) {
        if (error != nullptr && error->exercise && error->exercise->id == row.id.id) {
          row.status = "does not compile";
          row.failure = error->line > 0 ? fmt::format("line {}: {}", error->line, error->plain)
                                        : error->plain;
          row.build_error = error;
        } else {
          row.status = "not checked";
          row.failure = fmt::format("chapter {} does not compile", nn);
        }
      }
      // The error is in no single exercise (exercises.hpp, a link error): the first one shows it.
      if (error != nullptr && !by_number.empty() &&
          std::none_of(by_number.begin(), by_number.end(),
                       [](const auto& entry) { return entry.second.build_error != nullptr; })) {
        by_number.begin()->second.build_error = error;
        by_number.begin()->second.failure = error->plain;
      }
      for (auto& [number, row] : by_number) rows.push_back(row);
      continue;
    }
    const ChapterRun run = run_chapter(nn, options);
    if (!run.problem.empty()) problems.push_back(fmt::format("chapter {}: {}", nn, run.problem));
    std::map<int, std::vector<const CaseRecord*>> cases_of;
    for (const CaseRecord& c : run.cases) {
      const auto [id_text, title] = course::split_suite(c.suite);
      const auto id = course::parse_id(id_text);
      if (!id || id->chapter != nn) continue;
      if (options.selection && options.selection->size() > 2 && *options.selection != id->id)
        continue;
      Row& row = by_number[id->number];
      if (row.id.id.empty()) {  // a suite without a stub on disk
        row.id = *id;
        row.chapter_dir = nn;
      }
      if (!title.empty()) row.title = title;
      if (c.ran) cases_of[id->number].push_back(&c);
    }
    for (auto& [number, row] : by_number) {
      const bool marker = !row.stub.empty() &&
                          course::has_marker(course::read_file(row.stub).value_or(""), row.id.id);
      if (cases_of[number].empty() && run.problem.empty()) {
        row.status = row.stub.empty() ? "no stub file" : "no tests";
        row.failure = row.stub.empty()
                          ? ""
                          : fmt::format("no TEST_SUITE(\"{} ...\") in tests/exercises", row.id.id);
      } else if (cases_of[number].empty()) {
        row.status = "not run";
        row.failure = run.problem;
      } else {
        row.status = status_of(cases_of[number], marker, row.id.id, row.failure, row.hint);
      }
      rows.push_back(row);
    }
  }

  if (options.selection && rows.empty()) {
    std::string list;
    for (const auto& nn : compiled_chapters()) list += (list.empty() ? "" : " ") + nn;
    fmt::print(stderr, "attn-check: error: no {} {} (chapters with exercises: {})\n",
               options.selection->size() == 2 ? "chapter" : "exercise", *options.selection, list);
    result.exit_code = 2;
    return result;
  }
  print_table(rows);
  for (const auto& problem : problems) fmt::print("\nattn-check: {}\n", problem);
  if (!warnings.empty()) {
    // Every chapter's folded promotions after every warning that may name a bug.
    std::stable_partition(warnings.begin(), warnings.end(), [](const std::string& w) {
      return w.find(": float promoted to double (") == std::string::npos;
    });
    fmt::print("\nWarnings in your code (they never stop the build):\n");
    for (std::size_t i = 0; i < warnings.size() && i < 8; ++i) fmt::print("  {}\n", warnings[i]);
    if (warnings.size() > 8) fmt::print("  ... and {} more\n", warnings.size() - 8);
  }
  const auto next =
      std::find_if(rows.begin(), rows.end(), [](const Row& r) { return !is_done(r); });
  if (next == rows.end() && problems.empty()) {
    if (rows.size() == 1) {
      fmt::print("\n{} is done. Well done!\n", rows.front().id.id);
    } else {
      fmt::print("\nAll {} exercises done. Well done!\n", rows.size());
    }
    result.exit_code = 0;
    return result;
  }
  const auto left =
      std::count_if(rows.begin(), rows.end(), [](const Row& r) { return !is_done(r); });
  fmt::print("\n{} of {} {} to go.\n", left, rows.size(),
             rows.size() == 1 ? "exercise" : "exercises");
  if (next != rows.end()) {
    // A compile error comes first: nothing of its chapter can be checked before it is fixed.
    const auto broken = std::find_if(rows.begin(), rows.end(),
                                     [](const Row& r) { return r.build_error != nullptr; });
    const Row& shown = broken != rows.end() ? *broken : *next;
    print_next(shown, hint_level);
    result.next = shown;
    result.next->build_error = nullptr;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// 7. --watch.

std::map<std::string, fs::file_time_type> exercise_files(const Options& options) {
  std::map<std::string, fs::file_time_type> files;
  std::error_code ec;
  for (const auto& chapter : fs::directory_iterator(course::source_dir() / "chapters", ec)) {
    const std::string name = chapter.path().filename().string();
    if (options.selection &&
        name.substr(0, 2) != options.selection->substr(options.selection->size() > 2 ? 2 : 0, 2)) {
      continue;
    }
    const fs::path dir = chapter.path() / "exercises";
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& file : fs::directory_iterator(dir, ec)) {
      const auto ext = file.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      files[file.path().string()] = fs::last_write_time(file.path(), ec);
    }
  }
  return files;
}

void on_interrupt(int /*sig*/) { g_stop = 1; }

int watch(const Options& options) {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const bool tty_out = isatty(STDOUT_FILENO) != 0;
  bool keys = isatty(STDIN_FILENO) != 0;
  int cycles = 0;
  int hint_level = 1;
  std::string hinted_exercise;
  auto snapshot = exercise_files(options);
  int last_code = 1;
  while (g_stop == 0) {
    if (tty_out) fmt::print("\x1b[2J\x1b[H");
    const Check check = check_once(options, hint_level);
    last_code = check.exit_code;
    ++cycles;
    const std::string next_id = check.next ? check.next->id.id : "";
    if (next_id != hinted_exercise) {
      hinted_exercise = next_id;
      hint_level = 1;
    }
    if (options.watch_cycles > 0 && cycles >= options.watch_cycles) {
      std::fflush(stdout);
      return last_code;
    }
    fmt::print("\nWatching {} exercise files: save one to check again. {}Ctrl-C stops.\n",
               snapshot.size(), keys ? "h + Enter: next hint, q + Enter: quit, " : "");
    std::fflush(stdout);
    bool changed = false;
    while (!changed && g_stop == 0) {
      if (keys) {
        pollfd p{STDIN_FILENO, POLLIN, 0};
        if (poll(&p, 1, 500) > 0) {
          char buffer[256];
          const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
          if (n <= 0) {
            keys = false;  // stdin closed: keep watching without keys
          } else {
            const std::string typed(buffer, static_cast<std::size_t>(n));
            if (typed.find('q') != std::string::npos) return last_code;
            if (typed.find('h') != std::string::npos && check.next) {
              ++hint_level;
              print_hint(*check.next, hint_level, /*only_last=*/true);
              std::fflush(stdout);
            }
          }
        }
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      const auto now = exercise_files(options);
      if (now != snapshot) {
        for (const auto& [path, time] : now) {
          const auto before = snapshot.find(path);
          if (before == snapshot.end() || before->second != time) {
            fmt::print("\nattn-check: {} changed, checking again\n", course::repo_relative(path));
            break;
          }
        }
        snapshot = now;
        changed = true;
      }
    }
  }
  fmt::print("\nStopped watching.\n");
  std::fflush(stdout);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// 8. --verify-shipped: every committed stub still carries its TODO marker.

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs a shell command; returns its stdout, or nullopt if it failed.
std::optional<std::string> capture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) return std::nullopt;
  return out;
}

int verify_shipped() {
  const std::string git = "git -C " + shell_quote(course::source_dir().string());
  const auto inside = capture(git + " rev-parse --is-inside-work-tree 2>/dev/null");
  if (!inside || inside->rfind("true", 0) != 0) {
    fmt::print("skipped: not a git checkout\n");
    return 77;
  }
  int verified = 0;
  int errors = 0;
  for (const auto& [id, paths] : course::stubs_on_disk()) {
    for (const auto& path : paths) {
      const std::string rel = course::repo_relative(path);
      const auto committed =
          capture(git + " show " + shell_quote("HEAD:./" + rel) + " 2>/dev/null");
      if (!committed) {
        fmt::print("{}: not committed (a shipped stub must be in git: git add {})\n", rel, rel);
        ++errors;
      } else if (!course::has_marker(*committed, id)) {
        fmt::print("{}: the committed stub has no TODO({}) marker (was a solution committed?)\n",
                   rel, id);
        ++errors;
      } else {
        ++verified;
      }
    }
  }
  if (errors > 0) {
    fmt::print("verify shipped: {} stub(s) wrong, {} OK\n", errors, verified);
    return 1;
  }
  fmt::print("verify shipped: {} committed stubs carry their TODO markers\n", verified);
  return 0;
}

void print_help() {
  fmt::print(
      "{}\n"
      "Builds your exercise solutions, checks them, and shows your progress through the course.\n"
      "\n"
      "  attn-check                 every chapter\n"
      "  attn-check 03              chapter 03 only\n"
      "  attn-check ex03.2          one exercise\n"
      "  attn-check --watch [03]    check again every time you save an exercise file\n"
      "                             (h + Enter: the next hint, q + Enter or Ctrl-C: stop)\n"
      "  attn-check --hint ex03.2   every hint of an exercise, from a nudge to the key line\n"
      "\n"
      "An exercise is done when its tests pass and you have deleted its TODO(exNN.M) line.\n"
      "Exit code: 0 when every selected exercise is done, 1 otherwise, 2 for a usage error.\n",
      kUsage);
}

// An argument quoted in a message reaches the terminal escaped: a control character (ESC, a
// newline) or a byte above 0x7e as \xNN, never raw (this tool does not link attn_io's
// printable_bytes, so non-ASCII letters are escaped too).
std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    out += b < 0x20 || b > 0x7e ? fmt::format("\\x{:02x}", b) : std::string(1, c);
  }
  return out;
}

int usage_error(const std::string& message) {
  fmt::print(stderr, "attn-check: error: {} ({})\n", escaped(message), kUsage);
  return 2;
}

int run(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* flag) -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      (void)flag;
      return std::string(argv[++i]);
    };
    if (arg == "--help" || arg == "-h") {
      print_help();
      return 0;
    }
    if (arg == "--verify-shipped") return verify_shipped();
    if (arg == "--hint") {
      const auto v = value(arg.c_str());
      const auto id = v ? course::parse_id(*v) : std::nullopt;
      if (!id) return usage_error("--hint needs an exercise id like ex03.2");
      const auto ladder = course::hints(id->chapter, id->id);
      if (ladder.empty()) {
        fmt::print(stderr, "attn-check: error: no hints for {} (docs/{}-*.md, \"### {}\")\n",
                   id->id, id->chapter, id->id);
        return 2;
      }
      Row row;
      row.id = *id;
      print_hint(row, static_cast<int>(ladder.size()));
      return 0;
    }
    if (arg == "--watch") {
      options.watch = true;
    } else if (arg == "--watch-cycles" || arg == "--timeout") {
      const auto v = value(arg.c_str());
      if (!v || !course::all_digits(*v) || v->size() > 6 || std::stoi(*v) < 1) {
        return usage_error(arg + " needs a whole number of at least 1");
      }
      (arg == "--watch-cycles" ? options.watch_cycles : options.timeout_s) = std::stoi(*v);
    } else if (arg == "--chapter-binary") {
      const auto v = value(arg.c_str());
      if (!v || v->size() < 4 || !course::all_digits(v->substr(0, 2)) || (*v)[2] != '=') {
        return usage_error("--chapter-binary needs NN=PATH");
      }
      binary_overrides()[v->substr(0, 2)] = v->substr(3);
    } else if (arg == "--build-command") {
      const auto v = value(arg.c_str());
      if (!v || v->empty()) return usage_error("--build-command needs a command");
      options.build_command = *v;
    } else if (arg.empty() || arg[0] == '-' || options.selection) {
      return usage_error("unexpected argument '" + arg + "'");
    } else if (course::all_digits(arg) && arg.size() <= 2) {
      options.selection = arg.size() == 1 ? "0" + arg : arg;
    } else if (course::parse_id(arg)) {
      options.selection = arg;
    } else {
      return usage_error("'" + arg + "' is neither a chapter (03) nor an exercise (ex03.2)");
    }
  }
  if (options.watch) return watch(options);
  return check_once(options, 1).exit_code;
}

}  // namespace

// The input contract: output that cannot be written (> /dev/full, past `ulimit -f`) is an error,
// one line and exit code 1, whichever way the program ends (--help and --hint too).
int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);  // a write past `ulimit -f` fails (EFBIG) instead of killing
  int code = 1;
  try {
    code = run(argc, argv);
  } catch (const std::exception& e) {
    if (std::ferror(stdout) == 0) {
      std::fprintf(stderr, "attn-check: error: %s\n", e.what());
      return 1;
    }
  }
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    std::fprintf(stderr, "attn-check: error: cannot write the output (stdout): %s\n",
                 errno != 0 ? std::strerror(errno) : "write error");
    return 1;
  }
  return code;
}
