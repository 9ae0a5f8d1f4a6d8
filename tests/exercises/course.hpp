// tests/exercises/course.hpp: the course's conventions, shared by the exercise-test binaries
// (chNN_solution, chNN_mine, catalogue_*) and attn-check: exercise ids "exNN.M", stubs
// chapters/NN_name/exercises/exNN_M_*.cpp with their TODO(exNN.M) marker, the hint ladders under
// "### exNN.M" in docs/NN-*.md, and the record of what each test case did.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace attn::course {

namespace fs = std::filesystem;

// The repository (compiled in as ATTN_SOURCE_DIR).
const fs::path& source_dir();
// `path` relative to the repository when it lies inside it, else as it is.
std::string repo_relative(const fs::path& path);
std::optional<std::string> read_file(const fs::path& path);

// ---- Exercises.

struct ExerciseId {
  std::string id;       // "ex03.2"
  std::string chapter;  // "03"
  int number = 0;       // 2
};

bool all_digits(std::string_view s);
// "ex03.2" -> {ex03.2, 03, 2}; anything else -> nullopt.
std::optional<ExerciseId> parse_id(std::string_view id);
// "ex03_2_stable_softmax.cpp" (or a path ending in it) -> "ex03.2"; anything else -> nullopt.
std::optional<ExerciseId> id_of_stub(const fs::path& file);
// The suite "ex03.2 Stable softmax" -> {"ex03.2", "Stable softmax"}.
std::pair<std::string, std::string> split_suite(const std::string& suite);

// Every stub on disk, chapters/*/exercises/exNN_M_*.cpp, keyed by exercise id, sorted by path.
std::map<std::string, std::vector<fs::path>> stubs_on_disk();
bool has_marker(const std::string& text, const std::string& id);
// True when `exception` is this exercise's stub error "TODO exNN.M: ..." (not exNN.M0).
bool is_todo_exception(const std::string& exception, const std::string& id);

// ---- What a test case did (recorded by the doctest listener of exercise_main.cpp, and sent to
// attn-check through a records file).

struct Failure {
  std::string text;       // what failed, one line, in words a learner can read
  std::string exception;  // the exception's message when an exception caused it, else empty
};

struct CaseRecord {
  std::string suite;
  std::string name;
  bool ran = false;       // false: filtered out (still tells us which exercises exist)
  bool finished = false;  // the case ran to its end (false after a crash)
  std::vector<Failure> failures;
  // The hint of the page's ladder that fits a failure of this case: a test case declares it as
  // `TEST_CASE("..." * doctest::description("hint 2"))`; 0 when it does not.
  int hint = 0;

  bool passed() const { return ran && failures.empty(); }
};

std::string one_line(std::string_view text);

// The records file: one line per event, fields separated by tabs (texts are one line, with tabs
// replaced by spaces):  case <suite> <name> <0|1> <hint>  /  fail <text> <exception>  /  done
std::string record_case_line(const CaseRecord& c);
std::string record_failure_line(const Failure& f);
std::vector<CaseRecord> parse_records(const std::string& text);
// "hint 2" (a test case's doctest description) -> 2; anything else -> 0.
int hint_of_description(std::string_view description);

// ---- Hints: the ladder under "### exNN.M" in docs/NN-*.md.

// The page of chapter NN (docs/NN-*.md), if any.
std::optional<fs::path> chapter_page(const std::string& chapter);
// The title of "### exNN.M Title" on the chapter's page, or empty.
std::string title_from_page(const std::string& chapter, const std::string& id);
// Every hint of the exercise, in order ("Hint 1", "Hint 2", ...), as the page's Markdown.
std::vector<std::string> hints(const std::string& chapter, const std::string& id);
// Markdown with LaTeX made readable in a terminal: $\frac{a}{b}$ -> (a)/(b), \sqrt{x} ->
// sqrt(x), Greek letters as themselves, `code` without backticks, fences dropped (the code
// indented), <details>/<summary> tags removed.
std::string render_for_terminal(const std::string& markdown);
// Just the LaTeX part of the above, for one math span (without the $ signs).
std::string render_latex(std::string_view latex);

// ---- Text in columns.

std::size_t width(std::string_view text);  // display columns of UTF-8 text
std::string truncate(const std::string& text, std::size_t max_width);
std::string pad(const std::string& text, std::size_t columns);

}  // namespace attn::course
