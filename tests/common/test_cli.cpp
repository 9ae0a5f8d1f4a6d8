// Tests for attn/term/cli.hpp: the flags, exit codes and one-line errors every chapter shares.
// Each test builds an argv, runs Cli::run with stdout and stderr redirected to temporary files,
// and checks the exit code, what the body saw, and the exact error line.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/term/cli.hpp"
#include "attn/core/limits.hpp"

namespace {

std::string read_all(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) out.append(buffer, n);
  return out;
}

struct Result {
  int code = -1;
  std::string out;  // what went to stdout
  std::string err;  // what went to stderr
};

// Runs cli.run("prog" + args) with file descriptors 1 and 2 pointing at temporary files (or both
// at the same one, to check the order of the two streams).
Result run(attn::Cli& cli, const std::vector<std::string>& args,
           const std::function<void(const attn::CommonOptions&)>& body, bool merged = false) {
  std::vector<std::string> storage = {"prog"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  std::FILE* out = std::tmpfile();
  std::FILE* err = merged ? out : std::tmpfile();
  REQUIRE(out != nullptr);
  REQUIRE(err != nullptr);
  const int saved_out = dup(1);
  const int saved_err = dup(2);
  dup2(fileno(out), 1);
  dup2(fileno(err), 2);

  Result r;
  r.code = cli.run(static_cast<int>(storage.size()), argv.data(), body);

  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  r.out = read_all(out);
  std::fclose(out);
  if (!merged) {
    r.err = read_all(err);
    std::fclose(err);
  }
  return r;
}

// A usage error: exit code 2, exactly one line on stderr, nothing on stdout.
void check_usage_error(const Result& r, const std::string& message) {
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "prog: error: " + message + " (see --help)\n");
}

// A chapter-like command line with one option of each kind.
struct Chapter {
  attn::Cli cli{"prog", "A test chapter."};
  std::size_t steps = 3000;
  std::size_t window = 8;
  float temperature = 1.0f;
  float shift = 0.0f;
  std::string prompt = "T";
  bool verbose = false;
  bool called = false;
  attn::CommonOptions seen;

  Chapter() {
    cli.add_size("steps", steps, "optimizer steps");
    cli.add_size("--window", window, "context length", 0);
    cli.add_float("temperature", temperature, "sampling temperature", 0.0f);
    cli.add_float("shift", shift, "any finite number");
    cli.add_string("prompt", prompt, "text to start from");
    cli.add_flag("verbose", verbose, "say more");
  }

  Result operator()(const std::vector<std::string>& args) {
    return run(cli, args, [this](const attn::CommonOptions& o) {
      called = true;
      seen = o;
    });
  }
};

// Runs a body that throws `e` and returns the result.
template <class E>
Result run_throwing(const E& e) {
  attn::Cli cli("prog", "Throws.");
  return run(cli, {}, [&](const attn::CommonOptions&) { throw e; });
}

}  // namespace

TEST_SUITE("common.cli") {
TEST_CASE("without arguments the body runs with the defaults and the exit code is 0") {
  Chapter ch;
  const Result r = ch({});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(ch.called);
  CHECK(ch.seen.seed == 1337);
  CHECK_FALSE(ch.seen.data.has_value());
  CHECK_FALSE(ch.seen.svg_dir.has_value());
  CHECK_FALSE(ch.seen.mine);
  CHECK_FALSE(ch.seen.timing);
  CHECK(ch.steps == 3000);
  CHECK(ch.temperature == 1.0f);
  CHECK(ch.prompt == "T");
  CHECK_FALSE(ch.verbose);
}

TEST_CASE("the common flags are parsed") {
  Chapter ch;
  const Result r =
      ch({"--seed", "42", "--data", "my text.txt", "--svg", "out/figs", "--mine", "--timing"});
  CHECK(r.code == 0);
  CHECK(ch.seen.seed == 42);
  CHECK(ch.seen.data == std::optional<std::string>("my text.txt"));
  CHECK(ch.seen.svg_dir == std::optional<std::filesystem::path>("out/figs"));
  CHECK(ch.seen.mine);
  CHECK(ch.seen.timing);
}

// Issue 29: each message says what happened and what to do, in the learner's terms.
TEST_CASE("an empty --svg is refused: it would write the figures into the current folder") {
  Chapter ch;
  check_usage_error(ch({"--svg", ""}), "--svg needs a folder to write the figures into, got ''");
  CHECK_FALSE(ch.called);
}

TEST_CASE("a value quoted in an error reaches the terminal escaped, never raw") {
  check_usage_error(Chapter()({"--steps", "\x1b[31m\xff"}),
                    "--steps expects an integer, got '\\x1b[31m\\xff'");
  check_usage_error(Chapter()({"--steps", "a\nb"}), "--steps expects an integer, got 'a\\nb'");
  check_usage_error(Chapter()({"\x1b]0;title\x07"}), "unexpected argument '\\x1b]0;title\\x07'");
  // ... and so does a chapter's own message, whatever it quotes.
  attn::Cli cli("prog", "Throws.");
  const Result r = run(cli, {}, [](const attn::CommonOptions&) {
    throw std::runtime_error("model.txt line 3: activation is '\x1b[31mbogus'");
  });
  CHECK(r.code == 1);
  CHECK(r.err == "prog: error: model.txt line 3: activation is '\\x1b[31mbogus'\n");
}

TEST_CASE("an on/off flag given a value says so, not CLI11's \"could not convert\"") {
  check_usage_error(Chapter()({"--verbose=maybe"}),
                    "--verbose is an on/off flag: give it alone, without '=maybe'");
}

TEST_CASE("the seed takes the whole unsigned 64-bit range, and nothing else") {
  Chapter ch;
  CHECK(ch({"--seed", "18446744073709551615"}).code == 0);
  CHECK(ch.seen.seed == 18446744073709551615ull);
  const std::string expects = "--seed expects an integer from 0 to 18446744073709551615, got ";
  check_usage_error(Chapter()({"--seed", "-1"}), expects + "'-1'");
  check_usage_error(Chapter()({"--seed", "18446744073709551616"}),
                    expects + "'18446744073709551616'");
  check_usage_error(Chapter()({"--seed", "1e3"}), expects + "'1e3'");
}

TEST_CASE("chapter options are parsed, in both --name value and --name=value forms") {
  Chapter ch;
  const Result r = ch({"--steps", "5", "--window=0", "--temperature=0.5", "--shift", "-2.5",
                       "--prompt", "ROMEO:", "--verbose"});
  CHECK(r.code == 0);
  CHECK(ch.called);
  CHECK(ch.steps == 5);
  CHECK(ch.window == 0);  // this option's minimum is 0
  CHECK(ch.temperature == 0.5f);
  CHECK(ch.shift == -2.5f);
  CHECK(ch.prompt == "ROMEO:");
  CHECK(ch.verbose);
  Chapter plus;
  CHECK(plus({"--steps", "+7"}).code == 0);
  CHECK(plus.steps == 7);
}

TEST_CASE("an old spelling is an alias: both forms parse, --help shows only the new name") {
  Chapter ch;
  ch.cli.add_alias("max-steps", "steps");
  const Result r = ch({"--max-steps", "5", "--temperature", "0.5"});
  CHECK(r.code == 0);
  CHECK(ch.steps == 5);
  Chapter eq;
  eq.cli.add_alias("max-steps", "steps");
  CHECK(eq({"--max-steps=6"}).code == 0);
  CHECK(eq.steps == 6);
  Chapter bad;
  bad.cli.add_alias("max-steps", "steps");
  check_usage_error(bad({"--max-steps", "0"}), "--steps must be at least 1, got 0");
  Chapter help;
  help.cli.add_alias("max-steps", "steps");
  const Result h = help({"--help"});
  CHECK(h.code == 0);
  CHECK(h.out.find("--steps") != std::string::npos);
  CHECK(h.out.find("--max-steps") == std::string::npos);
  Chapter prefix;  // a flag that merely starts with the old name is not the alias
  prefix.cli.add_alias("step", "steps");
  CHECK(prefix({"--steps", "4"}).code == 0);
  CHECK(prefix.steps == 4);
}

TEST_CASE("--help prints the chapter's description and every flag to stdout, exit code 0") {
  for (const char* flag : {"--help", "-h"}) {
    Chapter ch;
    const Result r = ch({"--steps", "0", flag});  // --help wins over a bad value
    CHECK(r.code == 0);
    CHECK_FALSE(ch.called);
    CHECK(r.err.empty());
    CHECK(r.out.rfind("A test chapter.\n\nUsage: prog [OPTIONS]\n", 0) == 0);
    for (const char* name :
         {"--steps N=3000", "--window N=8", "--temperature X=1", "--prompt TEXT=T", "--verbose",
          "--seed N=1337", "--data PATH", "--svg DIR", "--mine", "--timing", "--help"}) {
      CHECK_MESSAGE(r.out.find(name) != std::string::npos, name);
    }
    // The chapter's options come first, then the common ones.
    CHECK(r.out.find("--steps") < r.out.find("Common options:"));
    CHECK(r.out.find("Common options:") < r.out.find("--seed"));
    CHECK(r.out.find("\n\n\n") == std::string::npos);
    CHECK(r.out.back() == '\n');
    CHECK(r.out.substr(r.out.size() - 2) != "\n\n");
  }
}

TEST_CASE("sizes are checked as signed integers, so negative values are not wrapped around") {
  check_usage_error(Chapter()({"--steps", "-5"}), "--steps must be at least 1, got -5");
  check_usage_error(Chapter()({"--steps=-5"}), "--steps must be at least 1, got -5");
  check_usage_error(Chapter()({"--steps", "0"}), "--steps must be at least 1, got 0");
  check_usage_error(Chapter()({"--window", "-1"}), "--window must be at least 0, got -1");
  check_usage_error(Chapter()({"--steps", "abc"}), "--steps expects an integer, got 'abc'");
  check_usage_error(Chapter()({"--steps", "1.5"}), "--steps expects an integer, got '1.5'");
  check_usage_error(Chapter()({"--steps", "12abc"}), "--steps expects an integer, got '12abc'");
  check_usage_error(Chapter()({"--steps", "99999999999999999999"}),
                    "--steps must be at most 1000000, got 99999999999999999999");
  check_usage_error(Chapter()({"--window", "-99999999999999999999"}),
                    "--window must be at least 0, got -99999999999999999999");
}

TEST_CASE("every size has an upper bound, shown in --help, with the reason when given") {
  attn::Cli cli("prog", "Bounded.");
  const auto noop = [](const attn::CommonOptions&) {};
  std::size_t layers = 2, heads = 4, plain = 1;
  cli.add_size("layers", layers, "L, blocks", 1, 48);
  cli.add_size("heads", heads, "H, heads", 1, 64, "one heatmap per head");
  cli.add_size("plain", plain, "no bound of its own");
  check_usage_error(run(cli, {"--layers", "49"}, noop), "--layers must be at most 48, got 49");
  check_usage_error(run(cli, {"--layers", "2305843009213693952"}, noop),
                    "--layers must be at most 48, got 2305843009213693952");
  check_usage_error(run(cli, {"--heads", "65"}, noop),
                    "--heads must be at most 64, got 65 (one heatmap per head)");
  check_usage_error(run(cli, {"--plain", "1000001"}, noop),
                    "--plain must be at most 1000000, got 1000001");
  const Result ok = run(cli, {"--layers", "48", "--heads", "64"}, noop);
  CHECK(ok.code == 0);
  CHECK(layers == 48);
  const Result help = run(cli, {"--help"}, noop);
  CHECK(help.out.find("L, blocks (at most 48)") != std::string::npos);
  CHECK(help.out.find("H, heads (at most 64)") != std::string::npos);
  CHECK(help.out.find("no bound of its own (at most 1000000)") != std::string::npos);
}

TEST_CASE("floats can have an upper bound too") {
  attn::Cli cli("prog", "Bounded.");
  const auto noop = [](const attn::CommonOptions&) {};
  float lr = 1.0f;
  cli.add_float("lr", lr, "learning rate", 0.0f, 1000.0f);
  check_usage_error(run(cli, {"--lr", "1001"}, noop), "--lr must be at most 1000, got 1001");
  CHECK(run(cli, {"--help"}, noop).out.find("learning rate (at most 1000)") != std::string::npos);
}

TEST_CASE("running out of memory is one line a learner understands, exit code 1") {
  const Result r = run_throwing(std::bad_alloc());
  CHECK(r.code == 1);
  CHECK(r.err.rfind("prog: error: out of memory (", 0) == 0);
  CHECK(r.err.find("try smaller values") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  const Result reserve = run_throwing(std::length_error("vector::reserve"));
  CHECK(reserve.code == 1);
  CHECK(reserve.err.rfind("prog: error: out of memory (vector::reserve)", 0) == 0);
}

TEST_CASE("a SizeError is exit code 1 with its own message") {
  const Result r = run_throwing(attn::SizeError("B * T: 2 x 3 overflows a 64-bit size"));
  CHECK(r.code == 1);
  CHECK(r.err == "prog: error: B * T: 2 x 3 overflows a 64-bit size\n");
}

TEST_CASE("floats must be finite, and greater than the bound when there is one") {
  check_usage_error(Chapter()({"--temperature", "0"}), "--temperature must be > 0, got 0");
  check_usage_error(Chapter()({"--temperature", "-1"}), "--temperature must be > 0, got -1");
  check_usage_error(Chapter()({"--temperature", "nan"}),
                    "--temperature must be a finite number, got nan");
  check_usage_error(Chapter()({"--temperature", "inf"}),
                    "--temperature must be a finite number, got inf");
  check_usage_error(Chapter()({"--shift", "1e999"}), "--shift must be a finite number, got 1e999");
  check_usage_error(Chapter()({"--temperature", "warm"}),
                    "--temperature expects a number, got 'warm'");
  check_usage_error(Chapter()({"--shift", "1.5x"}), "--shift expects a number, got '1.5x'");
}

TEST_CASE("command-line mistakes are usage errors and the body does not run") {
  Chapter unknown;
  check_usage_error(unknown({"--stepz", "3"}), "unknown option '--stepz'");
  CHECK_FALSE(unknown.called);
  check_usage_error(Chapter()({"-x"}), "unknown option '-x'");
  check_usage_error(Chapter()({"extra"}), "unexpected argument 'extra'");
  check_usage_error(Chapter()({"--steps"}), "--steps needs a value");
  check_usage_error(Chapter()({"--data"}), "--data needs a value");
  check_usage_error(Chapter()({"--steps", "3", "--steps", "4"}),
                    "--steps was given more than once");
}

TEST_CASE("a UsageError from the body is exit code 2") {
  const Result r = run_throwing(attn::UsageError("--block-size 300 is longer than the text"));
  CHECK(r.code == 2);
  CHECK(r.err == "prog: error: --block-size 300 is longer than the text (see --help)\n");
}

TEST_CASE("any other exception from the body is exit code 1, on one line") {
  const Result r = run_throwing(std::runtime_error("cannot read corpus 'x.txt': No such file"));
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "prog: error: cannot read corpus 'x.txt': No such file\n");

  const Result multi = run_throwing(std::invalid_argument("first line\nsecond line\r\n"));
  CHECK(multi.code == 1);
  CHECK(multi.err == "prog: error: first line second line\n");

  const Result logic = run_throwing(std::logic_error("TODO: not an exercise id"));
  CHECK(logic.code == 1);
  CHECK(logic.err == "prog: error: TODO: not an exercise id\n");

  const Result odd = run_throwing(42);
  CHECK(odd.code == 1);
  CHECK(odd.err == "prog: error: unknown exception\n");
}

TEST_CASE("an unfinished exercise gives a friendly one-line message and exit code 1") {
  const Result r = run_throwing(std::logic_error("TODO ex03.2: stable softmax"));
  CHECK(r.code == 1);
  CHECK(r.err.rfind("prog: error: exercise ex03.2 (stable softmax) is not done yet: write it in "
                    "chapters/03_",
                    0) == 0);
  CHECK(r.err.find(", then check it with build/default/bin/attn-check 03\n") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("stdout is flushed before the error line") {
  attn::Cli cli("prog", "Prints, then fails.");
  const Result r = run(
      cli, {},
      [](const attn::CommonOptions&) {
        std::printf("partial output\n");  // buffered: stdout is a file here
        std::cout << "more output\n";
        throw std::runtime_error("boom");
      },
      true);
  CHECK(r.code == 1);
  CHECK(r.out == "partial output\nmore output\nprog: error: boom\n");
}
}

TEST_SUITE("common.cli unfinished_exercise_message") {
TEST_CASE("names the exercise, its file and the checker") {
  // Find a real exercise file of the checkout: tests/common/ -> the source folder.
  namespace fs = std::filesystem;
  const fs::path source = fs::path(__FILE__).parent_path().parent_path().parent_path();
  std::vector<fs::path> stubs;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(source / "chapters", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 7 && name.rfind("ex", 0) == 0 && name[4] == '_' &&
        it->path().extension() == ".cpp") {
      stubs.push_back(it->path());
    }
  }
  if (stubs.empty()) {
    MESSAGE("no exercise files found under " << source.string() << ": skipped");
    return;
  }
  std::sort(stubs.begin(), stubs.end());
  // ex03_2_stable_softmax.cpp -> "TODO ex03.2: a title"
  const std::string name = stubs.front().filename().string();
  const std::string chapter = name.substr(2, 2);
  const std::string number = name.substr(5, name.find('_', 5) - 5);
  const std::string message = attn::unfinished_exercise_message(
      std::logic_error("TODO ex" + chapter + "." + number + ": a title"));
  const std::string relative = fs::relative(stubs.front(), source).generic_string();
  CHECK(message == "exercise ex" + chapter + "." + number +
                       " (a title) is not done yet: " + "write it in " + relative +
                       ", then check it with " + "build/default/bin/attn-check " + chapter);
}

TEST_CASE("a missing exercise file names the chapter's folder instead") {
  CHECK(attn::unfinished_exercise_message(std::logic_error("TODO ex99.1: nothing yet")) ==
        "exercise ex99.1 (nothing yet) is not done yet: write it in chapters/99_*/exercises/, "
        "then check it with build/default/bin/attn-check 99");
  CHECK(attn::unfinished_exercise_message(std::logic_error("TODO ex99.12")) ==
        "exercise ex99.12 is not done yet: write it in chapters/99_*/exercises/, "
        "then check it with build/default/bin/attn-check 99");
}

TEST_CASE("anything else gives an empty message") {
  CHECK(attn::unfinished_exercise_message(std::logic_error("TODO: later")).empty());
  CHECK(attn::unfinished_exercise_message(std::logic_error("TODO exAB.1: x")).empty());
  CHECK(attn::unfinished_exercise_message(std::logic_error("TODO ex03: x")).empty());
  CHECK(attn::unfinished_exercise_message(std::logic_error("error TODO ex03.2: x")).empty());
  CHECK(attn::unfinished_exercise_message(std::runtime_error("TODO ex03.2: x")).empty());
  CHECK(attn::unfinished_exercise_message(std::exception()).empty());
}
}
