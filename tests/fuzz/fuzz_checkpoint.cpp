// tests/fuzz/fuzz_checkpoint.cpp: libFuzzer target for the loaders of chapter 09's checkpoints
// and of model folders (issue 18). Once, it saves a real checkpoint of a tiny model into a
// temporary folder (attn::save_checkpoint: valid .npy weights, moments and losses). Each input
// holds the checkpoint's text files, separated by NUL bytes, in this order:
//   train.txt \0 model.txt \0 vocab.txt \0 evals.tsv
// (a missing part keeps the saved file). They are written over the checkpoint's own, then
// attn::load_checkpoint reads the run and attn::load_lm its model folder. A checkpoint that loads
// goes on as `09_training --resume` would: its corpus record (train.txt's corpus_ keys, in the
// seed) checked against the corpus, the text encoded with its vocabulary, and one training step
// of its config on that text, whose loss must be finite. Every failure must be a std::exception
// naming the file; nothing may crash, hang or allocate without bound. At exit it prints how many
// inputs loaded and resumed. ATTN_FUZZ_WRITE_SEED=FILE writes the saved files as one input (the
// committed seed) to FILE.
#include <stdlib.h>  // mkdtemp

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "attn/io/data.hpp"
#include "attn/io/text.hpp"
#include "attn/model/lm_files.hpp"
#include "attn/train/checkpoint.hpp"
#include "attn/train/train.hpp"

namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path run;                    // the run folder (DIR)
  fs::path ckpt;                   // DIR/current, resolved
  std::vector<std::string> saved;  // the four text files as saved
  std::string corpus;              // the text it was trained on, and its record in train.txt
  attn::CorpusRecord record;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, std::string_view text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// Where each part of an input goes, relative to the checkpoint folder.
const char* const kFiles[] = {"train.txt", "model/model.txt", "vocab.txt", "evals.tsv"};

const Folder& folder() {
  static const Folder f = [] {
    char tmpl[] = "/tmp/fuzz_checkpoint.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    Folder out;
    out.run = fs::path(tmpl) / "run";
    // Five times the lines: its validation split (the last 10%) holds a window of T + 1 = 5.
    for (int i = 0; i < 5; ++i) out.corpus += "to be or not to be\nthat is the question\n";
    const fs::path corpus_path = fs::path(tmpl) / "corpus.txt";
    write_file(corpus_path, out.corpus);
    out.record = attn::record_corpus(corpus_path, out.corpus);
    const attn::Vocab vocab = attn::Vocab::from_text(out.corpus);
    attn::ModelChoices model;
    model.vocab_size = vocab.size();
    model.block_size = 4;
    model.n_embd = 8;
    model.n_heads = 2;
    model.n_layers = 1;
    attn::TrainConfig c;
    c.model = attn::resolve_spec(model);
    c.batch_size = 2;
    c.steps = 3;
    c.schedule.total = 3;
    c.eval_interval = 1;
    c.eval_iters = 1;
    attn::TrainState s = attn::train_init(c);
    s.step = 1;
    s.losses.push_back(3.0f);
    s.evals.push_back({0, 3.1, 3.2});
    attn::save_checkpoint(out.run, s, c, vocab, out.record);
    out.ckpt = fs::canonical(out.run / "current");
    for (const char* name : kFiles) out.saved.push_back(read_file(out.ckpt / name));
    // The seed of tests/fuzz/corpus/checkpoint/: the saved files as one input
    // (valid_tiny_run_spec.txt; valid_tiny_run.txt is the same run saved before ModelSpec,
    // train.txt format 1 and a model.txt without sizes and with `ffn_hidden 0`, which must still
    // load).
    if (const char* seed = std::getenv("ATTN_FUZZ_WRITE_SEED")) {
      std::string joined = out.saved[0];
      for (std::size_t i = 1; i < out.saved.size(); ++i)
        joined += std::string(1, '\0') + out.saved[i];
      write_file(seed, joined);
    }
    return out;
  }();
  return f;
}

// What 09_training --resume does with a checkpoint it loaded, before and in its first step
// (chapters/09_training/run.cpp: resume_corpus, check_data_fits, run_training). Returns false
// where the chapter would refuse the run with a message.
bool resume(attn::Checkpoint& c, const Folder& f) {
  // 1. The corpus: the recorded one must be this text (the chapter reads the file again).
  if (c.corpus) {
    (void)attn::corpus_fingerprint(*c.corpus);
    if (c.corpus->bytes != f.record.bytes || c.corpus->fnv1a64 != f.record.fnv1a64) return false;
  }
  // 2. Its text in the checkpoint's vocabulary, split; a window must fit the validation split.
  const std::vector<int> ids = c.vocab.encode(f.corpus);  // throws for a character it lacks
  const attn::Split split = attn::train_val_split(ids);
  if (split.val.size() < c.config.model.block_size + 1) return false;
  // 3. Its config, held again to the flags' bounds, and one step of it.
  attn::check_train_config(c.config);
  if (c.state.step >= c.config.steps) return true;  // a finished run: nothing left to train
  const attn::StepResult r = attn::train_step(c.state, c.config, split.train);
  if (!std::isfinite(r.loss)) std::abort();  // from saved weights of finite numbers: a bug
  return true;
}

std::size_t g_inputs = 0, g_checkpoints = 0, g_resumed = 0, g_models = 0;
void report() {
  std::fprintf(stderr,
               "fuzz_checkpoint: %zu inputs, %zu checkpoints loaded, %zu resumed, %zu model "
               "folders loaded\n",
               g_inputs, g_checkpoints, g_resumed, g_models);
  std::error_code ec;
  fs::remove_all(folder().run.parent_path(), ec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Folder& f = folder();
  static const bool reporting = std::atexit(report) == 0;  // after folder(): runs before its end
  (void)reporting;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Split at the NUL bytes: part i replaces file i; parts beyond the fourth are ignored.
  std::size_t begin = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    std::string_view part = f.saved[i];
    if (begin <= input.size()) {
      std::size_t end = input.find('\0', begin);
      if (end == std::string_view::npos) end = input.size();
      part = input.substr(begin, end - begin);
      begin = end + 1;
    }
    write_file(f.ckpt / kFiles[i], part);
    if (i == 2) write_file(f.ckpt / "model" / "vocab.txt", part);  // the model folder's copy
  }
  // Sign the edited folders again, as a save would: the manifest check itself is proven by
  // tests/common/test_checkpoint.cpp; here the parsers behind it must be reached.
  // (model/ first: the checkpoint's manifest lists model/MANIFEST.txt.)
  attn::write_manifest(f.ckpt / "model");
  attn::write_manifest(f.ckpt);
  ++g_inputs;
  try {
    attn::Checkpoint c = attn::load_checkpoint(f.run);
    ++g_checkpoints;
    if (resume(c, f)) ++g_resumed;
  } catch (const std::exception&) {
  }
  try {
    attn::ModelSpec config;  // the saved model's n_layers and n_heads, as chapter 07 would pass
    (void)attn::load_lm(f.ckpt / "model", 1, 2, config);
    ++g_models;
  } catch (const std::exception&) {
  }
  return 0;
}
