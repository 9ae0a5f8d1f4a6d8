// Tests for attn/train/checkpoint.hpp as a contract (issue 18): a load reads one checkpoint and
// proves it complete with its manifests (a torn, mixed or swapped set is refused by name, also
// for two same-shape tensors swapped on disk); every value of train.txt is held to its flag's
// bounds; a model folder's tensors are regular files; one trainer owns a run folder.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/term/cli.hpp"
#include "attn/term/narrate.hpp"
#include "attn/io/npy.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/term/model_flags.hpp"
#include "attn/train/checkpoint.hpp"
#include "test_fixtures.hpp"

namespace {

namespace fs = std::filesystem;

attn::TrainConfig small_config() { return attn::testing::small_train_config(1); }  // one block

attn::Vocab vocab7() { return attn::Vocab(U"\nabcdef"); }

fs::path temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() /
                     ("attn_test_checkpoint_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// A run folder with one checkpoint at `steps` steps.
fs::path saved_run(const std::string& name, std::size_t steps = 1) {
  const attn::TrainConfig c = small_config();
  std::vector<int> data(300);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>((i * 3) % 7);
  attn::TrainState s = attn::train_init(c);
  for (std::size_t i = 0; i < steps; ++i) attn::train_step(s, c, data);
  const fs::path dir = temp_dir(name);
  attn::save_checkpoint(dir, s, c, vocab7());
  return dir;
}

std::string load_error(const fs::path& dir) {
  try {
    attn::load_checkpoint(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string load_lm_error(const fs::path& dir) {
  try {
    attn::ModelChoices asked;
    asked.n_layers = 1;
    asked.n_heads = 2;
    attn::ModelSpec config;
    attn::load_lm(dir, asked, config);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Replaces `key`'s value in a checkpoint's train.txt and writes the manifest anew, as a tool
// that edits checkpoints would: the value itself must then be refused.
void set_key(const fs::path& ckpt, const std::string& key, const std::string& value) {
  std::ifstream in(ckpt / "train.txt");
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    out << (line.rfind(key + " ", 0) == 0 ? key + " " + value : line) << "\n";
  }
  in.close();
  std::ofstream(ckpt / "train.txt", std::ios::trunc) << out.str();
  attn::write_manifest(ckpt);
}

}  // namespace

TEST_SUITE("checkpoint") {

TEST_CASE("every folder of a checkpoint carries a manifest, and a clean one loads") {
  const fs::path dir = saved_run("clean");
  for (const char* sub : {"", "model", "adam_m", "adam_v"}) {
    CHECK(fs::is_regular_file(dir / "current" / sub / attn::kManifestName));
  }
  CHECK(attn::verify_manifest(dir / "current" / "model"));
  CHECK(attn::load_checkpoint(dir).state.step == 1);
  CHECK(load_lm_error(dir / "model") == "(no error)");
  fs::remove_all(dir);
}

TEST_CASE("two same-shape tensors swapped on disk are refused by name") {
  const fs::path dir = saved_run("swapped");
  const fs::path model = dir / "current" / "model";
  fs::rename(model / "h0.w_q.npy", model / "swap.tmp");
  fs::rename(model / "h0.w_k.npy", model / "h0.w_q.npy");
  fs::rename(model / "swap.tmp", model / "h0.w_k.npy");
  const std::string e = load_error(dir);
  CHECK(contains(e, "h0.w_k.npy does not match MANIFEST.txt"));
  CHECK(contains(load_lm_error(dir / "model"), "does not match MANIFEST.txt"));
  fs::remove_all(dir);
}

TEST_CASE("a file from another checkpoint (a torn or mixed set) is refused by name") {
  const fs::path a = saved_run("mixed_a", 1);
  const fs::path b = saved_run("mixed_b", 2);
  fs::copy_file(b / "current" / "model" / "wte.npy", a / "current" / "model" / "wte.npy",
                fs::copy_options::overwrite_existing);
  CHECK(contains(load_error(a), "wte.npy does not match MANIFEST.txt"));
  fs::copy_file(b / "current" / "losses.npy", a / "current" / "losses.npy",
                fs::copy_options::overwrite_existing);
  CHECK(contains(load_error(a), "losses.npy does not match MANIFEST.txt"));
  fs::remove(a / "current" / "MANIFEST.txt");
  CHECK(contains(load_error(a), "MANIFEST.txt': missing"));
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("a model folder without a manifest (save_lm alone) still loads") {
  const fs::path dir = saved_run("plain");
  const fs::path plain = temp_dir("plain_model");
  attn::ModelSpec config = small_config().model;
  attn::LmWeights w = attn::load_lm(dir / "model", config);
  attn::save_lm(plain, w, config);
  CHECK_FALSE(fs::exists(plain / attn::kManifestName));
  CHECK(load_lm_error(plain) == "(no error)");
  fs::remove_all(dir);
  fs::remove_all(plain);
}

TEST_CASE("a model folder's tensors are regular files, not links") {
  const fs::path dir = saved_run("links");
  const fs::path plain = temp_dir("links_model");
  attn::ModelSpec config = small_config().model;
  attn::LmWeights w = attn::load_lm(dir / "model", config);
  attn::save_lm(plain, w, config);
  fs::remove(plain / "h0.w_k.npy");
  fs::create_symlink(plain / "h0.w_q.npy", plain / "h0.w_k.npy");
  CHECK(contains(load_lm_error(plain), "h0.w_k.npy is not a regular file"));
  fs::remove_all(dir);
  fs::remove_all(plain);
}

TEST_CASE("every value of train.txt passes its flag's bounds, refused by name") {
  struct Case {
    const char* key;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"eval_interval", "0", "eval_interval is 0, expected at least 1"},
      {"eval_iters", "16000000", "eval_iters is 16000000, expected at most 10000"},
      {"batch_size", "1000000", "batch_size is 1000000, expected at most 1024"},
      {"beta1", "1", "beta1 is 1, expected [0, 1)"},
      {"lr", "-0.001", "lr is -0.001, expected (0, 1]"},
      {"lr", "1e300", "key 'lr' is '1e300', expected a number within float32"},
      {"lr", "5", "lr is 5, expected (0, 1]"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.key);
    CAPTURE(k.value);
    const fs::path dir = saved_run("bounds");
    set_key(dir / "current", k.key, k.value);
    const std::string e = load_error(dir);
    CHECK(contains(e, "train.txt"));
    CHECK(contains(e, k.message));
    fs::remove_all(dir);
  }
}

TEST_CASE("a vocabulary that is not UTF-8 is refused naming its file") {
  const fs::path dir = saved_run("bad_utf8");
  const fs::path ckpt = fs::canonical(dir / "current");
  std::ofstream(ckpt / "vocab.txt", std::ios::trunc | std::ios::binary) << "\nab\xff";
  attn::write_manifest(ckpt);
  const std::string e = load_error(dir);
  INFO(e);
  CHECK(contains(e, "vocab.txt"));
  CHECK(contains(e, "invalid UTF-8"));
  fs::remove_all(dir);
}

TEST_CASE("negative second moments are refused by name") {
  const fs::path dir = saved_run("adam_v");
  const fs::path moments = dir / "current" / "adam_v";
  attn::Vector b = attn::load_npy<1>(moments / "h0.b1.npy");
  b(0) = -1.0f;
  attn::save_npy(moments / "h0.b1.npy", b);
  attn::write_manifest(moments);
  attn::write_manifest(fs::canonical(dir / "current"));  // which lists adam_v's manifest
  CHECK(contains(load_error(dir), "h0.b1.npy holds -1 at flat index 0"));
  fs::remove_all(dir);
}

TEST_CASE("a folder swapped whole for another checkpoint's, its manifest with it, is refused") {
  // Each folder matches its own manifest; only the checkpoint's, which lists theirs, tells.
  for (const char* folder : {"model", "adam_m", "adam_v"}) {
    CAPTURE(folder);
    const fs::path dir = saved_run(std::string("swapped_") + folder, 1);
    const fs::path other = saved_run(std::string("swapped_other_") + folder, 2);
    const fs::path ckpt = fs::canonical(dir / "current");
    fs::remove_all(ckpt / folder);
    fs::copy(fs::canonical(other / "current") / folder, ckpt / folder);
    const std::string e = load_error(dir);
    INFO(e);
    CHECK(contains(e, std::string(folder) + "/MANIFEST.txt does not match MANIFEST.txt"));
    fs::remove_all(dir);
    fs::remove_all(other);
  }
}

TEST_CASE("a checkpoint whose manifest lists no folder manifests (saved before) still loads") {
  const fs::path dir = saved_run("old_manifest");
  const fs::path ckpt = fs::canonical(dir / "current");
  std::ifstream in(ckpt / attn::kManifestName);
  std::ostringstream out;
  std::size_t dropped = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("/MANIFEST.txt ") != std::string::npos) {
      ++dropped;
    } else {
      out << line << "\n";
    }
  }
  in.close();
  CHECK(dropped == 3);  // model/, adam_m/ and adam_v/
  std::ofstream(ckpt / attn::kManifestName, std::ios::trunc) << out.str();
  CHECK(load_error(dir) == "(no error)");
  fs::remove_all(dir);
}

TEST_CASE("a manifest line may name a sub-folder's manifest, and nothing else with a slash") {
  const fs::path dir = saved_run("manifest_slash");
  const fs::path ckpt = fs::canonical(dir / "current");
  std::ofstream(ckpt / attn::kManifestName, std::ios::app) << "model/wte.npy 10 0123456789abcdef\n";
  CHECK(contains(load_error(dir), "is not `name size fnv1a64`"));
  fs::remove_all(dir);
}

TEST_CASE("train.txt's batch_size is held to the activation bound of the flags") {
  // Each size within its own bound, but the backward would keep (B, H, T, T) attention weights
  // of 8 GiB: refused by key, as --batch-size is by flag, never a bad_alloc in a worker thread.
  attn::TrainConfig c = small_config();
  c.model = attn::with_choices(c.model, [](attn::ModelChoices& m) {
    m.block_size = 1024;
    m.n_embd = 64;
    m.n_heads = 64;
    m.n_layers = 1;
  });
  c.batch_size = 4;
  CHECK_NOTHROW(attn::check_train_config(c));
  c.batch_size = 128;
  std::string error = "(no error)";
  try {
    attn::check_train_config(c);
  } catch (const std::invalid_argument& e) {
    error = e.what();
  }
  CHECK(contains(error,
                 "batch_size 128, block_size 1024, n_embd 64, n_heads 64 and n_layers 1 "
                 "would keep"));
  CHECK(contains(error, "at most 4 GiB are allowed"));
}

TEST_CASE("evals.tsv: each row a step of the run and two cross-entropies, or refused by line") {
  struct Case {
    const char* row;
    const char* message;
  };
  const Case cases[] = {
      {"-5\t1.5\t1.5",
       "line 3 is not `step train_loss val_loss`: the step '-5' is not a "
       "non-negative integer"},
      {"3\t1.5\t-3e38", "val_loss '-3e38' is not a cross-entropy"},
      {"3\tnan\t1.5", "train_loss 'nan' is not a cross-entropy"},
      {"3\t1.5\t1e39", "val_loss '1e39' is not a cross-entropy"},
      {"0\t1.5\t1.5", "the step 0 does not follow the step 0 before it"},
      {"9\t1.5\t1.5", "the step 9 is past the checkpoint's step 4"},
      {"4\t1.5", "expected three fields"},
  };
  const fs::path dir = saved_run("evals", 4);
  const fs::path ckpt = fs::canonical(dir / "current");
  for (const Case& k : cases) {
    CAPTURE(k.row);
    std::ofstream(ckpt / "evals.tsv", std::ios::trunc) << "step\ttrain_loss\tval_loss\n0\t2\t2\n"
                                                       << k.row << "\n";
    attn::write_manifest(ckpt);
    const std::string e = load_error(dir);
    CHECK_MESSAGE(contains(e, "evals.tsv"), e);
    CHECK_MESSAGE(contains(e, k.message), e);
  }
  std::ofstream(ckpt / "evals.tsv", std::ios::trunc)
      << "step\ttrain_loss\tval_loss\n0\t2\t2\n4\t1.5\t1.75\n";
  attn::write_manifest(ckpt);
  CHECK(attn::load_checkpoint(dir).state.evals.size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("a run folder has one owner: a second lock names the holder's pid") {
  const fs::path dir = temp_dir("lock");
  {
    const attn::RunLock first(dir);
    std::string e = "(no error)";
    try {
      const attn::RunLock second(dir);
    } catch (const std::runtime_error& x) {
      e = x.what();
    }
    CHECK(contains(e, "another trainer (pid " + std::to_string(::getpid()) + ")"));
  }
  CHECK_NOTHROW(attn::RunLock{dir});  // released with its owner
  fs::remove_all(dir);
}

TEST_CASE("a save that fails removes its temporary folder and says why") {
  const fs::path dir = saved_run("full");
  const attn::TrainConfig c = small_config();
  attn::TrainState s = attn::train_init(c);
  s.step = 0;
  // A file-size limit of 1 KiB stands in for a full disk: writes fail with EFBIG (the signal
  // that would kill the process is ignored here, so the write returns the error).
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit{};
  ::getrlimit(RLIMIT_FSIZE, &old_limit);
  rlimit small = old_limit;
  small.rlim_cur = 1024;
  ::setrlimit(RLIMIT_FSIZE, &small);
  std::string e = "(no error)";
  try {
    attn::save_checkpoint(dir, s, c, vocab7());
  } catch (const std::runtime_error& x) {
    e = x.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  CHECK(contains(e, "File too large"));
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp-") == std::string::npos,
                  entry.path());
  }
  CHECK(attn::load_checkpoint(dir).state.step == 1);  // the run is as it was
  fs::remove_all(dir);
}

TEST_CASE("--resume's path names its run folder: DIR, DIR/current or DIR/ckpt-N") {
  const fs::path dir = saved_run("folder");
  CHECK(attn::run_folder_of(dir) == dir);
  CHECK(attn::run_folder_of(dir / "current") == dir);
  CHECK(attn::run_folder_of(dir / "ckpt-000001") == dir);
  CHECK(attn::holds_run(dir));
  attn::remove_run(dir);
  CHECK_FALSE(attn::holds_run(dir));
  CHECK_FALSE(fs::exists(dir / "ckpt-000001"));
  fs::remove_all(dir);
}

// ---- A run folder owns what it made and nothing else (issue 29).

TEST_CASE("a save deletes only the names the run lists: a user's ckpt- files stay") {
  const fs::path dir = saved_run("owned");
  std::ofstream(dir / "ckpt-000200.keep") << "mine";
  fs::create_directories(dir / "ckpt-notes");
  std::ofstream(dir / "ckpt-notes" / "todo.txt") << "read the paper";
  // A leftover of an interrupted save of this run: listed, so the next save removes it.
  fs::create_directories(dir / "ckpt-000007.tmp-1");
  std::ofstream(dir / "checkpoints.txt") << "ckpt-000001\nckpt-000007.tmp-1\n";
  const attn::TrainConfig c = small_config();
  attn::TrainState s = attn::load_checkpoint(dir).state;  // at step 1
  std::vector<int> data(300);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>((i * 5) % 7);
  attn::train_step(s, c, data);
  attn::save_checkpoint(dir, s, c, vocab7());
  CHECK(fs::read_symlink(dir / "current") == "ckpt-000002");
  CHECK_FALSE(fs::exists(dir / "ckpt-000001"));
  CHECK_FALSE(fs::exists(dir / "ckpt-000007.tmp-1"));
  CHECK(fs::is_regular_file(dir / "ckpt-000200.keep"));
  CHECK(fs::is_regular_file(dir / "ckpt-notes" / "todo.txt"));
  std::ifstream list(dir / "checkpoints.txt");
  std::string line, names;
  while (std::getline(list, line))
    if (!line.empty() && line[0] != '#') names += line + ";";
  CHECK(names == "ckpt-000002;");
  // --overwrite (remove_run) takes the run's names too, and nothing else.
  attn::remove_run(dir);
  CHECK_FALSE(attn::holds_run(dir));
  CHECK_FALSE(fs::exists(dir / "ckpt-000002"));
  CHECK(fs::is_regular_file(dir / "ckpt-000200.keep"));
  CHECK(fs::is_regular_file(dir / "ckpt-notes" / "todo.txt"));
  fs::remove_all(dir);
}

TEST_CASE("a save never replaces a ckpt- folder the run did not write") {
  const fs::path dir = saved_run("not_owned");
  fs::create_directories(dir / "ckpt-000002");
  std::ofstream(dir / "ckpt-000002" / "keep.txt") << "not yours";
  const attn::TrainConfig c = small_config();
  attn::TrainState s = attn::load_checkpoint(dir).state;
  s.step = 2;
  s.losses.resize(2);
  std::string e = "(no error)";
  try {
    attn::save_checkpoint(dir, s, c, vocab7());
  } catch (const std::runtime_error& x) {
    e = x.what();
  }
  CHECK(contains(e, "ckpt-000002': not a checkpoint of this run"));
  CHECK(fs::is_regular_file(dir / "ckpt-000002" / "keep.txt"));
  CHECK(fs::read_symlink(dir / "current") == "ckpt-000001");
  CHECK(attn::load_checkpoint(dir).state.step == 1);
  fs::remove_all(dir);
}

TEST_CASE("a run is never saved inside a run or into a saved checkpoint") {
  const fs::path dir = saved_run("inside");
  const auto refusal = [](const fs::path& p) {
    try {
      attn::check_save_folder(p, "--save");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  for (const char* inside : {"current", "model", "ckpt-000001", "current/model", "notes"}) {
    INFO("--save DIR/" << inside);
    CHECK(contains(refusal(dir / inside), fmt::format("--save '{}' is inside the run folder '{}'",
                                                      (dir / inside).string(), dir.string())));
  }
  const fs::path loose = temp_dir("inside_loose");
  fs::copy(dir / "ckpt-000001", loose / "ckpt", fs::copy_options::recursive);
  CHECK(contains(refusal(loose / "ckpt"), "is a saved checkpoint or model folder"));
  CHECK(contains(refusal(loose / "ckpt" / "sub"), "a saved checkpoint or model folder"));
  CHECK(refusal(dir) == "(accepted)");  // the run folder itself: --resume saves there
  CHECK(refusal(loose / "new_run") == "(accepted)");
  // --resume's path names the run it is in, whatever the name inside it.
  CHECK(attn::run_folder_of(dir / "model") == dir);
  CHECK(attn::run_folder_of(dir / "current" / "model") == dir);
  fs::remove_all(loose);
  fs::remove_all(dir);
}

// ---- The corpus a checkpoint records (issue 17): resume reads it again, refuses another.

TEST_CASE("fnv1a64 gives the published FNV-1a 64 test vectors") {
  // From the reference implementation's test suite (Fowler, Noll, Vo: fnv/test_fnv.c).
  CHECK(attn::fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(attn::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(attn::fnv1a64("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("a checkpoint records its corpus and reads the record back exactly") {
  const attn::TrainConfig c = small_config();
  const attn::TrainState s = attn::train_init(c);
  // A path with a space, a backslash and a line break: train.txt is one `key value` per line.
  const std::string text = "ab\ncd\n";
  const attn::CorpusRecord record = attn::record_corpus("/tmp/my corpus\\with\nbreak.txt", text);
  CHECK(record.path == "/tmp/my corpus\\with\nbreak.txt");
  CHECK(record.bytes == 6);
  CHECK(record.fnv1a64 == attn::fnv1a64(text));
  CHECK(attn::corpus_fingerprint(record) ==
        fmt::format("6 bytes, fnv1a64 {:016x}", attn::fnv1a64(text)));
  const fs::path dir = temp_dir("corpus_record");
  attn::save_checkpoint(dir, s, c, vocab7(), record);
  const attn::Checkpoint ck = attn::load_checkpoint(dir);
  REQUIRE(ck.corpus.has_value());
  CHECK(ck.corpus->path == record.path);
  CHECK(ck.corpus->bytes == record.bytes);
  CHECK(ck.corpus->fnv1a64 == record.fnv1a64);
  fs::remove_all(dir);
}

TEST_CASE("a relative corpus path is recorded as an absolute one") {
  const attn::CorpusRecord r = attn::record_corpus("data/x.txt", "x");
  CHECK(fs::path(r.path).is_absolute());
  CHECK(r.path == (fs::current_path() / "data" / "x.txt").lexically_normal().string());
}

TEST_CASE("a checkpoint folder without its manifest is refused, by the checkpoint and --weights") {
  // Without model/MANIFEST.txt, two same-shape tensors swapped on disk would load unnoticed.
  for (const char* folder : {"model", "adam_m", "adam_v"}) {
    const fs::path dir = saved_run(std::string("no_manifest_") + folder);
    const fs::path ckpt = fs::canonical(dir / "current");
    fs::remove(ckpt / folder / attn::kManifestName);
    INFO(folder);
    CHECK(contains(load_error(dir), std::string(folder) + "/MANIFEST.txt': missing: every folder "
                                                          "of a checkpoint ends with one"));
    if (std::string(folder) == "model") {
      std::string error = "(no error)";
      try {
        (void)attn::resolve_model_folder(dir);
      } catch (const std::runtime_error& e) {
        error = e.what();
      }
      CHECK(contains(error, "MANIFEST.txt is missing, and every folder of a checkpoint has one"));
    }
    fs::remove_all(dir);
  }
}

TEST_CASE("a format-1 train.txt must describe the model its model.txt describes") {
  // Format 1 (before ModelSpec) listed the sizes and ablations in train.txt too. Written here by
  // hand over a fresh checkpoint, re-signed: with model.txt's numbers it loads as that model; a
  // key that disagrees is refused by name.
  const fs::path dir = saved_run("format1");
  const fs::path ckpt = fs::canonical(dir / "current");
  const attn::ModelSpec m = attn::load_checkpoint(dir).config.model;
  std::ifstream in(ckpt / "train.txt");
  std::ostringstream format2;
  format2 << in.rdbuf();
  in.close();
  const auto write_format1 = [&](std::size_t n_heads) {
    std::istringstream lines(format2.str());
    std::ostringstream out;
    std::string line;
    while (std::getline(lines, line)) out << (line == "format 2" ? "format 1" : line) << "\n";
    out << fmt::format(
        "vocab_size {}\nblock_size {}\nn_embd {}\nn_heads {}\nn_layers {}\ntied_head {}\n"
        "use_layer_norm 1\nresidual 1\nuse_ffn 1\nattn_proj 1\nffn_hidden 0\nactivation {}\n"
        "dropout {}\n",
        m.vocab_size, m.block_size, m.n_embd, n_heads, m.n_layers, m.ablations.tied_head ? 1 : 0,
        attn::activation_name(m.activation), m.dropout);
    std::ofstream(ckpt / "train.txt", std::ios::trunc) << out.str();
    attn::write_manifest(ckpt);
  };
  write_format1(m.n_heads);
  CHECK(attn::load_checkpoint(dir).config.model == m);
  write_format1(m.n_heads == 1 ? 2 : 1);
  const std::string error = load_error(dir);
  INFO(error);
  CHECK(contains(error, fmt::format("train.txt': n_heads is {}, but model/model.txt says {}: the "
                                    "two files describe different models",
                                    m.n_heads == 1 ? 2 : 1, m.n_heads)));
  fs::remove_all(dir);
}

TEST_CASE("a train.txt of a format this version does not know is refused, saying what to do") {
  const fs::path dir = saved_run("format9");
  set_key(fs::canonical(dir / "current"), "format", "9");
  CHECK(contains(load_error(dir), "format is '9': written by another version of the course"));
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint saved before the record existed loads, without a corpus") {
  const fs::path dir = saved_run("no_record");  // save_checkpoint without a record
  std::ifstream in(fs::canonical(dir / "current") / "train.txt");
  std::ostringstream read;
  read << in.rdbuf();
  const std::string train = read.str();
  CHECK_FALSE(contains(train, "corpus_"));
  CHECK_FALSE(attn::load_checkpoint(dir).corpus.has_value());
  fs::remove_all(dir);
}

TEST_CASE("a half or malformed corpus record is refused by name") {
  const attn::TrainConfig c = small_config();
  const attn::TrainState s = attn::train_init(c);
  const attn::CorpusRecord record = attn::record_corpus("/tmp/corpus.txt", "abc");
  struct Case {
    const char* key;
    const char* value;  // nullptr: the line is removed
    const char* message;
  };
  const Case cases[] = {
      {"corpus_bytes", nullptr, "missing key 'corpus_bytes'"},
      {"corpus_fnv1a64", "12345", "key 'corpus_fnv1a64' is '12345', expected 16 hex digits"},
      {"corpus_fnv1a64", "zz3456789abcdef0", "expected 16 hex digits"},
      {"corpus_path", "/tmp/a\\q", "key 'corpus_path' is '/tmp/a\\q', expected a path"},
      {"corpus_bytes", "-1", "key 'corpus_bytes' is '-1', expected a non-negative integer"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.key);
    const fs::path dir = temp_dir("corpus_bad");
    attn::save_checkpoint(dir, s, c, vocab7(), record);
    const fs::path ckpt = fs::canonical(dir / "current");
    if (k.value != nullptr) {
      set_key(ckpt, k.key, k.value);
    } else {
      std::ifstream in(ckpt / "train.txt");
      std::ostringstream out;
      std::string line;
      while (std::getline(in, line))
        if (line.rfind(std::string(k.key) + " ", 0) != 0) out << line << "\n";
      in.close();
      std::ofstream(ckpt / "train.txt", std::ios::trunc) << out.str();
      attn::write_manifest(ckpt);
    }
    const std::string e = load_error(dir);
    CHECK(contains(e, "train.txt"));
    CHECK_MESSAGE(contains(e, k.message), e);
    fs::remove_all(dir);
  }
}

// ---- A model folder describes itself (model.txt): what chapters 07 and 10 load with --weights.

TEST_CASE("read_model_file gives model.txt's architecture, tolerates dropout, refuses the rest") {
  attn::TrainConfig c = small_config();
  c.model = attn::with_choices(c.model, [](attn::ModelChoices& m) {
    m.n_layers = 2;
    m.ablations.tied_head = false;
    m.activation = attn::Activation::relu;
  });
  const attn::TrainState s = attn::train_init(c);
  const fs::path dir = temp_dir("model_file");
  attn::save_lm(dir / "described", s.weights, c.model);
  attn::save_lm(dir / "bare", s.weights);  // no model.txt
  const std::optional<attn::ModelChoices> m = attn::read_model_file(dir / "described");
  REQUIRE(m.has_value());
  CHECK(m->n_layers == 2);
  CHECK(m->n_heads == 2);
  CHECK_FALSE(m->ablations.tied_head);
  CHECK(m->activation == attn::Activation::relu);
  CHECK(attn::resolve_spec(*m) == c.model);  // model.txt holds the whole spec
  CHECK_FALSE(attn::read_model_file(dir / "bare").has_value());
  // dropout, a key for training only: any p in [0, 1) is accepted, and it changes nothing here.
  std::ostringstream read;
  read << std::ifstream(dir / "described" / "model.txt").rdbuf();
  const std::string text = read.str();
  const auto with_line = [&](const std::string& key, const std::string& line) {
    std::string t = text;
    const std::size_t at = t.find("\n" + key + " ");
    REQUIRE(at != std::string::npos);
    t.replace(at + 1, t.find('\n', at + 1) - at - 1, line);
    std::ofstream(dir / "described" / "model.txt", std::ios::trunc) << t;
  };
  with_line("dropout", "dropout 0.2");
  CHECK(attn::read_model_file(dir / "described")->n_layers == 2);
  CHECK(attn::read_model_file(dir / "described")->dropout == 0.2f);
  with_line("dropout", "dropout 1.5");
  CHECK_THROWS_WITH_AS(attn::read_model_file(dir / "described"),
                       doctest::Contains("dropout is '1.5', expected a probability in [0, 1)"),
                       std::runtime_error);
  // The sizes model.txt names must be the tensors': wte.npy (V, C) and wpe.npy (T_max, C) have
  // the final say, and a file that disagrees with them is refused by name.
  const std::string described = "model '" + (dir / "described").string() + "': ";
  attn::ModelSpec loaded;
  with_line("n_embd", "n_embd 16");
  CHECK_THROWS_WITH_AS(attn::load_lm(dir / "described", 2, 2, loaded),
                       (described + "model.txt says n_embd 16, but wte.npy (V, C) has 8").c_str(),
                       std::runtime_error);
  with_line("vocab_size", "vocab_size 9");
  CHECK_THROWS_WITH_AS(
      attn::load_lm(dir / "described", 2, 2, loaded),
      (described + "model.txt says vocab_size 9, but wte.npy (V, C) has 7").c_str(),
      std::runtime_error);
  with_line("block_size", "block_size 12");
  CHECK_THROWS_WITH_AS(
      attn::load_lm(dir / "described", 2, 2, loaded),
      (described + "model.txt says block_size 12, but wpe.npy (T_max, C) has 6").c_str(),
      std::runtime_error);
  std::ofstream(dir / "described" / "model.txt", std::ios::trunc) << text;
  CHECK_NOTHROW(attn::load_lm(dir / "described", 2, 2, loaded));
  CHECK(loaded == c.model);
  std::ofstream(dir / "bare" / "model.txt") << "n_layers 2\nn_hedas 2\n";
  CHECK_THROWS_WITH_AS(attn::read_model_file(dir / "bare"),
                       doctest::Contains("model.txt line 2: unknown key 'n_hedas'"),
                       std::runtime_error);
  std::ofstream(dir / "bare" / "model.txt", std::ios::trunc) << "n_layers 2\n";
  CHECK_THROWS_WITH_AS(attn::read_model_file(dir / "bare"),
                       doctest::Contains("model.txt has no n_heads line"), std::runtime_error);
  fs::remove_all(dir);
}

TEST_CASE("--weights DIR alone: the architecture from the folder, flags only agree with it") {
  attn::TrainConfig c = small_config();
  c.model = attn::with_choices(c.model, [](attn::ModelChoices& m) {
    m.n_layers = 2;
    m.ablations.tied_head = false;
    m.activation = attn::Activation::relu;
  });
  const attn::TrainState s = attn::train_init(c);
  const fs::path dir = temp_dir("described");
  attn::save_checkpoint(dir, s, c, vocab7());
  // A run folder resolves to its current model; nothing typed: everything from the files.
  const fs::path model = attn::resolve_model_folder(dir);
  CHECK(model == fs::canonical(dir / "current" / "model"));
  attn::ModelSpec got;
  bool described = false;
  const attn::LmWeights w = attn::load_lm_as_described(model, {}, 4, got, described);
  CHECK(described);
  CHECK(got.n_layers == 2);
  CHECK(got.n_heads == 2);
  CHECK(got.n_embd == 8);
  CHECK(got.block_size == 6);
  CHECK(got.vocab_size == 7);
  CHECK_FALSE(got.ablations.tied_head);
  CHECK(got.activation == attn::Activation::relu);
  // The same logits as the weights that were saved (independent: lm_forward on the originals).
  xt::xtensor<int, 2> tokens = {{1, 2, 3, 4, 5, 6}};
  const attn::Tensor<3> a = attn::lm_forward(tokens, w, got);
  const attn::Tensor<3> b = attn::lm_forward(tokens, s.weights, c.model);
  CHECK(attn::max_abs_diff(a, b) == 0.0);
  // Flags that repeat the files are fine; one that contradicts them is a usage error naming
  // both values.
  attn::ArchitectureFlags same;
  same.n_layers = 2;
  same.n_heads = 2;
  same.n_embd = 8;
  same.block_size = 6;
  CHECK_NOTHROW(attn::load_lm_as_described(model, same, 4, got, described));
  const auto error = [&](attn::ArchitectureFlags f) {
    try {
      attn::load_lm_as_described(model, f, 4, got, described);
    } catch (const attn::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(no usage error)");
  };
  attn::ArchitectureFlags f;
  f.n_layers = 3;
  CHECK(contains(error(f), "--n-layers 3 contradicts model '" + model.string() +
                               "', whose model.txt says n_layers 2: drop the flag"));
  f = {};
  f.n_heads = 4;
  CHECK(contains(error(f), "--n-heads 4 contradicts model"));
  CHECK(contains(error(f), "model.txt says n_heads 2"));
  f = {};
  f.n_embd = 16;
  CHECK(contains(error(f), "--n-embd 16 contradicts model"));
  CHECK(contains(error(f), "wte.npy has C = 8"));
  f = {};
  f.block_size = 32;
  CHECK(contains(error(f), "--block-size 32 contradicts model"));
  CHECK(contains(error(f), "wpe.npy has T_max = 6"));
  // Without model.txt: L from the blocks on disk, H from the flag or the default.
  fs::remove(model / "model.txt");
  fs::remove(model / attn::kManifestName);
  CHECK_NOTHROW(attn::load_lm_as_described(model, {}, 2, got, described));
  CHECK_FALSE(described);
  f = {};
  f.n_layers = 1;
  CHECK(contains(error(f), "--n-layers 1 contradicts model"));
  CHECK(contains(error(f), "which holds 2 blocks (h0 to h1)"));
  f = {};
  f.n_heads = 3;
  CHECK(contains(error(f), "--n-heads 3 does not divide C = 8"));
  fs::remove_all(dir);
}

}  // TEST_SUITE
