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
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/io/npy.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/train/checkpoint.hpp"

namespace {

namespace fs = std::filesystem;

attn::TrainConfig small_config() {
  attn::TrainConfig c;
  c.model.vocab_size = 7;
  c.model.block_size = 6;
  c.model.n_embd = 8;
  c.model.n_heads = 2;
  c.model.n_layers = 1;
  c.batch_size = 4;
  c.steps = 12;
  c.schedule.lr = 3e-3f;
  c.eval_iters = 2;
  c.seed = 42;
  return c;
}

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
    attn::LmConfig config;
    config.n_layers = 1;
    config.n_heads = 2;
    attn::load_lm(dir, config);
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
  attn::LmConfig config = small_config().model;
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
  attn::LmConfig config = small_config().model;
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
  CHECK(contains(load_error(dir), "h0.b1.npy holds -1 at flat index 0"));
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

}  // TEST_SUITE
