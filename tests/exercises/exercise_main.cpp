// tests/exercises/exercise_main.cpp: the doctest main behind chNN_solution, chNN_mine and the
// catalogue builds. A doctest listener records every test case; the modes below read those
// records with the course's conventions (course.hpp):
//   (default)                 plain doctest, every doctest flag works   chNN_solution, chNN_mine
//   --stub-check              a stub with its marker fails every case, a finished one passes
//                             them all                                  ctest exercise.chNN
//   --expect-rejected exNN.M  the exercise's tests reject the linked (wrong) solution: a case
//                             fails or crashes                          ctest catalogue.*
//   --attn-records FILE       doctest runs as usual (filters work); every case and failure is
//                             written to FILE as it happens, for attn-check (tools/attn_check.cpp),
//                             which runs each chapter in its own process
#define DOCTEST_CONFIG_IMPLEMENT
#include "exercise_main.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/threads.hpp"
#include "course.hpp"

namespace attn::exercises {
namespace {

using course::CaseRecord;
using course::Failure;
using course::one_line;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// 1. What happened in each test case, recorded by a doctest listener.

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

// --attn-records: the file every event is written to (and flushed) as it happens, so that
// attn-check knows what ran even when the process dies.
std::FILE*& records_out() {
  static std::FILE* out = nullptr;
  return out;
}

void emit(const std::string& line) {
  if (records_out() == nullptr) return;
  std::fputs(line.c_str(), records_out());
  std::fflush(records_out());
}

// The INFO()/CHECK_MESSAGE()/CAPTURE() texts in scope at a failure, "; "-separated.
// CAPTURE(i) reads "i := 3" in doctest; a learner reads "i = 3".
std::string active_contexts() {
  std::string joined;
  const auto add = [&joined](const std::string& text) {
    if (text.empty()) return;
    std::string line = one_line(text);
    for (auto at = line.find(" := "); at != std::string::npos; at = line.find(" := ", at)) {
      line.replace(at, 4, " = ");
    }
    if (!joined.empty()) joined += ", ";
    joined += line;
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

// One failed assertion in words: what was expected, what happened, and where (the context).
// No macro names: "expected ex05::split_heads(x, 0) to throw std::invalid_argument; it returned
// normally", "expected std::abs(freq[j] - want[j]) < 0.015, got 0.08 < 0.015 (with j = 2)".
Failure describe(const doctest::AssertData& a) {
  using namespace doctest::assertType;
  const std::string expr = one_line(a.m_expr);
  const std::string exception = a.m_threw ? one_line(a.m_exception.c_str()) : std::string{};
  const std::string values = one_line(a.m_decomp.c_str());
  const bool negated = (a.m_at & is_false) != 0;
  std::string what;
  if (a.m_at & (is_throws_as | is_throws_with)) {
    const std::string type = a.m_exception_type != nullptr ? a.m_exception_type : "";
    const std::string wanted = type.empty() ? "to throw" : "to throw " + type;
    what = a.m_threw
               ? fmt::format("expected {} {}; it threw something else: {}", expr, wanted, exception)
               : fmt::format("expected {} {}; it returned normally", expr, wanted);
  } else if (a.m_at & is_throws) {
    what = fmt::format("expected {} to throw; it returned normally", expr);
  } else if (a.m_at & is_nothrow) {
    what = fmt::format("{} threw: {}", expr, exception);
  } else if (a.m_threw) {
    what = fmt::format("{} threw: {}", expr, exception);
  } else if (values == "false" || values == "true" || values.empty() || values == expr) {
    what = fmt::format("expected {} to be {}", expr, negated ? "false" : "true");
  } else {
    what = fmt::format("expected {}{}{}, got {}", negated ? "not (" : "", expr, negated ? ")" : "",
                       values);
  }
  const std::string context = active_contexts();
  if (context.empty()) return {what, exception};
  return {fmt::format("{} (with {})", what, context), exception};
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
      add_failure({"the test case failed without a failing assertion", ""});
    }
    if (current_ != nullptr) current_->finished = true;
    emit("done\n");
    current_ = nullptr;
  }
  void test_case_exception(const doctest::TestCaseException& e) override {
    if (current_ == nullptr) return;
    const std::string message = one_line(e.error_string.c_str());
    const std::string context = active_contexts();
    std::string text = e.is_crash ? "crashed: " + message : "threw: " + message;
    if (!context.empty()) text += " (with " + context + ")";
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
    // FAIL_CHECK(text): CHECK_TENSOR_NEAR reports this way, with the whole story in the text.
    std::string text = one_line(m.m_string.c_str());
    const std::string context = active_contexts();
    if (!context.empty()) text += " (with " + context + ")";
    add_failure({text, ""});
  }

  void test_case_skipped(const doctest::TestCaseData& test) override {
    add(test, false);
    emit("done\n");
  }

 private:
  static CaseRecord& add(const doctest::TestCaseData& test, bool ran) {
    records().push_back(
        {test.m_test_suite,
         test.m_name,
         ran,
         false,
         {},
         course::hint_of_description(test.m_description != nullptr ? test.m_description : "")});
    emit(course::record_case_line(records().back()));
    return records().back();
  }
  void add_failure(Failure failure) {
    if (current_ == nullptr) return;
    if (!subcases_.empty()) {
      std::string path;
      for (const auto& name : subcases_) path += (path.empty() ? "" : " / ") + name;
      failure.text = "subcase '" + path + "': " + failure.text;
    }
    emit(course::record_failure_line(failure));
    current_->failures.push_back(std::move(failure));
  }

  CaseRecord* current_ = nullptr;
  std::vector<std::string> subcases_;
};

REGISTER_LISTENER("attn-exercise-recorder", 1, Recorder);

// ---------------------------------------------------------------------------------------------
// 2. The exercises these records belong to.

struct Exercise {
  course::ExerciseId id;
  std::string title;
  std::vector<fs::path> stubs;           // exactly one when the chapter is laid out right
  bool marker = false;                   // the (single) stub carries TODO(exNN.M)
  std::vector<const CaseRecord*> cases;  // the cases that ran
  bool selected = false;                 // at least one case ran

  int failed() const {
    return static_cast<int>(std::count_if(cases.begin(), cases.end(),
                                          [](const CaseRecord* c) { return !c->passed(); }));
  }
  int passed() const { return static_cast<int>(cases.size()) - failed(); }
};

struct Catalogue {
  std::vector<Exercise> exercises;       // course order: chapter, then exercise number
  std::vector<std::string> stray_cases;  // cases outside an "exNN.M Title" suite
  std::set<std::string> chapters;        // chapters that have linked tests ("01", ...)
  std::map<std::string, std::vector<fs::path>> stubs;  // every stub on disk
};

Catalogue catalogue() {
  Catalogue cat;
  cat.stubs = course::stubs_on_disk();
  std::map<std::pair<std::string, int>, Exercise> by_order;
  for (const CaseRecord& record : records()) {
    const auto [id_text, title] = course::split_suite(record.suite);
    const auto id = course::parse_id(id_text);
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
        ex.marker = course::has_marker(course::read_file(ex.stubs.front()).value_or(""), id->id);
      }
    }
    if (record.ran) {
      ex.cases.push_back(&record);
      ex.selected = true;
    }
  }
  for (auto& [order, ex] : by_order) cat.exercises.push_back(std::move(ex));
  return cat;
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
    for (const auto& stub : ex.stubs)
      list += (list.empty() ? "" : ", ") + course::repo_relative(stub);
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
    const auto parsed = course::parse_id(id);
    if (!parsed || cat.chapters.count(parsed->chapter) == 0) continue;
    const std::string& stub_id = id;  // (older clangs cannot capture a structured binding)
    const bool covered =
        std::any_of(cat.exercises.begin(), cat.exercises.end(),
                    [&stub_id](const Exercise& ex) { return ex.id.id == stub_id; });
    if (!covered) {
      fmt::print("{:<8} PROBLEM\n  {}: stub {} has no tests (no TEST_SUITE(\"{} <title>\"))\n", id,
                 id, course::repo_relative(paths.front()), id);
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
// 4. --expect-rejected exNN.M: a catalogue build (tests/exercises/wrong/) links one classic wrong
//    solution; the exercise's tests must reject it (a failing case, or a crash). Exit 0 when they
//    do, 1 when every case passes (the tests have a hole) or nothing ran.

int expect_rejected(const std::string& id, int argc, char** argv) {
  if (!course::parse_id(id)) {
    fmt::print(stderr, "--expect-rejected: '{}' is not an exercise id like ex03.2\n", id);
    return 2;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  context.setOption("quiet", true);
  const std::string filter = id + " *";  // the suite "ex03.2 Stable softmax"
  context.addFilter("test-suite", filter.c_str());
  // A crash is a rejection too (split_heads without the n_heads == 0 check dies of SIGFPE).
  on_crash() = [] {
    const CaseRecord& last = records().back();
    fmt::print("rejected: case '{}' {}\n", last.name,
               last.failures.empty() ? std::string("crashed") : last.failures.back().text);
    std::fflush(stdout);
    std::_Exit(0);
  };
  context.run();
  on_crash() = nullptr;
  int ran = 0;
  int todo_only = 0;
  int failing = 0;
  const CaseRecord* first_failing = nullptr;
  for (const CaseRecord& c : records()) {
    if (!c.ran || course::split_suite(c.suite).first != id) continue;
    ++ran;
    if (c.passed()) continue;
    ++failing;
    if (first_failing == nullptr) first_failing = &c;
    if (std::all_of(c.failures.begin(), c.failures.end(), [&id](const Failure& f) {
          return course::is_todo_exception(f.exception, id);
        })) {
      ++todo_only;
    }
  }
  if (ran == 0) {
    fmt::print("no test case of {} ran\n", id);
    return 1;
  }
  if (failing == 0) {
    fmt::print("NOT REJECTED: all {} cases of {} pass against this wrong solution\n", ran, id);
    return 1;
  }
  if (todo_only == failing) {
    fmt::print("the wrong solution is unfinished: it still throws TODO {}\n", id);
    return 1;
  }
  fmt::print("rejected by {} of {} cases; first: '{}': {}\n", failing, ran, first_failing->name,
             first_failing->failures.front().text);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// 5. --attn-records FILE: plain doctest, quiet, every event written to FILE.

int write_records(const std::string& path, int argc, char** argv) {
  records_out() = std::fopen(path.c_str(), "w");
  if (records_out() == nullptr) {
    fmt::print(stderr, "--attn-records: cannot write '{}'\n", path);
    return 2;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  context.setOption("quiet", true);
  context.setOption("no-breaks", true);
  const int result = context.run();
  std::fclose(records_out());
  records_out() = nullptr;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  setup_threads();  // as every program does first (attn/core/threads.hpp)
  // Mode flags are ours; everything else goes to doctest.
  std::vector<char*> rest;
  bool check_stubs = false;
  std::optional<std::string> rejected_id;
  std::optional<std::string> records_path;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i > 0 && arg == "--expect-rejected" && i + 1 < argc) {
      rejected_id = argv[++i];
    } else if (i > 0 && arg == "--attn-records" && i + 1 < argc) {
      records_path = argv[++i];
    } else if (i > 0 && arg == "--stub-check") {
      check_stubs = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const int rest_count = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  if (check_stubs) return stub_check(rest_count, rest.data());
  if (rejected_id) return expect_rejected(*rejected_id, rest_count, rest.data());
  if (records_path) return write_records(*records_path, rest_count, rest.data());
  doctest::Context context;
  context.applyCommandLine(rest_count, rest.data());
  return context.run();
}

}  // namespace attn::exercises
