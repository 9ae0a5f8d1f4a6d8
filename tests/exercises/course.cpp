// tests/exercises/course.cpp: the course's conventions (see course.hpp).
#include "course.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <utility>

namespace attn::course {

const fs::path& source_dir() {
  static const fs::path dir{ATTN_SOURCE_DIR};
  return dir;
}

std::string repo_relative(const fs::path& path) {
  const fs::path rel = path.lexically_normal().lexically_relative(source_dir());
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

// ---------------------------------------------------------------------------------------------
// Exercises.

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<ExerciseId> parse_id(std::string_view id) {
  if (id.size() < 6 || id.substr(0, 2) != "ex" || id[4] != '.') return std::nullopt;
  const std::string_view chapter = id.substr(2, 2);
  const std::string_view number = id.substr(5);
  if (!all_digits(chapter) || !all_digits(number) || number.size() > 4) return std::nullopt;
  return ExerciseId{std::string(id), std::string(chapter), std::stoi(std::string(number))};
}

std::optional<ExerciseId> id_of_stub(const fs::path& file) {
  const std::string name = file.filename().string();
  if (file.extension() != ".cpp" || name.size() < 7 || name.substr(0, 2) != "ex" ||
      name[4] != '_') {
    return std::nullopt;
  }
  // "ex03_2_stable_softmax.cpp" -> "ex03.2"
  const auto second = name.find('_', 5);
  if (second == std::string::npos) return std::nullopt;
  return parse_id(name.substr(0, 4) + "." + name.substr(5, second - 5));
}

std::pair<std::string, std::string> split_suite(const std::string& suite) {
  const auto space = suite.find(' ');
  if (space == std::string::npos) return {suite, ""};
  const auto title_start = suite.find_first_not_of(' ', space);
  return {suite.substr(0, space),
          title_start == std::string::npos ? std::string{} : suite.substr(title_start)};
}

std::map<std::string, std::vector<fs::path>> stubs_on_disk() {
  std::map<std::string, std::vector<fs::path>> stubs;
  std::error_code ec;
  const fs::path chapters = source_dir() / "chapters";
  if (!fs::is_directory(chapters, ec)) return stubs;
  for (const auto& chapter : fs::directory_iterator(chapters, ec)) {
    const fs::path exercises = chapter.path() / "exercises";
    if (!fs::is_directory(exercises, ec)) continue;
    for (const auto& file : fs::directory_iterator(exercises, ec)) {
      if (const auto id = id_of_stub(file.path())) stubs[id->id].push_back(file.path());
    }
  }
  for (auto& [id, paths] : stubs) std::sort(paths.begin(), paths.end());
  return stubs;
}

bool has_marker(const std::string& text, const std::string& id) {
  return text.find("TODO(" + id + ")") != std::string::npos;
}

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

// ---------------------------------------------------------------------------------------------
// Records.

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

std::string record_case_line(const CaseRecord& c) {
  return "case\t" + one_line(c.suite) + "\t" + one_line(c.name) + "\t" + (c.ran ? "1" : "0") +
         "\t" + std::to_string(c.hint) + "\n";
}

int hint_of_description(std::string_view description) {
  constexpr std::string_view kPrefix = "hint ";
  if (description.substr(0, kPrefix.size()) != kPrefix) return 0;
  const std::string_view digits = description.substr(kPrefix.size());
  if (digits.empty() || digits.size() > 2 || !all_digits(digits)) return 0;
  return std::stoi(std::string(digits));
}

std::string record_failure_line(const Failure& f) {
  return "fail\t" + one_line(f.text) + "\t" + one_line(f.exception) + "\n";
}

std::vector<CaseRecord> parse_records(const std::string& text) {
  std::vector<CaseRecord> cases;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
      fields.push_back(line.substr(start, tab - start));
    }
    fields.push_back(line.substr(start));
    if (fields[0] == "case" && (fields.size() == 4 || fields.size() == 5)) {
      cases.push_back({fields[1],
                       fields[2],
                       fields[3] == "1",
                       fields[3] != "1",
                       {},
                       fields.size() == 5 ? hint_of_description("hint " + fields[4]) : 0});
    } else if (fields[0] == "fail" && fields.size() == 3 && !cases.empty()) {
      cases.back().failures.push_back({fields[1], fields[2]});
    } else if (fields[0] == "done" && !cases.empty()) {
      cases.back().finished = true;
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Hints.

std::optional<fs::path> chapter_page(const std::string& chapter) {
  std::error_code ec;
  std::vector<fs::path> pages;
  for (const auto& file : fs::directory_iterator(source_dir() / "docs", ec)) {
    const std::string name = file.path().filename().string();
    if (name.size() > 3 && name.substr(0, 3) == chapter + "-" && file.path().extension() == ".md") {
      pages.push_back(file.path());
    }
  }
  if (pages.empty()) return std::nullopt;
  std::sort(pages.begin(), pages.end());
  return pages.front();
}

namespace {

// The lines of the exercise's section "### exNN.M ...", up to the next heading.
std::vector<std::string> section_lines(const std::string& chapter, const std::string& id,
                                       std::string* heading_title) {
  std::vector<std::string> lines;
  const auto page = chapter_page(chapter);
  if (!page) return lines;
  std::istringstream text(read_file(*page).value_or(""));
  const std::string heading = "### " + id;
  bool inside = false;
  bool in_fence = false;
  for (std::string line; std::getline(text, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("```", 0) == 0) in_fence = !in_fence;
    if (!inside) {
      if (line.rfind(heading, 0) == 0 &&
          (line.size() == heading.size() || line[heading.size()] == ' ')) {
        inside = true;
        if (heading_title != nullptr) {
          const auto start = line.find_first_not_of(' ', heading.size());
          *heading_title = start == std::string::npos ? "" : line.substr(start);
        }
      }
      continue;
    }
    if (!in_fence && (line.rfind("## ", 0) == 0 || line.rfind("### ", 0) == 0)) break;
    lines.push_back(line);
  }
  return lines;
}

std::string trim_lines(const std::vector<std::string>& raw) {
  std::vector<std::string> lines = raw;
  for (auto& line : lines) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  auto first =
      std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return !l.empty(); });
  std::string text;
  for (auto it = first; it != lines.end(); ++it) text += (text.empty() ? "" : "\n") + *it;
  return text;
}

}  // namespace

std::string title_from_page(const std::string& chapter, const std::string& id) {
  std::string title;
  section_lines(chapter, id, &title);
  return title;
}

std::vector<std::string> hints(const std::string& chapter, const std::string& id) {
  std::vector<std::string> found;
  std::vector<std::string> current;
  bool in_hint = false;
  for (std::string line : section_lines(chapter, id, nullptr)) {
    if (!in_hint) {
      const auto summary = line.find("<summary>Hint");
      if (summary == std::string::npos) continue;
      const auto close = line.find("</summary>", summary);
      if (close == std::string::npos) continue;
      in_hint = true;
      current.clear();
      line = line.substr(close + 10);
    }
    const auto end = line.find("</details>");
    current.push_back(line.substr(0, end));
    if (end != std::string::npos) {
      found.push_back(trim_lines(current));
      in_hint = false;
    }
  }
  return found;
}

namespace {

// The argument of a LaTeX command at `at` ("{...}" or a single character), advancing `at`.
std::string take_group(std::string_view s, std::size_t& at) {
  while (at < s.size() && s[at] == ' ') ++at;
  if (at >= s.size()) return {};
  if (s[at] != '{') return std::string(1, s[at++]);
  int depth = 0;
  const std::size_t start = at;
  for (; at < s.size(); ++at) {
    if (s[at] == '{') ++depth;
    if (s[at] == '}' && --depth == 0) {
      ++at;
      return std::string(s.substr(start + 1, at - start - 2));
    }
  }
  return std::string(s.substr(start + 1));
}

bool simple(const std::string& text) {  // needs no parentheses after ^ _ or around a fraction part
  return text.size() <= 1 || std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || (static_cast<unsigned char>(c) & 0x80) != 0;
         });
}

std::string wrap(const std::string& text) { return simple(text) ? text : "(" + text + ")"; }

const std::map<std::string, std::string>& symbols() {
  static const std::map<std::string, std::string> table = {
      {"alpha", "α"},      {"beta", "β"},   {"gamma", "γ"},   {"delta", "δ"},  {"epsilon", "ε"},
      {"varepsilon", "ε"}, {"eta", "η"},    {"theta", "θ"},   {"lambda", "λ"}, {"mu", "μ"},
      {"pi", "π"},         {"sigma", "σ"},  {"tau", "τ"},     {"phi", "φ"},    {"Phi", "Φ"},
      {"ell", "ℓ"},        {"Sigma", "Σ"},  {"infty", "∞"},   {"cdot", "·"},   {"times", "×"},
      {"le", "≤"},         {"leq", "≤"},    {"ge", "≥"},      {"geq", "≥"},    {"ne", "≠"},
      {"neq", "≠"},        {"approx", "≈"}, {"in", "∈"},      {"to", "→"},     {"rightarrow", "→"},
      {"ldots", "..."},    {"dots", "..."}, {"cdots", "..."}, {"top", "T"},    {"sum", "sum"},
      {"prod", "prod"},    {"log", "log"},  {"exp", "exp"},   {"max", "max"},  {"min", "min"},
      {"sqrt", ""},        {"mid", "|"},    {"lvert", "|"},   {"rvert", "|"}};
  return table;
}

}  // namespace

std::string render_latex(std::string_view s) {
  std::string out;
  for (std::size_t at = 0; at < s.size();) {
    const char c = s[at];
    if (c == '\\') {
      std::size_t end = at + 1;
      while (end < s.size() &&
             ((s[end] >= 'a' && s[end] <= 'z') || (s[end] >= 'A' && s[end] <= 'Z'))) {
        ++end;
      }
      const std::string name(s.substr(at + 1, end - at - 1));
      if (name.empty()) {  // "\," "\;" "\!" "\{" "\}"
        if (end < s.size() && (s[end] == '{' || s[end] == '}' || s[end] == '|')) out += s[end];
        if (end < s.size() && (s[end] == ',' || s[end] == ';')) out += ' ';
        at = end + 1;
        continue;
      }
      at = end;
      if (name == "frac" || name == "dfrac" || name == "tfrac") {
        const std::string num = render_latex(take_group(s, at));
        const std::string den = render_latex(take_group(s, at));
        out += wrap(num) + "/" + wrap(den);
      } else if (name == "sqrt") {
        out += "sqrt(" + render_latex(take_group(s, at)) + ")";
      } else if (name == "text" || name == "mathrm" || name == "operatorname" || name == "mathbf" ||
                 name == "mathit" || name == "textrm" || name == "mathcal") {
        out += render_latex(take_group(s, at));
      } else if (name == "left" || name == "right" || name == "big" || name == "Big" ||
                 name == "bigl" || name == "bigr") {
        // the delimiter that follows is printed as it is
      } else if (name == "quad" || name == "qquad") {
        out += "  ";
      } else if (const auto found = symbols().find(name); found != symbols().end()) {
        out += found->second;
      } else {
        out += name;
      }
      continue;
    }
    if (c == '^' || c == '_') {
      ++at;
      out += c;
      out += wrap(render_latex(take_group(s, at)));
      continue;
    }
    if (c == '{' || c == '}') {
      ++at;
      continue;
    }
    out += c;
    ++at;
  }
  // "exp(" after a command leaves no double spaces behind.
  std::string tidy;
  for (const char ch : out) {
    if (ch == ' ' && !tidy.empty() && tidy.back() == ' ') continue;
    tidy += ch;
  }
  return tidy;
}

std::string render_for_terminal(const std::string& markdown) {
  std::istringstream lines(markdown);
  std::string out;
  bool in_fence = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) {
      out += "    " + line + "\n";
      continue;
    }
    for (const char* tag : {"<details>", "</details>", "<summary>", "</summary>"}) {
      for (auto at = line.find(tag); at != std::string::npos; at = line.find(tag)) {
        line.erase(at, std::string_view(tag).size());
      }
    }
    std::string rendered;
    for (std::size_t at = 0; at < line.size();) {
      if (line[at] == '`') {  // inline code: as it is, without the backticks
        const auto end = line.find('`', at + 1);
        if (end == std::string::npos) {
          rendered += line.substr(at + 1);
          break;
        }
        rendered += line.substr(at + 1, end - at - 1);
        at = end + 1;
      } else if (line[at] == '$') {
        const bool display = line.compare(at, 2, "$$") == 0;
        const std::size_t open = display ? 2 : 1;
        const auto end = line.find(display ? "$$" : "$", at + open);
        if (end == std::string::npos) {
          rendered += line.substr(at);
          break;
        }
        rendered += render_latex(std::string_view(line).substr(at + open, end - at - open));
        at = end + open;
      } else if (line.compare(at, 2, "**") == 0) {
        at += 2;  // bold markers
      } else {
        rendered += line[at++];
      }
    }
    out += rendered + "\n";
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Text in columns.

std::size_t width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
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

}  // namespace attn::course
