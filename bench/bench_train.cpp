// bench_train.cpp: attn-bench's training case (chapter 09, docs/performance.md).
// One full training step of the chapter-09 CPU model (B 32, T 64, C 64, H 4, 4 layers, V 65,
// 09_training's defaults: a separate output head, ReLU, weight decay 0.01, no clipping):
// batch -> forward keeping activations -> loss -> backward -> clip -> AdamW, on the library's
// threads. Counter "tokens/s" = B * T per step over wall-clock time. scripts/bench_compare.py
// times the same step in PyTorch (autograd + torch.optim.AdamW) in the same run.
//
//   build/default/bin/attn-bench --benchmark_filter=train_step
#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include "attn/core/threads.hpp"
#include "attn/model/model.hpp"
#include "attn/io/data.hpp"
#include "attn/train/train.hpp"

namespace {

// The chapter-09 CPU model and its training settings.
attn::TrainConfig cpu_model() {
  attn::ModelChoices m;
  m.vocab_size = 65;
  m.block_size = 64;                      // T
  m.n_embd = 64;                          // C
  m.n_heads = 4;                          // H
  m.n_layers = 4;                         // L
  m.ablations.tied_head = false;          // the lecture's Linear(C, V) head
  m.activation = attn::Activation::relu;  // and its ReLU
  attn::TrainConfig c;
  c.model = attn::resolve_spec(m);
  c.batch_size = 32;  // B
  c.schedule.lr = 1e-3f;
  c.adam.weight_decay = 0.01f;
  return c;
}

// A stand-in corpus: 100k token ids with some structure (the step's cost does not depend on the
// values).
std::vector<int> stand_in_corpus() {
  std::vector<int> data(100000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>((i * 7 + i / 13) % 65);
  return data;
}

void bm_train_step(benchmark::State& state) {
  const attn::TrainConfig c = cpu_model();
  attn::TrainState s = attn::train_init(c);
  const std::vector<int> data = stand_in_corpus();
  attn::train_step(s, c, data);  // the first step sizes every buffer
  for (auto _ : state) {
    const attn::StepResult r = attn::train_step(s, c, data);
    benchmark::DoNotOptimize(r.loss);
  }
  const double tokens = static_cast<double>(c.batch_size * c.model.block_size);
  state.counters["tokens/s"] =
      benchmark::Counter(tokens, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = static_cast<double>(attn::num_threads());
}

// The forward and backward of the same step alone, with the batch in `shards` shards (1: one
// batch; 16: what lm_batch_shards picks for it): what the shards cost or save on one thread, and
// how each scales.
void bm_forward_backward_shards(benchmark::State& state) {
  const auto shards = static_cast<std::size_t>(state.range(0));
  const attn::TrainConfig c = cpu_model();
  attn::TrainState s = attn::train_init(c);
  attn::get_batch(stand_in_corpus(), c.batch_size, c.model.block_size, s.data_rng, s.batch);
  for (auto _ : state) {
    attn::lm_zero(s.grads);
    const double loss = attn::lm_forward_backward(s.batch.x, s.batch.y, s.weights, c.model, s.grads,
                                                  s.cache, shards);
    benchmark::DoNotOptimize(loss);
  }
  state.counters["threads"] = static_cast<double>(attn::num_threads());
}

}  // namespace

BENCHMARK(bm_forward_backward_shards)
    ->Name("lm_fwd_bwd_shards/32_64_64_4_L4")
    ->Arg(1)
    ->Arg(16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(bm_train_step)
    ->Name("train_step/32_64_64_4_L4")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
