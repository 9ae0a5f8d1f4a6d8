// tests/fuzz/fuzz_case_txt.cpp: libFuzzer target for attn-golden's case.txt parser and op
// runners. The tool is not a library, so this file compiles tools/golden.cpp itself (its main
// renamed). Each input is a case.txt; it is parsed as the case.txt of a real case folder of
// tests/golden/cases whose op is the one the input names (the folder's small, valid .npy files
// then load), so run_case goes past the files into the op runners and the comparison (issue 18:
// a folder that did not exist stopped every input at its first file). Every failure must be a
// std::exception; nothing may crash. At exit it prints how many inputs reached the end of an op.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#define main attn_golden_main
#include "golden.cpp"
#undef main

namespace {

// The value of the "op NAME" line of a case.txt ("" if none, or if the text is not `key value`
// lines: the case's own parse then refuses it, whichever folder it is read in).
std::string op_of(std::string_view text) {
  try {
    for (const attn::KeyValue& kv : attn::parse_key_values(text))
      if (kv.key == "op") return kv.value;
  } catch (const attn::KeyValueError&) {
  }
  return "";
}

// The case folders of the course's golden fixtures, by op (read once).
const std::map<std::string, std::vector<fs::path>>& folders_by_op() {
  static const std::map<std::string, std::vector<fs::path>> folders = [] {
    std::map<std::string, std::vector<fs::path>> m;
    for (const fs::directory_entry& e : fs::directory_iterator(ATTN_GOLDEN_CASES)) {
      Case c(e.path());
      try {
        c.parse();
        m[c.op()].push_back(e.path());
      } catch (const std::exception&) {
      }
    }
    return m;
  }();
  return folders;
}

std::size_t g_inputs = 0, g_parsed = 0, g_ran = 0;
void report() {
  std::fprintf(stderr, "fuzz_case_txt: %zu inputs, %zu parsed, %zu ran their op to the end\n",
               g_inputs, g_parsed, g_ran);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool reporting = std::atexit(report) == 0;
  (void)reporting;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& folders = folders_by_op();
  if (folders.empty()) std::abort();  // the fixtures were not found: the target would be blind
  const auto it = folders.find(op_of(text));
  const std::vector<fs::path>& candidates =
      it != folders.end() ? it->second : folders.begin()->second;
  Case c(candidates[size % candidates.size()]);
  ++g_inputs;
  try {
    c.parse_text(text);
    ++g_parsed;
    Comparison cmp;
    run_case(c, cmp);
    ++g_ran;
  } catch (const std::exception&) {
    // CaseError, a .npy that does not fit, a library argument check: all reported on the line.
  }
  return 0;
}
