// bench_attention.cpp: attn-bench, the course's speed check (docs/performance.md).
// Times causal multi-head attention and the transformer block in float32 on the CPU with Google
// Benchmark, forward alone and forward + backward (chapter 08), and a large SGEMM that gives the
// machine's peak, so every result reads as a fraction.
//
//   build/default/bin/attn-bench                          # console table
//   build/default/bin/attn-bench --benchmark_format=json  # what scripts/bench_compare.py reads
//
// Threads: attn::num_threads() (attn/core/threads.hpp), OPENBLAS_NUM_THREADS by default (one per
// core when unset). gemm_peak alone lets OpenBLAS thread its SGEMM itself, with as many threads.
// generate_cached/N and generate_uncached/N (N = 500, 63) time chapter 10's generation loop
// ("tokens/s"); generate_swa_cached/500 the same with RoPE and a sliding window of 64 (chapter
// 11's rolling cache). Counters: "GFLOP/s" (rate, from attn::mha_forward_flops /
// block_forward_flops: the dense count, causal half included; three times that for forward +
// backward), "peak_fraction" (GFLOP/s over the gemm_peak result of this run, present once gemm_peak
// has run: it is registered first), "threads".
#include <benchmark/benchmark.h>
#include <cblas.h>  // OpenBLAS's, for the peak: a plain cblas_sgemm on OpenBLAS's own threads

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstdio>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "attn/fast/ffn.hpp"
#include "attn/fast/gemm.hpp"
#include "attn/fast/linear.hpp"
#include "attn/fast/attention.hpp"
#include "attn/fast/layernorm.hpp"
#include "attn/ops/attention.hpp"
#include "attn/model/block.hpp"
#include "attn/ops/ffn.hpp"
#include "attn/model/kvcache.hpp"
#include "attn/ops/layernorm.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/matmul.hpp"
#include "attn/model/model.hpp"
#include "attn/core/random.hpp"
#include "attn/core/threads.hpp"
#include "attn/io/text.hpp"

namespace {

struct Shape {
  std::size_t B, T, C, H;  // batch, time, channels, heads
  std::string name() const {
    return std::to_string(B) + "_" + std::to_string(T) + "_" + std::to_string(C) + "_" +
           std::to_string(H);
  }
};

// The shapes of the issue: a training-sized batch, one long sequence, and a tiny smoke shape.
constexpr std::array<Shape, 3> kShapes{{{32, 128, 512, 8}, {1, 1024, 512, 8}, {2, 10, 64, 4}}};

constexpr std::size_t kPeakN = 2048;  // gemm_peak: (2048, 2048) @ (2048, 2048), 17.2 GFLOP
double g_peak_gflops = 0.0;           // best gemm_peak result of this run, 0 until it has run

// Wall-clock time of the timed loop, for peak_fraction (benchmark keeps its own clock private).
class LoopClock {
 public:
  LoopClock() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// GFLOP/s as a rate counter (benchmark divides by the measured time; UseRealTime makes that
// wall-clock time, which is what counts when work runs on several threads), the fraction of this
// run's GEMM peak (a plain number, from our own clock around the same loop), the thread count.
void set_counters(benchmark::State& state, double flops_per_iter, const LoopClock& clock) {
  using benchmark::Counter;
  const double seconds = clock.seconds();
  state.counters["GFLOP/s"] = Counter(flops_per_iter * 1e-9, Counter::kIsIterationInvariantRate);
  if (g_peak_gflops > 0.0 && seconds > 0.0) {
    const double gflops = flops_per_iter * 1e-9 * static_cast<double>(state.iterations()) / seconds;
    state.counters["peak_fraction"] = gflops / g_peak_gflops;
  }
  state.counters["threads"] = static_cast<double>(attn::num_threads());
}

attn::Tensor<3> input(const Shape& s) {
  attn::Rng rng(1);
  return attn::randn<3>(rng, {s.B, s.T, s.C});  // (B, T, C)
}

// 1. The machine's single-precision GEMM peak: one large cblas_sgemm, threaded by OpenBLAS itself
// over attn::num_threads() threads (the library keeps BLAS single-threaded otherwise, and
// splits the work over its own threads: gemm_attn below, its own result on the same product).
void bm_gemm_peak(benchmark::State& state, bool library) {
  const std::size_t N = kPeakN;
  const int n = static_cast<int>(N);
  attn::Rng rng(2);
  const attn::Matrix a = attn::randn(rng, N, N);
  const attn::Matrix b = attn::randn(rng, N, N);
  attn::Matrix c = xt::zeros<float>({N, N});
  const double flops =
      2.0 * static_cast<double>(N) * static_cast<double>(N) * static_cast<double>(N);
  const int threads = static_cast<int>(attn::num_threads());  // also pins BLAS to 1 thread
  if (!library) openblas_set_num_threads(threads);
  const LoopClock clock;
  for (auto _ : state) {
    if (library) {
      attn::fast::gemm(N, N, N, 1.0f, a.data(), false, b.data(), false, 0.0f, c.data());
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                  n, 0.0f, c.data(), n);
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double seconds = clock.seconds();
  if (!library) {
    openblas_set_num_threads(1);
    // OpenBLAS's idle threads spin for about 0.1 s after their last job; let them go to sleep
    // before the next benchmark, or they would take cycles from it.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // The same figure the GFLOP/s counter reports, kept for the other benchmarks' peak_fraction.
    if (state.iterations() > 0 && seconds > 0.0) {
      const double gflops = flops * 1e-9 * static_cast<double>(state.iterations()) / seconds;
      g_peak_gflops = std::max(g_peak_gflops, gflops);
    }
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
}

// 2. Causal multi-head attention, the fast path, without the (B, H, T, T) weights.
void bm_mha(benchmark::State& state, Shape s) {
  attn::Rng rng(3);
  const attn::MhaWeights w = attn::mha_init(rng, s.C);
  const attn::Tensor<3> x = input(s);
  const LoopClock clock;
  for (auto _ : state) {
    attn::MhaResult r = attn::fast::mha_forward(x, w, s.H, /*causal=*/true, /*need_weights=*/false);
    benchmark::DoNotOptimize(r.out.data());
  }
  set_counters(state, attn::mha_forward_flops(s.B, s.T, s.C, s.H), clock);
}

// 3. The transformer block: pre-norm, exact GELU, F = 4C, causal.
void bm_block(benchmark::State& state, Shape s) {
  const std::size_t F = 4 * s.C;
  attn::Rng rng(4);
  const attn::BlockWeights w = attn::block_init(rng, s.C, F);
  attn::BlockConfig config{.spec = attn::block_spec(s.C, s.H)};
  config.causal = true;
  config.norm = attn::NormPlacement::pre;
  config.keep_weights = false;  // like bm_mha, and like need_weights=False in PyTorch
  const attn::Tensor<3> x = input(s);
  const LoopClock clock;
  for (auto _ : state) {
    attn::BlockResult r = attn::block_forward(x, w, config);
    benchmark::DoNotOptimize(r.out.data());
  }
  set_counters(state, attn::block_forward_flops(s.B, s.T, s.C, F, s.H), clock);
}

// 4. Forward + backward (chapter 08): the forward that keeps its activations, then the backward
// from a fixed random upstream gradient to dx and every weight's gradient, as one training step
// of the layer does (the gradients accumulate, as they do there). FLOPs: three times the
// forward's dense count (the backward's GEMMs are twice the forward's).
void bm_mha_fwd_bwd(benchmark::State& state, Shape s) {
  attn::Rng rng(3);
  const attn::MhaWeights w = attn::mha_init(rng, s.C);
  const attn::Tensor<3> x = input(s);
  const attn::Tensor<3> dout = attn::randn<3>(rng, {s.B, s.T, s.C});  // (B, T, C)
  attn::MhaWeights grads{xt::zeros_like(w.w_q), xt::zeros_like(w.w_k), xt::zeros_like(w.w_v),
                         xt::zeros_like(w.w_o)};
  attn::fast::MhaCache cache;
  attn::fast::Workspace ws;  // the scratch a training loop keeps between steps
  attn::Tensor<3> dx;
  const LoopClock clock;
  for (auto _ : state) {
    attn::Tensor<3> out;
    attn::fast::mha_forward(x, w, s.H, /*causal=*/true, cache, out, /*need_weights=*/true, ws);
    benchmark::DoNotOptimize(out.data());
    attn::fast::mha_backward(dout, cache, w, s.H, /*causal=*/true, dx, grads, ws);
    benchmark::DoNotOptimize(dx.data());
  }
  set_counters(state, 3.0 * attn::mha_forward_flops(s.B, s.T, s.C, s.H), clock);
}

void bm_block_fwd_bwd(benchmark::State& state, Shape s) {
  const std::size_t F = 4 * s.C;
  attn::Rng rng(4);
  const attn::BlockWeights w = attn::block_init(rng, s.C, F);
  attn::BlockConfig config{
      .spec = attn::block_spec(s.C, s.H)};  // pre-norm, exact GELU, causal, as bm_block
  config.causal = true;
  config.norm = attn::NormPlacement::pre;
  const attn::Tensor<3> x = input(s);
  const attn::Tensor<3> dout = attn::randn<3>(rng, {s.B, s.T, s.C});  // (B, T, C)
  attn::BlockWeights grads = attn::block_zeros_like(w);
  attn::BlockCache cache;
  attn::Tensor<3> dx;
  const LoopClock clock;
  for (auto _ : state) {
    attn::Tensor<3> out = attn::block_forward(x, w, config, cache);
    benchmark::DoNotOptimize(out.data());
    attn::block_backward(dout, cache, w, config, dx, grads);
    benchmark::DoNotOptimize(dx.data());
  }
  set_counters(state, 3.0 * attn::block_forward_flops(s.B, s.T, s.C, F, s.H), clock);
}

// 5. The pieces, to see where the block's time goes (not compared with PyTorch).
// One projection x @ w_q: a (B*T, C) @ (C, C) GEMM.
void bm_linear(benchmark::State& state, Shape s) {
  attn::Rng rng(5);
  const attn::Matrix w = attn::randn(rng, s.C, s.C, 0.02f);
  const attn::Tensor<3> x = input(s);
  const LoopClock clock;
  for (auto _ : state) {
    attn::Tensor<3> y = attn::fast::linear(x, w);  // (B, T, C) @ (C, C) -> (B, T, C)
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, 2.0 * static_cast<double>(s.B * s.T * s.C * s.C), clock);
}

// Causal attention for all heads on already split q, k, v (B, H, T, hs), no weights returned.
void bm_sdpa(benchmark::State& state, Shape s) {
  const std::size_t hs = s.C / s.H;
  attn::Rng rng(6);
  const attn::Tensor<4> q = attn::randn<4>(rng, {s.B, s.H, s.T, hs});
  const attn::Tensor<4> k = attn::randn<4>(rng, {s.B, s.H, s.T, hs});
  const attn::Tensor<4> v = attn::randn<4>(rng, {s.B, s.H, s.T, hs});
  const LoopClock clock;
  for (auto _ : state) {
    attn::AttentionResult r = attn::fast::scaled_dot_product_attention(q, k, v, true, false);
    benchmark::DoNotOptimize(r.out.data());
  }
  // Dense count (both T x T products), as in mha_forward_flops.
  set_counters(state, 4.0 * static_cast<double>(s.B * s.H * s.T * s.T * hs), clock);
}

void bm_layer_norm(benchmark::State& state, Shape s) {
  const attn::Vector gamma = xt::ones<float>({s.C});
  const attn::Vector beta = xt::zeros<float>({s.C});
  const attn::Tensor<3> x = input(s);
  for (auto _ : state) {
    attn::Tensor<3> y = attn::fast::layer_norm(x, gamma, beta);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["threads"] = static_cast<double>(attn::num_threads());
}

// Exact GELU over the FFN's hidden activations (B*T, 4C), in place.
void bm_gelu(benchmark::State& state, Shape s) {
  attn::Rng rng(7);
  const attn::Matrix h0 = attn::randn(rng, s.B * s.T, 4 * s.C);
  attn::Matrix h = h0;
  for (auto _ : state) {
    state.PauseTiming();
    std::copy(h0.begin(), h0.end(), h.begin());
    state.ResumeTiming();
    attn::fast::activate(std::span<float>(h.data(), h.size()), attn::Activation::gelu);
    benchmark::DoNotOptimize(h.data());
  }
  state.counters["Melem/s"] = benchmark::Counter(static_cast<double>(h.size()) * 1e-6,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void bm_ffn(benchmark::State& state, Shape s) {
  const std::size_t F = 4 * s.C;
  attn::Rng rng(8);
  const attn::FfnWeights w = attn::ffn_init(rng, s.C, F);
  const attn::Tensor<3> x = input(s);
  const LoopClock clock;
  for (auto _ : state) {
    attn::Tensor<3> y = attn::fast::ffn_forward(x, w, attn::Activation::gelu);
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, 4.0 * static_cast<double>(s.B * s.T * s.C * F), clock);
}

// The backward's pieces, each on the activations its forward kept (computed once, outside the
// timed loop): where forward + backward's time goes.
// One projection's backward: dx = dy @ W^T and dW += x^T @ dy, two GEMMs of the forward's size.
void bm_linear_bwd(benchmark::State& state, Shape s) {
  attn::Rng rng(5);
  const attn::Matrix w = attn::randn(rng, s.C, s.C, 0.02f);
  const attn::Tensor<3> x = input(s);
  const attn::Tensor<3> dy = attn::randn<3>(rng, {s.B, s.T, s.C});
  attn::Tensor<3> dx;
  attn::Matrix dw = xt::zeros_like(w);
  const LoopClock clock;
  for (auto _ : state) {
    attn::fast::linear_backward(dy, x, w, dx, dw);
    benchmark::DoNotOptimize(dx.data());
  }
  set_counters(state, 4.0 * static_cast<double>(s.B * s.T * s.C * s.C), clock);
}

// Attention's backward for all heads: dV, dP, the softmax backward, dQ, dK (dense count: four
// T x T products, twice the forward's two).
void bm_sdpa_bwd(benchmark::State& state, Shape s) {
  const std::size_t hs = s.C / s.H;
  attn::Rng rng(6);
  const attn::Tensor<4> q = attn::randn<4>(rng, {s.B, s.H, s.T, hs});
  const attn::Tensor<4> k = attn::randn<4>(rng, {s.B, s.H, s.T, hs});
  const attn::Tensor<4> v = attn::randn<4>(rng, {s.B, s.H, s.T, hs});
  const attn::Tensor<4> dout = attn::randn<4>(rng, {s.B, s.H, s.T, hs});
  const attn::AttentionResult r = attn::fast::scaled_dot_product_attention(q, k, v, true, true);
  const LoopClock clock;
  for (auto _ : state) {
    attn::AttentionGrads g =
        attn::fast::scaled_dot_product_attention_backward(dout, q, k, v, r.weights, true);
    benchmark::DoNotOptimize(g.dq.data());
  }
  set_counters(state, 8.0 * static_cast<double>(s.B * s.H * s.T * s.T * hs), clock);
}

void bm_layer_norm_bwd(benchmark::State& state, Shape s) {
  const attn::Vector gamma = xt::ones<float>({s.C});
  const attn::Vector beta = xt::zeros<float>({s.C});
  const attn::Tensor<3> x = input(s);
  attn::Rng rng(10);
  const attn::Tensor<3> dy = attn::randn<3>(rng, {s.B, s.T, s.C});
  attn::LayerNormCache cache;
  attn::Tensor<3> y;
  attn::fast::layer_norm(x, gamma, beta, 1e-5f, cache, y);
  attn::Tensor<3> dx;
  attn::Vector dgamma = xt::zeros<float>({s.C}), dbeta = xt::zeros<float>({s.C});
  attn::fast::Workspace ws;
  for (auto _ : state) {
    attn::fast::layer_norm_backward(dy, x, gamma, cache, dx, dgamma, dbeta, ws);
    benchmark::DoNotOptimize(dx.data());
  }
  state.counters["threads"] = static_cast<double>(attn::num_threads());
}

// GELU's derivative times the upstream gradient over the FFN's hidden values (B*T, 4C).
void bm_gelu_bwd(benchmark::State& state, Shape s) {
  attn::Rng rng(7);
  const attn::Matrix h = attn::randn(rng, s.B * s.T, 4 * s.C);
  const attn::Matrix dy = attn::randn(rng, s.B * s.T, 4 * s.C);
  attn::Matrix dx = xt::zeros_like(h);
  for (auto _ : state) {
    attn::fast::activate_backward(std::span<const float>(h.data(), h.size()),
                                  std::span<const float>(dy.data(), dy.size()),
                                  std::span<float>(dx.data(), dx.size()), attn::Activation::gelu);
    benchmark::DoNotOptimize(dx.data());
  }
  state.counters["Melem/s"] = benchmark::Counter(static_cast<double>(h.size()) * 1e-6,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void bm_ffn_bwd(benchmark::State& state, Shape s) {
  const std::size_t F = 4 * s.C;
  attn::Rng rng(8);
  const attn::FfnWeights w = attn::ffn_init(rng, s.C, F);
  const attn::Tensor<3> x = input(s);
  const attn::Tensor<3> dy = attn::randn<3>(rng, {s.B, s.T, s.C});
  attn::FfnCache cache;
  const attn::Tensor<3> y = attn::fast::ffn_forward(x, w, attn::Activation::gelu, cache);
  attn::FfnWeights grads{xt::zeros_like(w.w1), xt::zeros_like(w.b1), xt::zeros_like(w.w2),
                         xt::zeros_like(w.b2)};
  attn::Tensor<3> dx;
  attn::fast::Workspace ws;
  const LoopClock clock;
  for (auto _ : state) {
    attn::fast::ffn_backward(dy, cache, w, attn::Activation::gelu, dx, grads, ws);
    benchmark::DoNotOptimize(dx.data());
  }
  set_counters(state, 8.0 * static_cast<double>(s.B * s.T * s.C * F), clock);
}

// 6. Why BLAS: the chapter-02 three-loop attn::matmul against attn::fast::matmul_blas on one
// projection-sized product (B*T, C) @ (C, C) of the first shape.
void bm_matmul(benchmark::State& state, bool blas) {
  const Shape s = kShapes[0];
  attn::Rng rng(9);
  const attn::Matrix a = attn::randn(rng, s.B * s.T, s.C);
  const attn::Matrix b = attn::randn(rng, s.C, s.C, 0.02f);
  const LoopClock clock;
  for (auto _ : state) {
    attn::Matrix c = blas ? attn::fast::matmul_blas(a, b) : attn::matmul(a, b);
    benchmark::DoNotOptimize(c.data());
  }
  set_counters(state, 2.0 * static_cast<double>(s.B * s.T * s.C * s.C), clock);
}

// 6. Generation (chapter 10): new tokens from a 1-token prompt with the chapter-09 model's
// shapes (V 65, T_max 64, C 64, H 4, 4 layers), sampled at temperature 1 with a fixed seed, with
// the KV cache (lm_generate_cached) or without (lm_generate: a forward over the cropped context
// per token). Both give the same tokens. 500 tokens: past T_max = 64 the cached loop re-fills its
// cache from the cropped context for every token (kvcache.hpp), so 437 of the 500 tokens cost a
// prefill. 63 tokens: the context never exceeds T_max, every token is one step.
// Counter "tokens/s".
// generate_swa_cached/500: the same shapes and sampling with chapter 11's RoPE (no position table)
// and a sliding window of 64. lm_generate_cached runs it through the rolling cache
// (RollingKvCache, lm_step_rolling): every one of the 500 tokens is one O(W) step, never a
// re-fill. (No uncached twin: lm_generate runs such a model through the reference ops, float64
// sums, about 20 s for 500 tokens here: a check, not a speed.)
constexpr std::array<std::size_t, 2> kGenTokens{500, 63};
constexpr std::size_t kSwaWindow = 64;

void bm_generate(benchmark::State& state, bool cached, std::size_t n_new, bool swa) {
  attn::ModelChoices config_choices;
  config_choices.vocab_size = 65;
  config_choices.block_size = 64;
  config_choices.n_embd = 64;
  config_choices.n_heads = 4;
  config_choices.n_layers = 4;
  if (swa) {
    config_choices.positions = attn::Positions::rope;
    config_choices.window = kSwaWindow;
  }
  const attn::ModelSpec config = attn::resolve_spec(config_choices);
  attn::Rng init(1337);
  const attn::LmWeights w = attn::lm_init(init, config);
  const std::vector<int> prompt = {0};
  attn::GenerateOptions options;
  options.max_new_tokens = n_new;
  for (auto _ : state) {
    attn::Rng rng(42);
    std::vector<int> out = cached ? attn::lm_generate_cached(w, config, prompt, options, rng)
                                  : attn::lm_generate(w, config, prompt, options, rng);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(n_new), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = static_cast<double>(attn::num_threads());
}

void configure(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// Output that cannot be written (> /dev/full, past `ulimit -f`) is an error, one line and exit
// code 1, whichever way the program ends: Google Benchmark's --help exits inside Initialize.
extern "C" void check_stdout_at_exit() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    std::fputs("attn-bench: error: cannot write the output (stdout)\n", stderr);
    std::_Exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  attn::setup_threads();
  std::signal(SIGXFSZ, SIG_IGN);  // a write past `ulimit -f` fails (EFBIG) instead of killing
  std::atexit(check_stdout_at_exit);
  benchmark::Initialize(&argc, argv);
  // What Google Benchmark left is not a flag it knows: one line naming the first of them, in
  // this program's name (its own report prints argv[0] with its whole path, a line for each).
  if (argc > 1) {
    const std::string arg = attn::printable_bytes(argv[1]);
    std::fprintf(
        stderr,
        "attn-bench: error: %s '%s': Google Benchmark's flags start with --benchmark_ "
        "(attn-bench --help lists them)\n",
        arg.rfind('-', 0) == 0 && arg.size() > 1 ? "unknown option" : "unexpected argument",
        arg.c_str());
    return 2;
  }
  benchmark::AddCustomContext("openblas_core", attn::blas_core());
  if (const std::string warning = attn::blas_core_warning(); !warning.empty()) {
    std::fprintf(stderr, "attn-bench: warning: %s\n", warning.c_str());
  }

  // Registration order is run order: the peak first, so the others can report a fraction of it.
  configure(benchmark::RegisterBenchmark(("gemm_peak/" + std::to_string(kPeakN)).c_str(),
                                         bm_gemm_peak, false));
  for (const Shape& s : kShapes) {
    configure(benchmark::RegisterBenchmark(("mha_forward/" + s.name()).c_str(), bm_mha, s));
    configure(benchmark::RegisterBenchmark(("block_forward/" + s.name()).c_str(), bm_block, s));
    configure(benchmark::RegisterBenchmark(("mha_fwd_bwd/" + s.name()).c_str(), bm_mha_fwd_bwd, s));
    configure(
        benchmark::RegisterBenchmark(("block_fwd_bwd/" + s.name()).c_str(), bm_block_fwd_bwd, s));
  }
  for (const Shape& s : kShapes) {
    configure(benchmark::RegisterBenchmark(("part_linear/" + s.name()).c_str(), bm_linear, s));
    configure(benchmark::RegisterBenchmark(("part_sdpa/" + s.name()).c_str(), bm_sdpa, s));
    configure(
        benchmark::RegisterBenchmark(("part_layer_norm/" + s.name()).c_str(), bm_layer_norm, s));
    configure(benchmark::RegisterBenchmark(("part_gelu/" + s.name()).c_str(), bm_gelu, s));
    configure(benchmark::RegisterBenchmark(("part_ffn/" + s.name()).c_str(), bm_ffn, s));
  }
  for (const Shape& s : kShapes) {
    configure(
        benchmark::RegisterBenchmark(("part_linear_bwd/" + s.name()).c_str(), bm_linear_bwd, s));
    configure(benchmark::RegisterBenchmark(("part_sdpa_bwd/" + s.name()).c_str(), bm_sdpa_bwd, s));
    configure(benchmark::RegisterBenchmark(("part_layer_norm_bwd/" + s.name()).c_str(),
                                           bm_layer_norm_bwd, s));
    configure(benchmark::RegisterBenchmark(("part_gelu_bwd/" + s.name()).c_str(), bm_gelu_bwd, s));
    configure(benchmark::RegisterBenchmark(("part_ffn_bwd/" + s.name()).c_str(), bm_ffn_bwd, s));
  }
  configure(benchmark::RegisterBenchmark(("gemm_attn/" + std::to_string(kPeakN)).c_str(),
                                         bm_gemm_peak, true));
  const std::string mm = kShapes[0].name();
  configure(benchmark::RegisterBenchmark(("matmul_naive/" + mm).c_str(), bm_matmul, false));
  configure(benchmark::RegisterBenchmark(("matmul_blas/" + mm).c_str(), bm_matmul, true));

  for (const std::size_t n : kGenTokens) {
    const std::string gen = std::to_string(n);
    configure(benchmark::RegisterBenchmark(("generate_cached/" + gen).c_str(), bm_generate, true, n,
                                           false));
    configure(benchmark::RegisterBenchmark(("generate_uncached/" + gen).c_str(), bm_generate, false,
                                           n, false));
  }
  const std::string swa = std::to_string(kGenTokens[0]);
  configure(benchmark::RegisterBenchmark(("generate_swa_cached/" + swa).c_str(), bm_generate, true,
                                         kGenTokens[0], true));

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
