// tests/exercises/exercise_main.cpp: the doctest main behind chNN_solution, chNN_mine and
// attn-check. A doctest listener records every test case; the modes below read those records
// with the course's conventions (suite "exNN.M Title", stub exNN_M_*.cpp, marker TODO(exNN.M)):
//   (default)          plain doctest, every doctest flag works           chNN_solution, chNN_mine
//   --stub-check       a stub with its marker fails every case, a finished one passes them all
//   progress           the learner's table and the next hint             attn-check [NN | exNN.M]
//   --verify-shipped   every committed stub still carries its marker       (git show HEAD:...)
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "exercise_main.hpp"

namespace attn::exercises {
namespace {

namespace fs = std::filesystem;

const fs::path& source_dir() {
  static const fs::path dir{ATTN_SOURCE_DIR};
  return dir;
}

// ---------------------------------------------------------------------------------------------
// 1. What happened in each test case, recorded by a doctest listener.

struct Failure {
  std::string text;       // what failed, one line
  std::string exception;  // the exception's message when an exception caused it, else empty
};

struct CaseRecord {
  std::string suite;
  std::string name;
  bool ran = false;  // false: filtered out (still tells us which exercises exist)
  std::vector<Failure> failures;

  bool passed() const { return ran && failures.empty(); }
};

// A deque, so the listener's pointer to the current case survives later insertions.
std::deque<CaseRecord>& records() {
  static std::deque<CaseRecord> all;
  return all;
}

// Called (then the process exits) when a test case crashes: the modes print what they have.
std::function<void()>& on_crash() {
  static std::function<void()> hook;
  return hook;
}

std::string one_line(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The INFO()/CHECK_MESSAGE() texts in scope at a failure (CHECK_TENSOR_NEAR reports this way).
std::string active_contexts() {
  std::string joined;
  const auto add = [&joined](const std::string& text) {
    if (text.empty()) return;
    if (!joined.empty()) joined += "; ";
    joined += one_line(text);
  };
  const int active = doctest::IReporter::get_num_active_contexts();
  const doctest::IContextScope* const* scopes = doctest::IReporter::get_active_contexts();
  for (int i = 0; i < active; ++i) {
    std::ostringstream text;
    scopes[i]->stringify(&text);
    add(text.str());
  }
  const int stringified = doctest::IReporter::get_num_stringified_contexts();
  const doctest::String* texts = doctest::IReporter::get_stringified_contexts();
  for (int i = 0; i < stringified; ++i) add(texts[i].c_str());
  return joined;
}

Failure describe(const doctest::AssertData& a) {
  using namespace doctest::assertType;
  const std::string macro = doctest::assertString(a.m_at);
  const std::string expr = one_line(a.m_expr);
  const std::string exception = a.m_threw ? one_line(a.m_exception.c_str()) : std::string{};
  const std::string values = one_line(a.m_decomp.c_str());
  std::string what;
  if (a.m_at & (is_throws_as | is_throws_with)) {
    what = a.m_threw ? fmt::format("{}({}) threw a different exception: {}", macro, expr, exception)
                     : fmt::format("{}({}) did not throw", macro, expr);
  } else if (a.m_at & is_throws) {
    what = fmt::format("{}({}) did not throw", macro, expr);
  } else if (a.m_threw) {
    what = fmt::format("{}({}) threw: {}", macro, expr, exception);
  } else if (values == "false" || values == "true") {
    what = fmt::format("{}({}) failed", macro, expr);
  } else {
    what = fmt::format("{}({}) with values {}", macro, expr, values);
  }
  const std::string context = active_contexts();
  if (context.empty()) return {what, exception};
  // CAPTURE(i) gives "i := 3": the check first, then where. A message from INFO or CHECK_MESSAGE
  // (CHECK_TENSOR_NEAR reports that way) explains the failure better than the check: it comes
  // first.
  if (context.find(" := ") != std::string::npos) {
    return {fmt::format("{} at {}", what, context), exception};
  }
  return {fmt::format("{} [{}]", context, what), exception};
}

class Recorder : public doctest::IReporter {
 public:
  explicit Recorder(const doctest::ContextOptions& /*options*/) {}

  void report_query(const doctest::QueryData& /*query*/) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& /*stats*/) override {}

  void test_case_start(const doctest::TestCaseData& test) override {
    current_ = &add(test, /*ran=*/true);
    subcases_.clear();
  }
  void test_case_reenter(const doctest::TestCaseData& /*test*/) override { subcases_.clear(); }
  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    if (current_ != nullptr && !stats.testCaseSuccess && current_->failures.empty()) {
      current_->failures.push_back({"the test case failed without a failing assertion", ""});
    }
    current_ = nullptr;
  }
  void test_case_exception(const doctest::TestCaseException& e) override {
    if (current_ == nullptr) return;
    const std::string message = one_line(e.error_string.c_str());
    const std::string context = active_contexts();
    std::string text = e.is_crash ? "crashed: " + message : "threw: " + message;
    if (!context.empty()) text += " [" + context + "]";
    add_failure({text, e.is_crash ? std::string{} : message});
    if (e.is_crash && on_crash()) on_crash()();
  }

  void subcase_start(const doctest::SubcaseSignature& subcase) override {
    subcases_.emplace_back(subcase.m_name.c_str());
  }
  void subcase_end() override {
    if (!subcases_.empty()) subcases_.pop_back();
  }

  void log_assert(const doctest::AssertData& a) override {
    if (!a.m_failed || (a.m_at & doctest::assertType::is_warn)) return;
    add_failure(describe(a));
  }
  void log_message(const doctest::MessageData& m) override {
    if (m.m_severity & doctest::assertType::is_warn) return;  // MESSAGE/WARN never fail
    add_failure({"FAIL: " + one_line(m.m_string.c_str()), ""});
  }

  void test_case_skipped(const doctest::TestCaseData& test) override { add(test, false); }

 private:
  static CaseRecord& add(const doctest::TestCaseData& test, bool ran) {
    records().push_back({test.m_test_suite, test.m_name, ran, {}});
    return records().back();
  }
  void add_failure(Failure failure) {
    if (current_ == nullptr) return;
    if (!subcases_.empty()) {
      std::string path;
      for (const auto& name : subcases_) path += (path.empty() ? "" : " / ") + name;
      failure.text = "subcase '" + path + "': " + failure.text;
    }
    current_->failures.push_back(std::move(failure));
  }

  CaseRecord* current_ = nullptr;
  std::vector<std::string> subcases_;
};

REGISTER_LISTENER("attn-exercise-recorder", 1, Recorder);

// ---------------------------------------------------------------------------------------------
// 2. Exercises: ids, stubs, markers, hints.

struct ExerciseId {
  std::string id;       // "ex03.2"
  std::string chapter;  // "03"
  int number = 0;       // 2
};

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "ex03.2" -> {ex03.2, 03, 2}; anything else -> nullopt.
std::optional<ExerciseId> parse_id(std::string_view id) {
  if (id.size() < 6 || id.substr(0, 2) != "ex" || id[4] != '.') return std::nullopt;
  const std::string_view chapter = id.substr(2, 2);
  const std::string_view number = id.substr(5);
  if (!all_digits(chapter) || !all_digits(number) || number.size() > 4) return std::nullopt;
  return ExerciseId{std::string(id), std::string(chapter), std::stoi(std::string(number))};
}

// The suite "ex03.2 Stable softmax" -> id "ex03.2", title "Stable softmax".
std::pair<std::string, std::string> split_suite(const std::string& suite) {
  const auto space = suite.find(' ');
  if (space == std::string::npos) return {suite, ""};
  const auto title_start = suite.find_first_not_of(' ', space);
  return {suite.substr(0, space),
          title_start == std::string::npos ? std::string{} : suite.substr(title_start)};
}

std::string repo_relative(const fs::path& path) {
  const fs::path rel = path.lexically_relative(source_dir());
  if (rel.empty() || *rel.begin() == "..") return path.string();
  return rel.string();
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every stub on disk, chapters/*/exercises/exNN_M_*.cpp, keyed by exercise id ("ex03.2"),
// sorted by path.
std::map<std::string, std::vector<fs::path>> stubs_on_disk() {
  std::map<std::string, std::vector<fs::path>> stubs;
  std::error_code ec;
  const fs::path chapters = source_dir() / "chapters";
  if (!fs::is_directory(chapters, ec)) return stubs;
  for (const auto& chapter : fs::directory_iterator(chapters, ec)) {
    const fs::path exercises = chapter.path() / "exercises";
    if (!fs::is_directory(exercises, ec)) continue;
    for (const auto& file : fs::directory_iterator(exercises, ec)) {
      const std::string name = file.path().filename().string();
      if (file.path().extension() != ".cpp" || name.size() < 7 || name.substr(0, 2) != "ex") {
        continue;
      }
      // "ex03_2_stable_softmax.cpp" -> "ex03.2"
      const auto second = name.find('_', 5);
      if (name[4] != '_' || second == std::string::npos) continue;
      const auto id = parse_id(name.substr(0, 4) + "." + name.substr(5, second - 5));
      if (id) stubs[id->id].push_back(file.path());
    }
  }
  for (auto& [id, paths] : stubs) std::sort(paths.begin(), paths.end());
  return stubs;
}

bool has_marker(const std::string& text, const std::string& id) {
  return text.find("TODO(" + id + ")") != std::string::npos;
}

// True when `exception` is this exercise's stub error "TODO exNN.M: ..." (not exNN.M0).
bool is_todo_exception(const std::string& exception, const std::string& id) {
  const std::string needle = "TODO " + id;
  for (auto at = exception.find(needle); at != std::string::npos;
       at = exception.find(needle, at + 1)) {
    const auto next = at + needle.size();
    if (next == exception.size() || !(exception[next] >= '0' && exception[next] <= '9')) {
      return true;
    }
  }
  return false;
}

struct Exercise {
  ExerciseId id;
  std::string title;
  std::vector<fs::path> stubs;  // exactly one when the chapter is laid out right
  bool marker = false;          // the (single) stub carries TODO(exNN.M)
  std::vector<const CaseRecord*> cases;  // the cases that ran
  bool selected = false;        // at least one case ran

  std::string chapter_dir() const {  // "03_masked_softmax"
    return stubs.empty() ? id.chapter : stubs.front().parent_path().parent_path().filename().string();
  }
  int failed() const {
    return static_cast<int>(std::count_if(cases.begin(), cases.end(),
                                          [](const CaseRecord* c) { return !c->passed(); }));
  }
  int passed() const { return static_cast<int>(cases.size()) - failed(); }
};

struct Catalogue {
  std::vector<Exercise> exercises;         // course order: chapter, then exercise number
  std::vector<std::string> stray_cases;    // cases outside an "exNN.M Title" suite
  std::set<std::string> chapters;          // chapters that have linked tests ("01", ...)
  std::map<std::string, std::vector<fs::path>> stubs;  // every stub on disk
};

Catalogue catalogue() {
  Catalogue cat;
  cat.stubs = stubs_on_disk();
  std::map<std::pair<std::string, int>, Exercise> by_order;
  for (const CaseRecord& record : records()) {
    const auto [id_text, title] = split_suite(record.suite);
    const auto id = parse_id(id_text);
    if (!id) {
      if (record.ran) {
        cat.stray_cases.push_back(fmt::format("case '{}' (suite '{}')", record.name, record.suite));
      }
      continue;
    }
    cat.chapters.insert(id->chapter);
    Exercise& ex = by_order[{id->chapter, id->number}];
    if (ex.id.id.empty()) {
      ex.id = *id;
      ex.title = title;
      if (const auto found = cat.stubs.find(id->id); found != cat.stubs.end()) {
        ex.stubs = found->second;
      }
      if (ex.stubs.size() == 1) {
        ex.marker = has_marker(read_file(ex.stubs.front()).value_or(""), id->id);
      }
    }
    if (ex.title.empty()) ex.title = title;
    if (record.ran) {
      ex.cases.push_back(&record);
      ex.selected = true;
    }
  }
  for (auto& [order, ex] : by_order) cat.exercises.push_back(std::move(ex));
  return cat;
}

// The text of the first "Hint 1" under "### exNN.M" in docs/NN-*.md, trimmed; empty if none.
std::string first_hint(const std::string& chapter, const std::string& id) {
  std::error_code ec;
  std::vector<fs::path> pages;
  for (const auto& file : fs::directory_iterator(source_dir() / "docs", ec)) {
    const std::string name = file.path().filename().string();
    if (name.size() > 3 && name.substr(0, 3) == chapter + "-" && file.path().extension() == ".md") {
      pages.push_back(file.path());
    }
  }
  std::sort(pages.begin(), pages.end());
  if (pages.empty()) return {};
  std::istringstream page(read_file(pages.front()).value_or(""));
  enum { seeking_heading, seeking_hint, in_hint } state = seeking_heading;
  const std::string summary = "<summary>Hint 1</summary>";
  std::vector<std::string> lines;
  for (std::string line; std::getline(page, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (state == seeking_heading) {
      const std::string heading = "### " + id;
      if (line.rfind(heading, 0) == 0 && (line.size() == heading.size() || line[heading.size()] == ' ')) {
        state = seeking_hint;
      }
    } else if (state == seeking_hint) {
      if (line.rfind("## ", 0) == 0 || line.rfind("### ", 0) == 0) break;  // next section
      if (const auto at = line.find(summary); at != std::string::npos) {
        state = in_hint;
        line = line.substr(at + summary.size());
      }
    }
    if (state == in_hint) {
      const auto end = line.find("</details>");
      lines.push_back(line.substr(0, end));
      if (end != std::string::npos) break;
    }
  }
  // Trim blank lines at both ends and trailing spaces.
  for (auto& line : lines) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  auto first = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return !l.empty(); });
  std::string text;
  for (auto it = first; it != lines.end(); ++it) text += (text.empty() ? "" : "\n") + *it;
  return text;
}

// How to run this program again, relative to the repository when it lives inside it.
std::string this_program() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("attn-check") : repo_relative(exe);
}

// Display width of UTF-8 text (code points; every character of the course is one column).
std::size_t width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string truncate(const std::string& text, std::size_t max_width) {
  if (width(text) <= max_width) return text;
  std::string out;
  std::size_t columns = 0;
  for (const char c : text) {
    const bool starts_character = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_character && ++columns > max_width - 3) break;
    out += c;
  }
  return out + "...";
}

std::string pad(const std::string& text, std::size_t columns) {
  const std::size_t w = width(text);
  return w >= columns ? text : text + std::string(columns - w, ' ');
}

// ---------------------------------------------------------------------------------------------
// 3. --stub-check: proof that every exercise's tests test something, and that finished
//    exercises pass.

std::vector<std::string> stub_problems(const Exercise& ex) {
  std::vector<std::string> problems;
  const std::string& id = ex.id.id;
  if (ex.stubs.empty()) {
    problems.push_back(fmt::format("{}: no stub file chapters/{}_*/exercises/ex{}_{}_*.cpp", id,
                                   ex.id.chapter, ex.id.chapter, ex.id.number));
    return problems;
  }
  if (ex.stubs.size() > 1) {
    std::string list;
    for (const auto& stub : ex.stubs) list += (list.empty() ? "" : ", ") + repo_relative(stub);
    problems.push_back(fmt::format("{}: several stub files: {}", id, list));
    return problems;
  }
  for (const CaseRecord* c : ex.cases) {
    if (ex.marker && c->passed()) {
      problems.push_back(fmt::format(
          "{}: case '{}' passes against the unfinished stub — either the test checks nothing, or "
          "the exercise is done: delete the TODO({}) line",
          id, c->name, id));
    } else if (!ex.marker && !c->passed()) {
      problems.push_back(fmt::format("{}: case '{}' fails, and the stub has no TODO({}) marker: {}",
                                     id, c->name, id, c->failures.front().text));
    }
  }
  return problems;
}

int report_stubs(bool crashed) {
  const Catalogue cat = catalogue();
  int exercises = 0;
  int problems_found = 0;
  for (const Exercise& ex : cat.exercises) {
    if (!ex.selected) continue;
    ++exercises;
    const auto problems = stub_problems(ex);
    fmt::print("{:<8} marker {:<3}  {} failed, {} passed  {}\n", ex.id.id, ex.marker ? "yes" : "no",
               ex.failed(), ex.passed(), problems.empty() ? "OK" : "PROBLEM");
    for (const auto& problem : problems) fmt::print("  {}\n", problem);
    if (!problems.empty()) ++problems_found;
  }
  if (crashed) {
    const CaseRecord& last = records().back();
    fmt::print("stub check: case '{}' of '{}' crashed ({}); the cases after it did not run\n",
               last.name, last.suite, last.failures.empty() ? "" : last.failures.back().text);
    std::fflush(stdout);
    return 1;
  }
  // Stubs of these chapters that no test suite covers, and cases outside any exercise suite.
  for (const auto& [id, paths] : cat.stubs) {
    const auto parsed = parse_id(id);
    if (!parsed || cat.chapters.count(parsed->chapter) == 0) continue;
    const std::string& stub_id = id;  // (older clangs cannot capture a structured binding)
    const bool covered = std::any_of(cat.exercises.begin(), cat.exercises.end(),
                                     [&stub_id](const Exercise& ex) { return ex.id.id == stub_id; });
    if (!covered) {
      fmt::print("{:<8} PROBLEM\n  {}: stub {} has no tests (no TEST_SUITE(\"{} <title>\"))\n", id,
                 id, repo_relative(paths.front()), id);
      ++problems_found;
    }
  }
  for (const auto& stray : cat.stray_cases) {
    fmt::print("PROBLEM: {} is not in an exercise suite TEST_SUITE(\"exNN.M <title>\")\n", stray);
    ++problems_found;
  }
  if (exercises == 0) {
    fmt::print("stub check: no exercise test ran\n");
    return 1;
  }
  if (problems_found == 0) {
    fmt::print("stub check: {} exercises OK\n", exercises);
    return 0;
  }
  fmt::print("stub check: {} problem(s) in {} exercises\n", problems_found, exercises);
  return 1;
}

int stub_check(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  context.setOption("quiet", true);  // the summary below is the whole report
  // On a crash, report what ran; doctest then re-raises the signal, so ctest sees the crash.
  on_crash() = [] { report_stubs(/*crashed=*/true); };
  const int doctest_result = context.run();
  on_crash() = nullptr;
  if (context.shouldExit()) return doctest_result;
  return report_stubs(/*crashed=*/false);
}

// ---------------------------------------------------------------------------------------------
// 4. Progress (attn-check): the learner's table and the next step.

constexpr const char* kUsage = "usage: attn-check [NN | exNN.M] [--help]";

void print_help() {
  fmt::print(
      "{}\n"
      "Checks your exercise solutions and shows your progress through the course.\n"
      "\n"
      "  attn-check          every chapter\n"
      "  attn-check 03       chapter 03 only\n"
      "  attn-check ex03.2   one exercise\n"
      "\n"
      "An exercise is done when its tests pass and you have deleted its TODO(exNN.M) line.\n"
      "Exit code: 0 when every selected exercise is done, 1 otherwise, 2 for a usage error.\n"
      "Maintainers: --stub-check (stubs fail, finished exercises pass), --verify-shipped\n"
      "(committed stubs carry their markers); any other doctest flag needs a chNN_mine binary.\n",
      kUsage);
}

std::string status_of(const Exercise& ex, std::string& first_failure) {
  first_failure.clear();
  const std::string& id = ex.id.id;
  std::string todo_failure;
  for (const CaseRecord* c : ex.cases) {
    for (const Failure& f : c->failures) {
      if (is_todo_exception(f.exception, id)) {
        if (todo_failure.empty()) todo_failure = f.text;
      } else if (first_failure.empty()) {
        first_failure = f.text;
      }
    }
  }
  const bool all_pass = ex.failed() == 0;
  if (ex.marker) {
    if (all_pass) return "passes: delete TODO";
    if (first_failure.empty()) return "not started";
    return "failing";
  }
  if (all_pass) return "done";
  if (first_failure.empty()) first_failure = todo_failure;
  return "failing";
}

struct Row {
  const Exercise* ex;
  std::string status;
  std::string failure;
};

void print_table(const std::vector<Row>& rows) {
  const std::vector<std::string> header = {"chapter", "exercise", "title", "status", "first failure"};
  std::vector<std::vector<std::string>> cells;
  for (const Row& row : rows) {
    cells.push_back({row.ex->chapter_dir(), row.ex->id.id, row.ex->title, row.status,
                     truncate(row.failure, 60)});
  }
  std::vector<std::size_t> widths;
  for (const auto& h : header) widths.push_back(width(h));
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) widths[i] = std::max(widths[i], width(line[i]));
  }
  const auto print_line = [&widths](const std::vector<std::string>& line) {
    std::string text;
    for (std::size_t i = 0; i < line.size(); ++i) {
      text += (i + 1 == line.size()) ? line[i] : pad(line[i], widths[i]) + "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    fmt::print("{}\n", text);
  };
  print_line(header);
  for (const auto& line : cells) print_line(line);
}

void print_next(const Row& row) {
  const Exercise& ex = *row.ex;
  const std::string stub = ex.stubs.empty() ? std::string("(no stub file)") : repo_relative(ex.stubs.front());
  fmt::print("\nNext: {} {}\n", ex.id.id, ex.title);
  fmt::print("  edit:   {}\n", stub);
  fmt::print("  check:  {} {}\n", this_program(), ex.id.id);
  if (row.status == "passes: delete TODO") {
    fmt::print("\nIts tests pass: delete the TODO({}) line in {} to mark it done.\n", ex.id.id, stub);
    return;
  }
  if (row.status == "failing") {
    for (const CaseRecord* c : ex.cases) {
      if (c->passed()) continue;
      fmt::print("  failing case '{}':\n    {}\n", c->name, c->failures.front().text);
      break;
    }
  }
  const std::string hint = first_hint(ex.id.chapter, ex.id.id);
  if (!hint.empty()) {
    fmt::print("\nHint 1:\n");
    std::istringstream lines(hint);
    for (std::string line; std::getline(lines, line);) {
      fmt::print("{}\n", line.empty() ? line : "  " + line);
    }
  }
}

int report_progress(const Catalogue& cat, bool crashed) {
  std::vector<Row> rows;
  for (const Exercise& ex : cat.exercises) {
    if (!ex.selected) continue;
    Row row{&ex, "", ""};
    row.status = status_of(ex, row.failure);
    rows.push_back(std::move(row));
  }
  print_table(rows);
  const auto next = std::find_if(rows.begin(), rows.end(), [](const Row& r) { return r.status != "done"; });
  if (crashed) {
    fmt::print("\nA test crashed (shown as 'crashed: ...'); the exercises after it did not run.\n"
               "Look for an index out of range; the sanitize preset pinpoints it:\n"
               "  cmake --workflow --preset sanitize\n");
  }
  if (next == rows.end()) {
    if (rows.empty()) return 1;
    if (rows.size() == 1) {
      fmt::print("\n{} is done. Well done!\n", rows.front().ex->id.id);
    } else {
      fmt::print("\nAll {} exercises done. Well done!\n", rows.size());
    }
    return 0;
  }
  const auto left = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.status != "done"; });
  fmt::print("\n{} of {} {} to go.\n", left, rows.size(), rows.size() == 1 ? "exercise" : "exercises");
  print_next(*next);
  return 1;
}

int progress(int argc, char** argv) {
  std::optional<std::string> selection;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_help();
      return 0;
    }
    if (arg.empty() || arg[0] == '-' || selection) {
      fmt::print(stderr, "attn-check: error: unexpected argument '{}' ({})\n", arg, kUsage);
      return 2;
    }
    if (all_digits(arg) && arg.size() <= 2) {
      selection = arg.size() == 1 ? "0" + arg : arg;
    } else if (parse_id(arg)) {
      selection = arg;
    } else {
      fmt::print(stderr,
                 "attn-check: error: '{}' is neither a chapter (03) nor an exercise (ex03.2) ({})\n",
                 arg, kUsage);
      return 2;
    }
  }

  doctest::Context context;
  context.setOption("quiet", true);  // only the table below is printed
  context.setOption("no-breaks", true);
  if (selection) {
    const std::string filter =
        selection->size() == 2 ? "ex" + *selection + ".*" : *selection + "," + *selection + " *";
    context.addFilter("test-suite", filter.c_str());
  }
  on_crash() = [] {
    std::fflush(stdout);
    report_progress(catalogue(), /*crashed=*/true);
    std::fflush(stdout);
    std::_Exit(1);
  };
  context.run();
  on_crash() = nullptr;

  const Catalogue cat = catalogue();
  if (selection) {
    const bool found = std::any_of(cat.exercises.begin(), cat.exercises.end(),
                                   [](const Exercise& ex) { return ex.selected; });
    if (!found) {
      std::string chapters;
      for (const auto& chapter : cat.chapters) chapters += (chapters.empty() ? "" : " ") + chapter;
      if (selection->size() == 2) {
        fmt::print(stderr, "attn-check: error: no chapter {} (chapters with exercises: {})\n",
                   *selection, chapters);
      } else {
        fmt::print(stderr, "attn-check: error: no exercise {} (chapters with exercises: {})\n",
                   *selection, chapters);
      }
      return 2;
    }
  }
  return report_progress(cat, /*crashed=*/false);
}

// ---------------------------------------------------------------------------------------------
// 5. --verify-shipped: every committed stub still carries its TODO marker.

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
  const std::string git = "git -C " + shell_quote(source_dir().string());
  const auto inside = capture(git + " rev-parse --is-inside-work-tree 2>/dev/null");
  if (!inside || inside->rfind("true", 0) != 0) {
    fmt::print("skipped: not a git checkout\n");
    return 77;
  }
  int verified = 0;
  int errors = 0;
  for (const auto& [id, paths] : stubs_on_disk()) {
    for (const auto& path : paths) {
      const std::string rel = repo_relative(path);
      const auto committed = capture(git + " show " + shell_quote("HEAD:./" + rel) + " 2>/dev/null");
      if (!committed) {
        fmt::print("{}: not committed (a shipped stub must be in git: git add {})\n", rel, rel);
        ++errors;
      } else if (!has_marker(*committed, id)) {
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

}  // namespace

int main(int argc, char** argv, DefaultMode mode) {
  // Mode flags are ours; everything else goes to doctest (plain and --stub-check modes).
  std::vector<char*> rest;
  bool check_stubs = false;
  bool check_shipped = false;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i > 0 && arg == "--stub-check") {
      check_stubs = true;
    } else if (i > 0 && arg == "--verify-shipped") {
      check_shipped = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const int rest_count = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  if (check_shipped) return verify_shipped();
  if (check_stubs) return stub_check(rest_count, rest.data());
  if (mode == DefaultMode::progress) return progress(rest_count, rest.data());
  doctest::Context context;
  context.applyCommandLine(rest_count, rest.data());
  return context.run();
}

}  // namespace attn::exercises
