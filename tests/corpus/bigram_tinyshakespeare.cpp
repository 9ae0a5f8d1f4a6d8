// tests/corpus/bigram_tinyshakespeare.cpp: chapter 01's bigram on the full Tiny Shakespeare.
// Trains with the chapter's default configuration and seed, and checks the lecture's numbers:
// V = 65, the first tokens [18, 47, 56, ...], and a learned validation loss within 0.03 of the
// counting optimum. Without $ATTN_DATA it says so in one line and exits 77 (ctest: Skipped).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "attn/model/bigram.hpp"
#include "attn/io/corpus.hpp"
#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/io/text.hpp"

namespace {

constexpr int kSkip = 77;
constexpr double kMaxGap = 0.03;  // learned val loss - counting optimum val loss

int check(const std::filesystem::path& path) {
  const attn::Corpus corpus = attn::read_corpus(path);
  const attn::Vocab vocab = attn::Vocab::from_text(corpus.text);
  const attn::Split split = attn::train_val_split(vocab.encode(corpus.text));
  int failures = 0;

  std::printf("corpus: %s, %zu bytes\n", path.string().c_str(), corpus.text.size());
  std::printf("V = %zu (expected 65)\n", vocab.size());
  if (vocab.size() != 65) ++failures;

  const std::vector<int> want_first{18, 47, 56, 57, 58, 1, 15, 47, 58};
  const std::vector<int> first(split.train.begin(),
                               split.train.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                         want_first.size(), split.train.size())));
  std::printf("first tokens:");
  for (int t : first) std::printf(" %d", t);
  std::printf(" (expected 18 47 56 57 58 1 15 47 58)\n");
  if (first != want_first) ++failures;

  // The chapter's defaults: BigramTrainConfig{} and --seed 1337 for the training generator.
  const attn::BigramTrainConfig config;
  const attn::Matrix counts = attn::bigram_counts(split.train, vocab.size());
  const double optimum = attn::bigram_loss(attn::bigram_logits_from_counts(counts), split.val);
  attn::Matrix logits = xt::zeros<float>({vocab.size(), vocab.size()});
  attn::Rng rng(1337);
  attn::BigramReport last{};
  attn::train_bigram(logits, split, config, rng, [&](const attn::BigramReport& r) { last = r; });
  const double gap = last.val_loss - optimum;
  std::printf(
      "after %zu steps: train loss %.4f, val loss %.4f; counting optimum val loss %.4f; "
      "gap %.4f (at most %.2f)\n",
      last.step, last.train_loss, last.val_loss, optimum, gap, kMaxGap);
  if (!(gap <= kMaxGap)) ++failures;

  std::printf("%s\n", failures == 0 ? "PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main() {
  attn::setup_threads();  // as every program does first (attn/core/threads.hpp)
  const char* env = std::getenv("ATTN_DATA");
  if (env == nullptr || *env == '\0') {
    std::printf(
        "SKIPPED: ATTN_DATA is not set; run scripts/get-data.sh and export "
        "ATTN_DATA=$PWD/data/tinyshakespeare.txt to measure the bigram on Tiny "
        "Shakespeare\n");
    return kSkip;
  }
  if (!std::filesystem::exists(env)) {
    std::printf(
        "SKIPPED: ATTN_DATA=%s does not exist; run scripts/get-data.sh and export "
        "ATTN_DATA=$PWD/data/tinyshakespeare.txt to measure the bigram on Tiny "
        "Shakespeare\n",
        env);
    return kSkip;
  }
  try {
    return check(env);
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
