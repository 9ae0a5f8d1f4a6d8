#!/usr/bin/python3
"""bench_compare.py: our attention and block against PyTorch, same shapes, same run.

Forward alone (under torch.no_grad()) and forward + backward (PyTorch's autograd from a random
upstream gradient to the gradients of the input and of every weight; ours attn::mha_backward and
attn::block_backward, chapter 08). Runs attn-bench (Google Benchmark, JSON) at
OPENBLAS_NUM_THREADS=1 and =2 (the library's thread count) and keeps the faster per shape; times
the same math in PyTorch (float32, CPU) at 1 and 2 intra-op threads (torch.set_num_threads) and,
because PyTorch's matmuls run in an OpenBLAS whose threads only OPENBLAS_NUM_THREADS controls, at
OPENBLAS_NUM_THREADS=1 and =2 too (one child process per setting), and keeps the fastest of the
four. The whole sweep is repeated --rounds times, ours and PyTorch taking turns, and each
setting keeps its best round, so that a slow spell of a shared machine does not land on one side
only. Prints, per shape, ours ms, PyTorch ms, ours/PyTorch, our GFLOP/s and its fraction of the
machine's SGEMM peak (attn-bench's gemm_peak, best thread setting), and the ratio of CPU times on
one thread (ours at 1 thread, PyTorch at 1/1), which other programs on a busy machine disturb
least. See docs/performance.md.

  /usr/bin/python3 scripts/bench_compare.py --bench build/default/bin/attn-bench

Against two PyTorch versions in one run (Debian's 1.13, and 2.x from the Python package index in a
virtual environment: `python3 -m venv ~/torch2 && ~/torch2/bin/pip install torch numpy`), each
with ours measured again beside it:

  /usr/bin/python3 scripts/bench_compare.py --torch-python /usr/bin/python3 \
      --torch-python ~/torch2/bin/python

PyTorch 2.x computes attention with F.scaled_dot_product_attention (as nanoGPT does); 1.13 has
none, so there it is written out (scores, mask, softmax, weighted sum).

Generation (chapter 10, --cases generate or all): 500 (and 63) new tokens from a 1-token prompt with the
chapter-09 model's shapes (V 65, T_max 64, C 64, H 4, 4 layers), sampled at temperature 1. Ours:
attn-bench's generate_cached/500 and generate_uncached/500. PyTorch, in the same run and at the
same four thread settings: the lecture's loop (ng-video-lecture gpt.py: one module per head, a
full forward over the context cropped to T_max for every token, no cache) and a loop with a KV
cache written the usual way (per layer k and v grown with torch.cat, one step per token; past
T_max the cropped context is prefilled again, which keeps its tokens equal to the no-cache
loop's: checked greedily before timing). Prints tokens/s and the ratios.

Sliding-window generation (chapter 11, in the same run): 500 new tokens with the same shapes,
RoPE instead of the position table and a window of 64. Ours: attn-bench's
generate_swa_cached/500, the rolling cache (one O(W) step per token, never re-filled).
PyTorch: the lecture's loop for that model (each Head rotates q and k by RoPE, with cos and sin
tables computed once, and its mask also hides keys 64 or more positions back; a full forward
over the context cropped to T_max for every token). Its math is checked before timing: with
window 16 (the last token then depends on at most 61 <= T_max tokens, so cropping changes
nothing) its 150 greedy tokens must equal those of the whole-sequence sliding-window forward,
written another way.

Long context (chapter 12, --cases long): one causal multi-head forward (and, with --ops
mha_fwd_bwd, forward + backward) with B 1, C 512, H 8, the four projections included, at T = 4096,
8192, 16384, 32768 (--long-t). Ours: `12_fast_attention --long T --kernel flash --timing` (the
flash kernel, --chapter); PyTorch 2.x: x @ w_qkv, F.scaled_dot_product_attention(is_causal=True),
@ w_o, in float32. Each run is a process of its own, ours and PyTorch's taking turns at each T,
at the same thread count (each of --threads, default 1,2: OPENBLAS_NUM_THREADS and
torch.set_num_threads);
each prints its wall time, its CPU time (user + system) and its peak resident memory
(getrusage), and the table gives the ratios. One pass at each T, the best of --rounds kept.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

SHAPES = [(32, 128, 512, 8), (1, 1024, 512, 8), (2, 10, 64, 4)]  # (B, T, C, H)
THREADS = [1, 2]
OPS = ["mha_forward", "block_forward", "mha_fwd_bwd", "block_fwd_bwd"]
MODULES = {"mha_forward": "nn.MultiheadAttention", "block_forward": "nn.TransformerEncoderLayer"}


def die(message):
    print(f"bench_compare.py: error: {message}", file=sys.stderr)
    sys.exit(1)


def shape_name(shape):
    return "_".join(str(n) for n in shape)


def mha_flops(B, T, C, H):
    # The same count as attn::mha_forward_flops: four (C, C) projections and the two dense
    # (T, T) products; the masked half of the causal scores is counted too.
    return 2.0 * B * T * 4 * C * C + 4.0 * B * H * T * T * (C // H)


def block_flops(B, T, C, H):
    F = 4 * C
    return 2.0 * B * T * (4 * C * C + 2 * C * F) + 4.0 * B * H * T * T * (C // H)


# Forward + backward: the backward's products are twice the forward's (for y = x @ W, both
# dx = dy @ W^T and dW = x^T @ dy), so three times the forward's count, as attn-bench counts.
FLOPS = {"mha_forward": mha_flops, "block_forward": block_flops,
         "mha_fwd_bwd": lambda *s: 3.0 * mha_flops(*s),
         "block_fwd_bwd": lambda *s: 3.0 * block_flops(*s)}


# ---------------------------------------------------------------------------------------------
# Ours: attn-bench's JSON.


def run_ours(bench, threads, repetitions, min_time, bench_filter):
    """{benchmark name: {"ms": median real time, "gflops": median GFLOP/s}} at one BLAS setting."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    cmd = [
        bench,
        "--benchmark_format=json",
        f"--benchmark_filter={bench_filter}",
        f"--benchmark_repetitions={repetitions}",
        "--benchmark_report_aggregates_only=true",
        f"--benchmark_min_time={min_time}",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr.strip()}")
    report = json.loads(proc.stdout)
    results = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"]).removesuffix("/real_time")  # UseRealTime's suffix
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ns")]
        results[name] = {"ms": b["real_time"] * scale, "cpu_ms": b["cpu_time"] * scale,
                         "gflops": b.get("GFLOP/s", float("nan"))}
    return results


# ---------------------------------------------------------------------------------------------
# PyTorch: the same math, written the same way (x @ W, no biases in attention).


def make_torch_fns(torch, B, T, C, H, ops):
    """{label: fn} for the requested ops; fwd_bwd ops also name the tensors they differentiate."""
    F = torch.nn.functional
    hs = C // H
    gen = torch.Generator().manual_seed(0)

    def randn(*shape, std=1.0):
        return torch.randn(*shape, generator=gen) * std

    x = randn(B, T, C)
    w_q, w_k, w_v, w_o = (randn(C, C, std=0.02) for _ in range(4))
    w1, w2 = randn(C, 4 * C, std=0.02), randn(4 * C, C, std=0.02)
    b1, b2 = torch.zeros(4 * C), torch.zeros(C)
    g1, be1, g2, be2 = torch.ones(C), torch.zeros(C), torch.ones(C), torch.zeros(C)
    dout = randn(B, T, C)  # the upstream gradient of the backward
    # Precomputed once, like nanoGPT's registered buffer: True where a query may not look.
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scale = 1.0 / math.sqrt(hs)

    # PyTorch 2.x: F.scaled_dot_product_attention, what users write today (its CPU kernel is
    # flash-style). PyTorch 1.13 has none: the attention written out, as nanoGPT did then.
    sdpa = getattr(F, "scaled_dot_product_attention", None)

    def attend(q, k, v):
        if sdpa is not None:
            return sdpa(q, k, v, is_causal=True)
        att = (q @ k.transpose(-2, -1)) * scale  # (B, H, T, T)
        att = att.masked_fill(future, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v  # (B, H, T, hs)

    def mha(x):
        q = (x @ w_q).view(B, T, H, hs).transpose(1, 2)  # (B, H, T, hs)
        k = (x @ w_k).view(B, T, H, hs).transpose(1, 2)
        v = (x @ w_v).view(B, T, H, hs).transpose(1, 2)
        y = attend(q, k, v)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # merge heads
        return y @ w_o

    def block(x):
        x = x + mha(F.layer_norm(x, (C,), g1, be1, 1e-5))
        h = F.gelu(F.layer_norm(x, (C,), g2, be2, 1e-5) @ w1 + b1)  # exact (erf) GELU
        return x + (h @ w2 + b2)

    # Forward + backward: autograd records the forward, then goes back from dout to the input and
    # every weight (fresh gradients each call, as torch.autograd.grad returns them).
    mha_leaves = [x, w_q, w_k, w_v, w_o]
    block_leaves = mha_leaves + [g1, be1, g2, be2, w1, b1, w2, b2]
    for t in block_leaves:
        t.requires_grad_()  # ignored by the forward rows, which run under torch.no_grad()

    def fwd_bwd(fn, leaves):
        return lambda: torch.autograd.grad(fn(x), leaves, dout)

    fns = {"mha_forward": (lambda: mha(x)), "block_forward": (lambda: block(x)),
           "mha_fwd_bwd": fwd_bwd(mha, mha_leaves),
           "block_fwd_bwd": fwd_bwd(block, block_leaves)}

    # Extra rows, not the same math (biases, packed in_proj), PyTorch's library modules.
    if "mha_forward" in ops:
        mha_mod = torch.nn.MultiheadAttention(C, H, batch_first=True).eval()
        fns["nn.MultiheadAttention"] = lambda: mha_mod(x, x, x, attn_mask=future,
                                                       need_weights=False)[0]
    if "block_forward" in ops:
        layer = torch.nn.TransformerEncoderLayer(C, H, 4 * C, dropout=0.0, activation="gelu",
                                                 batch_first=True, norm_first=True).eval()
        fns["nn.TransformerEncoderLayer"] = lambda: layer(x, src_mask=future)
    return {k: v for k, v in fns.items() if k in ops or k in MODULES.values()}


def time_torch(torch, fn, repetitions, min_time, grad=False):
    """Medians over repetitions of the mean wall-clock and process CPU time of one call (ms),
    after a warm-up. Without `grad`, under torch.no_grad() (no autograd records)."""
    with torch.set_grad_enabled(grad):
        for _ in range(3):
            fn()
        # Calibrate: enough calls per sample to fill min_time, as Google Benchmark does.
        n, start = 1, time.perf_counter()
        fn()
        one = time.perf_counter() - start
        n = max(1, int(min_time / max(one, 1e-7)))
        samples, cpu_samples = [], []
        for _ in range(repetitions):
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(n):
                fn()
            samples.append((time.perf_counter() - start) / n * 1e3)
            cpu_samples.append((time.process_time() - cpu_start) / n * 1e3)
    return statistics.median(samples), statistics.median(cpu_samples)


def torch_gemm_peak(torch, repetitions):
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    ms = time_torch(torch, lambda: a @ b, repetitions, 0.2)[0]
    return 2.0 * 2048**3 / (ms * 1e-3) * 1e-9


TORCH_SETTINGS = [(b, i) for b in THREADS for i in THREADS]  # (OpenBLAS, intra-op) threads
TORCH_PYTHON = [sys.executable]  # the interpreter whose PyTorch the workers run (--torch-python)

# ---------------------------------------------------------------------------------------------
# Generation (chapter 10): the chapter-09 model's shapes.

GEN = dict(V=65, T_MAX=64, C=64, H=4, L=4)
GEN_LENGTHS = [500, 63]  # past T_max (the case), and within it (every token one step)
GEN_SWA_WINDOW = 64  # the sliding-window case (chapter 11): RoPE, window 64, 500 tokens
GEN_SWA_CHECK = 16  # the window of its greedy check (see torch_generate_worker)


def rope_tables(torch, T, hs, theta=10000.0):
    """cos and sin (T, hs/2) of the angles t * theta^(-2i/hs), computed once (as Llama's code
    precomputes them) in float64, returned in float32."""
    freq = theta ** (-torch.arange(0, hs, 2, dtype=torch.float64) / hs)  # (hs/2,)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]  # (T, hs/2)
    return torch.cos(angle).float(), torch.sin(angle).float()


def rope_rotate(torch, x, cos, sin):
    """RoPE in the paper's form (RoFormer, Meta's Llama; ops/rope.hpp): in every head, x (..., T,
    hs), the pair (x[2i], x[2i+1]) of the row at position t is rotated by t * theta^(-2i/hs)
    (cos and sin: rope_tables' first T rows)."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


def make_lecture_gpt(torch, scale=None, seed=0, window=0):
    """The lecture's model (ng-video-lecture gpt.py: Head, MultiHeadAttention, FeedFoward, Block),
    with our model's math: no biases in attention, exact GELU, output tied to the embedding.
    Dropout modules are kept as in the lecture (p = 0, eval mode). scale: None for the 0.02
    initialisation of the benchmark, else a larger one for the greedy equality check.
    window > 0: chapter 11's sliding-window model instead, as the lecture would write it: no
    position table, q and k of each Head rotated by RoPE, and the mask also hides keys more than
    window - 1 positions back."""
    nn, F = torch.nn, torch.nn.functional
    V, T_MAX, C, H, L = GEN["V"], GEN["T_MAX"], GEN["C"], GEN["H"], GEN["L"]
    hs = C // H
    allowed = torch.tril(torch.ones(T_MAX, T_MAX))  # 1 where query t may see key j
    if window > 0:
        allowed = allowed * torch.triu(torch.ones(T_MAX, T_MAX), diagonal=-(window - 1))

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.key = nn.Linear(C, hs, bias=False)
            self.query = nn.Linear(C, hs, bias=False)
            self.value = nn.Linear(C, hs, bias=False)
            self.register_buffer("tril", allowed.clone())
            if window > 0:
                cos, sin = rope_tables(torch, T_MAX, hs)
                self.register_buffer("cos", cos)
                self.register_buffer("sin", sin)
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            B, T, _ = x.shape
            k = self.key(x)
            q = self.query(x)
            if window > 0:
                cos, sin = self.cos[:T], self.sin[:T]
                q, k = rope_rotate(torch, q, cos, sin), rope_rotate(torch, k, cos, sin)
            wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
            wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
            wei = F.softmax(wei, dim=-1)
            wei = self.dropout(wei)
            return wei @ self.value(x)

    class MultiHeadAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleList([Head() for _ in range(H)])
            self.proj = nn.Linear(C, C, bias=False)
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            out = torch.cat([h(x) for h in self.heads], dim=-1)
            return self.dropout(self.proj(out))

    class FeedFoward(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C),
                                     nn.Dropout(0.0))

        def forward(self, x):
            return self.net(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.sa = MultiHeadAttention()
            self.ffwd = FeedFoward()
            self.ln1 = nn.LayerNorm(C)
            self.ln2 = nn.LayerNorm(C)

        def forward(self, x):
            x = x + self.sa(self.ln1(x))
            return x + self.ffwd(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.token_embedding_table = nn.Embedding(V, C)
            if window == 0:
                self.position_embedding_table = nn.Embedding(T_MAX, C)
            self.blocks = nn.Sequential(*[Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)
            self.lm_head = nn.Linear(C, V, bias=False)
            self.lm_head.weight = self.token_embedding_table.weight  # tied

        def forward(self, idx):
            B, T = idx.shape
            x = self.token_embedding_table(idx)
            if window == 0:
                x = x + self.position_embedding_table(torch.arange(T))
            x = self.blocks(x)
            return self.lm_head(self.ln_f(x))

        def generate(self, idx, max_new_tokens, greedy=False):
            for _ in range(max_new_tokens):
                idx_cond = idx[:, -T_MAX:]
                logits = self(idx_cond)[:, -1, :]
                if greedy:
                    idx_next = logits.argmax(dim=-1, keepdim=True)
                else:
                    probs = F.softmax(logits, dim=-1)
                    idx_next = torch.multinomial(probs, num_samples=1)
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    torch.manual_seed(seed)
    model = GPT().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "ln" in name:
                if scale is not None:
                    p.normal_(0.0, 0.1)
                    if name.endswith("weight"):
                        p.add_(1.0)
                continue
            std = 0.02 if scale is None else (0.5 if "embedding" in name else C ** -0.5)
            p.normal_(0.0, std)
    return model


class CachedGPT:
    """The same weights, generating with a KV cache the usual way: q, k, v of the new rows in one
    (C, 3C) product, per layer k and v of shape (B, H, n, hs) grown by torch.cat, one step per
    token; past T_max the cropped context is prefilled again (positions moved)."""

    def __init__(self, torch, lecture):
        self.torch, self.F = torch, torch.nn.functional
        self.wte = lecture.token_embedding_table.weight
        self.wpe = lecture.position_embedding_table.weight
        self.layers = []
        for b in lecture.blocks:
            w_qkv = torch.cat([torch.cat([h.query.weight.t() for h in b.sa.heads], 1),
                               torch.cat([h.key.weight.t() for h in b.sa.heads], 1),
                               torch.cat([h.value.weight.t() for h in b.sa.heads], 1)], 1)
            self.layers.append(dict(ln1=b.ln1, ln2=b.ln2, w_qkv=w_qkv.contiguous(),
                                    w_o=b.sa.proj.weight.t().contiguous(), ffwd=b.ffwd))
        self.ln_f = lecture.ln_f

    def forward(self, idx, cache, pos0):
        torch, F = self.torch, self.F
        C, H = GEN["C"], GEN["H"]
        hs = C // H
        B, T = idx.shape
        x = self.wte[idx] + self.wpe[pos0:pos0 + T]
        for layer, kv in zip(self.layers, cache):
            q, k, v = (layer["ln1"](x) @ layer["w_qkv"]).split(C, dim=2)
            q = q.view(B, T, H, hs).transpose(1, 2)  # (B, H, T, hs)
            k = k.view(B, T, H, hs).transpose(1, 2)
            v = v.view(B, T, H, hs).transpose(1, 2)
            if kv:
                k = torch.cat([kv[0], k], dim=2)  # (B, H, n + T, hs)
                v = torch.cat([kv[1], v], dim=2)
            kv[:] = [k, v]
            att = (q @ k.transpose(-2, -1)) * hs ** -0.5
            if T > 1:
                att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            x = x + y.transpose(1, 2).reshape(B, T, C) @ layer["w_o"]
            x = x + layer["ffwd"](layer["ln2"](x))
        return self.ln_f(x[:, -1, :]) @ self.wte.t()  # (B, V)

    def generate(self, idx, max_new_tokens, greedy=False):
        torch, T_MAX = self.torch, GEN["T_MAX"]
        cache = [[] for _ in self.layers]
        logits = self.forward(idx[:, -T_MAX:], cache, 0)
        for i in range(max_new_tokens):
            if greedy:
                idx_next = logits.argmax(dim=-1, keepdim=True)
            else:
                idx_next = torch.multinomial(self.F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
            if i + 1 == max_new_tokens:
                break
            n = cache[0][0].shape[2]
            if n < T_MAX:
                logits = self.forward(idx_next, cache, n)
            else:  # every token moves one position: prefill the cropped context again
                cache = [[] for _ in self.layers]
                logits = self.forward(idx[:, -T_MAX:], cache, 0)
        return idx


def swa_full_generate(torch, lecture, idx, max_new_tokens, window):
    """Greedy tokens of the sliding-window model with the lecture model's weights, written
    another way: every step one forward over the WHOLE sequence (never cropped), at absolute
    positions, heads batched, RoPE as a multiplication by e^(i angle) of the complex numbers
    x[2i] + i x[2i+1] (Llama's reference code). What the rolling cache computes (kvcache.hpp)."""
    F = torch.nn.functional
    C, H = GEN["C"], GEN["H"]
    hs = C // H
    wte = lecture.token_embedding_table.weight
    freq = 10000.0 ** (-torch.arange(0, hs, 2, dtype=torch.float64) / hs)

    def rotate(x):  # (1, H, T, hs)
        T = x.shape[2]
        turn = torch.polar(torch.ones(T, hs // 2, dtype=torch.float64),
                           torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :])
        pairs = x.to(torch.float64).reshape(*x.shape[:-1], hs // 2, 2).contiguous()
        z = torch.view_as_complex(pairs)  # x[2i] + i x[2i+1]
        return torch.view_as_real(z * turn).flatten(-2).to(x.dtype)

    for _ in range(max_new_tokens):
        T = idx.shape[1]
        t = torch.arange(T)
        hidden = (t[None, :] > t[:, None]) | (t[:, None] - t[None, :] >= window)  # (T, T)
        x = wte[idx]  # (1, T, C)
        for b in lecture.blocks:
            h = b.ln1(x)
            q, k, v = (torch.stack([getattr(head, name)(h) for head in b.sa.heads], dim=1)
                       for name in ("query", "key", "value"))  # (1, H, T, hs)
            q, k = rotate(q), rotate(k)
            att = (q @ k.transpose(-2, -1)) * hs ** -0.5
            y = F.softmax(att.masked_fill(hidden, float("-inf")), dim=-1) @ v
            x = x + b.sa.proj(y.transpose(1, 2).reshape(1, T, C))
            x = x + b.ffwd(b.ln2(x))
        logits = lecture.lm_head(lecture.ln_f(x[:, -1, :]))
        idx = torch.cat((idx, logits.argmax(dim=-1, keepdim=True)), dim=1)
    return idx


def torch_generate_worker(torch, repetitions):
    """Tokens/s of both PyTorch loops (best of `repetitions`), after checking they agree; and of
    the lecture loop for the sliding-window model (500 tokens), after checking it greedily
    against swa_full_generate."""
    with torch.no_grad():
        check = make_lecture_gpt(torch, scale=1.0, seed=1)
        start = torch.zeros((1, 1), dtype=torch.long)
        a = check.generate(start, 150, greedy=True)
        b = CachedGPT(torch, check).generate(start, 150, greedy=True)
        same = bool(torch.equal(a, b))
        # Window 16 over 4 layers: the last token depends on at most 4 * 15 + 1 = 61 <= T_max
        # tokens, and RoPE on the offsets only, so cropping to T_max changes nothing: the lecture
        # loop must give the uncropped forward's tokens, here past T_max too (in float64, where
        # rounding cannot flip an argmax).
        check = make_lecture_gpt(torch, scale=1.0, seed=1, window=GEN_SWA_CHECK).double()
        a = check.generate(start, 150, greedy=True)
        b = swa_full_generate(torch, check, start, 150, GEN_SWA_CHECK)
        same_swa = bool(torch.equal(a, b))
        lecture = make_lecture_gpt(torch)
        cached = CachedGPT(torch, lecture)
        swa = make_lecture_gpt(torch, window=GEN_SWA_WINDOW)
        out = {"same_tokens": same, "same_tokens_swa": same_swa}
        runs = [(label, model, n) for n in GEN_LENGTHS
                for label, model in (("torch_nocache", lecture), ("torch_cached", cached))]
        runs.append(("torch_swa_nocache", swa, GEN_LENGTHS[0]))
        for label, model, n in runs:
            model.generate(start, 20)  # warm-up
            best = math.inf
            for _ in range(repetitions):
                t0 = time.perf_counter()
                model.generate(start, n)
                best = min(best, time.perf_counter() - t0)
            out[f"{label}/{n}"] = n / best
    return out


def run_generate(args, rounds):
    """{label: best tokens/s} for ours (per thread setting) and PyTorch (per setting)."""
    ours, torch_rate, same, same_swa = {}, {}, True, True
    for round_no in range(1, rounds + 1):
        for t in THREADS:
            print(f"  round {round_no}: attn-bench generate with OPENBLAS_NUM_THREADS={t} ...",
                  file=sys.stderr)
            got = run_ours(args.bench, t, args.repetitions, args.min_time, "^generate_")
            for name, r in got.items():
                label, n = name.split("/")
                key = (label, int(n), t)
                ours[key] = max(ours.get(key, 0.0), int(n) / (r["ms"] * 1e-3))
        for blas_t, intra_t in TORCH_SETTINGS:
            print(f"  round {round_no}: PyTorch generation with OPENBLAS_NUM_THREADS={blas_t}, "
                  f"torch.set_num_threads({intra_t}) ...", file=sys.stderr)
            got = run_torch_worker(blas_t, intra_t, args.repetitions, args.min_time, "generate")
            same = same and got.pop("same_tokens")
            same_swa = same_swa and got.pop("same_tokens_swa")
            for name, rate in got.items():
                label, n = name.split("/")
                key = (label, int(n), (blas_t, intra_t))
                torch_rate[key] = max(torch_rate.get(key, 0.0), rate)
    names = {"generate_cached": "ours, KV cache (lm_generate_cached)",
             "generate_uncached": "ours, no cache (lm_generate)",
             "torch_cached": "PyTorch, KV cache (torch.cat)",
             "torch_nocache": "PyTorch, lecture loop, no cache"}
    best = {}
    for n in GEN_LENGTHS:
        for label in ("generate_cached", "generate_uncached"):
            t = max(THREADS, key=lambda k: ours[(label, n, k)])
            best[(label, n)] = (ours[(label, n, t)], str(t))
        for label in ("torch_nocache", "torch_cached"):
            t = max(TORCH_SETTINGS, key=lambda k: torch_rate[(label, n, k)])
            best[(label, n)] = (torch_rate[(label, n, t)], f"{t[0]}/{t[1]}")
    print()
    print(f"Generation from a 1-token prompt: V {GEN['V']}, T_max {GEN['T_MAX']}, C {GEN['C']}, "
          f"H {GEN['H']}, {GEN['L']} layers")
    if args.markdown:
        print()
        print("| new tokens | loop | tokens/s (threads) | / PyTorch no cache | / PyTorch cached |")
        print("| ---: | --- | ---: | ---: | ---: |")
    for n in GEN_LENGTHS:
        base, cached_pt = best[("torch_nocache", n)][0], best[("torch_cached", n)][0]
        if not args.markdown:
            print(f"  {n} new tokens")
        for label in names:
            rate, th = best[(label, n)]
            if args.markdown:
                print(f"| {n} | {names[label]} | {rate:.0f} ({th}) | {rate / base:.2f} | "
                      f"{rate / cached_pt:.2f} |")
            else:
                print(f"    {names[label]:38} {rate:9.0f} tokens/s ({th:>3})  x{rate / base:6.2f} "
                      f"vs PyTorch no cache, x{rate / cached_pt:5.2f} vs PyTorch cached")
    print("PyTorch's two loops gave the same 150 greedy tokens: " + ("yes" if same else "NO"))

    # The sliding-window model (chapter 11): RoPE, window 64, through our rolling cache.
    n = GEN_LENGTHS[0]
    swa_names = {"generate_swa_cached": "ours, rolling cache (lm_generate_cached)",
                 "torch_swa_nocache": "PyTorch, lecture loop, no cache"}
    t = max(THREADS, key=lambda k: ours[("generate_swa_cached", n, k)])
    best[("generate_swa_cached", n)] = (ours[("generate_swa_cached", n, t)], str(t))
    t = max(TORCH_SETTINGS, key=lambda k: torch_rate[("torch_swa_nocache", n, k)])
    best[("torch_swa_nocache", n)] = (torch_rate[("torch_swa_nocache", n, t)], f"{t[0]}/{t[1]}")
    base = best[("torch_swa_nocache", n)][0]
    print()
    print(f"Sliding-window model: the same shapes with RoPE (no position table) and window "
          f"{GEN_SWA_WINDOW}, {n} new tokens")
    if args.markdown:
        print()
        print("| new tokens | loop | tokens/s (threads) | / PyTorch no cache |")
        print("| ---: | --- | ---: | ---: |")
    for label, text in swa_names.items():
        rate, th = best[(label, n)]
        if args.markdown:
            print(f"| {n} | {text} | {rate:.0f} ({th}) | {rate / base:.2f} |")
        else:
            print(f"    {text:42} {rate:9.0f} tokens/s ({th:>3})  x{rate / base:6.2f} "
                  "vs PyTorch no cache")
    print(f"PyTorch's lecture loop (window {GEN_SWA_CHECK}, cropped to T_max) and the uncropped "
          "sliding-window forward gave the same 150 greedy tokens: "
          + ("yes" if same_swa else "NO"))
    return dict(best={f"{k[0]}/{k[1]}": v[0] for k, v in best.items()},
                threads={f"{k[0]}/{k[1]}": v[1] for k, v in best.items()}, same_tokens=same,
                same_tokens_swa=same_swa)



# ---------------------------------------------------------------------------------------------
# Training (chapter 09): one full step of the CPU model.

TRAIN = dict(V=65, T=64, C=64, H=4, L=4, B=32)


def make_train_step(torch):
    """One training step of chapter 09's CPU model written the usual PyTorch way: nn modules
    with autograd, torch.optim.AdamW with two parameter groups (decay on matrices and embeddings,
    weight decay 0.01), lr 1e-3, no clipping. The architecture is ours (09_training's defaults):
    pre-norm blocks, attention without biases (q, k, v as one Linear(C, 3C), the projection
    Linear(C, C) without bias), FFN C -> 4C -> C with biases and ReLU, a separate Linear(C, V)
    head with bias."""
    import torch.nn as nn
    import torch.nn.functional as F
    V, T, C, H, L, B = (TRAIN[k] for k in ("V", "T", "C", "H", "L", "B"))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * C, bias=False)
            self.proj = nn.Linear(C, C, bias=False)
            self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (y.view(b, t, H, C // H).transpose(1, 2) for y in (q, k, v))
            if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2.x, as nanoGPT does
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (C // H) ** -0.5
                y = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1) @ v
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.fc2(F.relu(self.fc1(self.ln2(x))))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f, self.head = nn.LayerNorm(C), nn.Linear(C, V)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    torch.manual_seed(0)
    model = LM()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    data = torch.randint(0, V, (100_000,))

    def step():
        ix = torch.randint(len(data) - T - 1, (B,))
        x = torch.stack([data[i:i + T] for i in ix])
        y = torch.stack([data[i + 1:i + T + 1] for i in ix])
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def torch_train_worker(torch, repetitions, min_time):
    """Tokens/s of PyTorch's step: the best of `repetitions` timings of >= min_time seconds."""
    step = make_train_step(torch)
    for _ in range(3):
        step()  # warm-up: the optimizer's state, the allocator
    best = math.inf
    for _ in range(repetitions):
        n, t0 = 0, time.perf_counter()
        while True:
            step()
            n += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_time:
                break
        best = min(best, elapsed / n)
    return {"train_step": TRAIN["B"] * TRAIN["T"] / best}


def run_train(args, rounds):
    """Best tokens/s of ours (attn-bench train_step) and of PyTorch, each at its best setting."""
    ours, torch_rate = {}, {}
    for round_no in range(1, rounds + 1):
        for t in THREADS:
            print(f"  round {round_no}: attn-bench train_step with OPENBLAS_NUM_THREADS={t} ...",
                  file=sys.stderr)
            for name, r in run_ours(args.bench, t, args.repetitions, args.min_time,
                                    "^train_step/").items():
                rate = TRAIN["B"] * TRAIN["T"] / (r["ms"] * 1e-3)
                ours[str(t)] = max(ours.get(str(t), 0.0), rate)
        for blas_t, intra_t in TORCH_SETTINGS:
            print(f"  round {round_no}: PyTorch train step with OPENBLAS_NUM_THREADS={blas_t}, "
                  f"torch.set_num_threads({intra_t}) ...", file=sys.stderr)
            got = run_torch_worker(blas_t, intra_t, args.repetitions, args.min_time, "train")
            key = f"{blas_t}/{intra_t}"
            torch_rate[key] = max(torch_rate.get(key, 0.0), got["train_step"])
    best_ours = max(ours, key=ours.get)
    best_torch = max(torch_rate, key=torch_rate.get)
    ratio = ours[best_ours] / torch_rate[best_torch]
    print()
    print(f"One training step: B {TRAIN['B']}, T {TRAIN['T']}, C {TRAIN['C']}, H {TRAIN['H']}, "
          f"{TRAIN['L']} layers, V {TRAIN['V']}, AdamW")
    print(f"  ours     {ours[best_ours]:9.0f} tokens/s  (threads {best_ours}; all: "
          + ", ".join(f"{k}: {v:.0f}" for k, v in sorted(ours.items())) + ")")
    print(f"  PyTorch  {torch_rate[best_torch]:9.0f} tokens/s  (threads {best_torch}; all: "
          + ", ".join(f"{k}: {v:.0f}" for k, v in sorted(torch_rate.items())) + ")")
    print(f"  ours / PyTorch: x{ratio:.2f}")
    return dict(ours=ours, torch=torch_rate, ratio=ratio)


# ---------------------------------------------------------------------------------------------


def torch_worker(intra_threads, repetitions, min_time, cases="forward", ops=OPS):
    """Child process: every shape and variant at one setting, as JSON on stdout."""
    import torch
    torch.set_num_threads(intra_threads)
    if cases == "generate":
        json.dump(torch_generate_worker(torch, repetitions), sys.stdout)
        return
    if cases == "train":
        json.dump(torch_train_worker(torch, repetitions, min_time), sys.stdout)
        return
    out = {"gemm_peak": torch_gemm_peak(torch, repetitions)}
    for shape in SHAPES:
        for label, fn in make_torch_fns(torch, *shape, ops).items():
            out[f"{shape_name(shape)} {label}"] = time_torch(torch, fn, repetitions, min_time,
                                                             grad=label.endswith("_fwd_bwd"))
    json.dump(out, sys.stdout)


def run_torch_worker(blas_threads, intra_threads, repetitions, min_time, cases="forward",
                     ops=OPS):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas_threads))
    cmd = [TORCH_PYTHON[0], os.path.abspath(__file__), "--torch-worker", str(intra_threads),
           "--repetitions", str(repetitions), "--min-time", str(min_time),
           "--worker-cases", cases, "--ops", ",".join(ops),
           "--shapes", ",".join("x".join(map(str, s)) for s in SHAPES)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"the PyTorch timing process failed:\n{proc.stderr.strip()}")
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default="build/default/bin/attn-bench",
                        help="the attn-bench binary (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="times the whole sweep runs, best round kept (default: 3)")
    parser.add_argument("--repetitions", type=int, default=5,
                        help="timed repetitions per measurement, median kept (default: 5)")
    parser.add_argument("--min-time", type=float, default=0.2,
                        help="seconds per repetition (default: 0.2)")
    parser.add_argument("--markdown", action="store_true", help="print one markdown table")
    parser.add_argument("--json", metavar="FILE", help="also write every measurement to FILE")
    parser.add_argument("--chapter", default="build/default/bin/12_fast_attention",
                        help="with --cases long: chapter 12's binary (default: %(default)s)")
    parser.add_argument("--long-t", metavar="LIST",
                        help="with --cases long: the lengths (default: 4096,8192,16384,32768)")
    parser.add_argument("--long-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--long-backward", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--long-threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--cases", choices=["all", "forward", "generate", "train", "long"],
                        default="all",
                        help="attention/block forward (and forward+backward, --ops), chapter "
                             "10's generation, chapter 09's training step, or all three "
                             "(default: %(default)s)")
    parser.add_argument("--ops", default=",".join(OPS),
                        help="comma-separated subset of %(default)s (default: all)")
    parser.add_argument("--torch-python", action="append", metavar="PYTHON",
                        help="an interpreter with PyTorch to compare against; give it twice for "
                             "two PyTorch versions, e.g. /usr/bin/python3 (Debian's 1.13) and "
                             "a virtual environment's bin/python (2.x) (default: this one)")
    parser.add_argument("--threads", metavar="LIST",
                        help="thread counts to measure, e.g. 1,2,4,8,16 for a scaling table: ours "
                             "at OPENBLAS_NUM_THREADS=n, PyTorch at OPENBLAS_NUM_THREADS=n with "
                             "torch.set_num_threads(n), the same n on both sides, and a table of "
                             "each case's parallel efficiency t1 / (n tn) (default: 1,2, "
                             "and PyTorch at every pair of them)")
    parser.add_argument("--shapes", metavar="LIST",
                        help="only these (B, T, C, H) shapes of the forward cases, e.g. "
                             "32x128x512x8 (default: all of " +
                             ", ".join("x".join(map(str, s)) for s in SHAPES) + ")")
    parser.add_argument("--baseline", metavar="BENCH",
                        help="another attn-bench, built from an earlier commit: instead of "
                             "PyTorch, time it and --bench in turns (same settings, same "
                             "rounds) and print this / baseline for every benchmark both have")
    parser.add_argument("--torch-worker", type=int, metavar="INTRA", help=argparse.SUPPRESS)
    parser.add_argument("--worker-cases", default="forward", help=argparse.SUPPRESS)
    args = parser.parse_args()
    ops = [op for op in args.ops.split(",") if op]
    unknown = [op for op in ops if op not in OPS]
    if unknown or not ops:
        parser.error(f"--ops: unknown op {', '.join(unknown) or '(none given)'}; "
                     f"known: {', '.join(OPS)}")
    if args.threads:
        try:
            counts = [int(n) for n in args.threads.split(",")]
        except ValueError:
            counts = []
        if not counts or min(counts) < 1 or 1 not in counts:
            parser.error(f"--threads {args.threads}: expected comma-separated counts >= 1 "
                         "that include 1, e.g. 1,2,4,8,16")
        THREADS[:] = sorted(set(counts))
        TORCH_SETTINGS[:] = [(n, n) for n in THREADS]
    if args.shapes:
        try:
            chosen = [tuple(int(n) for n in text.split("x")) for text in args.shapes.split(",")]
        except ValueError:
            chosen = []
        if not chosen or any(s not in SHAPES for s in chosen):
            parser.error(f"--shapes {args.shapes}: expected some of " +
                         ", ".join("x".join(map(str, s)) for s in SHAPES))
        SHAPES[:] = chosen
    if args.long_worker is not None:
        torch_long_worker(args.long_worker, args.long_threads, args.long_backward)
        return 0
    if args.cases == "long":
        if not (os.path.isfile(args.chapter) and os.access(args.chapter, os.X_OK)):
            die(f"{args.chapter}: no such executable; build it first: "
                "cmake --build --preset default --target 12_fast_attention")
        return run_long(args, ops)
    if args.torch_worker is not None:
        torch_worker(args.torch_worker, args.repetitions, args.min_time, args.worker_cases, ops)
        return 0

    if not (os.path.isfile(args.bench) and os.access(args.bench, os.X_OK)):
        die(f"{args.bench}: no such executable; build it first: "
            "cmake --build --preset default --target attn-bench")
    if args.rounds < 1 or args.repetitions < 1 or args.min_time <= 0:
        parser.error("--rounds and --repetitions must be at least 1, --min-time above 0")
    if args.baseline:
        if not (os.path.isfile(args.baseline) and os.access(args.baseline, os.X_OK)):
            die(f"--baseline {args.baseline}: no such executable")
        return before_after(args, ops)
    pythons = args.torch_python or [sys.executable]
    versions = {}
    for py in pythons:
        proc = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            die(f"--torch-python {py}: PyTorch does not import there (Debian's is "
                "/usr/bin/python3 with python3-torch; PyTorch 2.x: a virtual environment)")
        versions[py] = proc.stdout.strip()

    # One whole comparison per PyTorch: ours is measured again beside each, so that every ratio
    # comes from one run, ours and PyTorch taking turns.
    results = {}
    for py in pythons:
        TORCH_PYTHON[0] = py
        print(f"\n=== against PyTorch {versions[py]} ({py}) ===")
        print(f"attn-bench: {args.bench}; PyTorch {versions[py]}; {args.rounds} round(s) of "
              f"{args.repetitions} repetitions of >= {args.min_time} s, median per round, "
              "best round", file=sys.stderr)
        results[versions[py]] = compare(args, ops)
        if args.threads:
            print_scaling(results[versions[py]], versions[py])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


LONG_TS = [4096, 8192, 16384, 32768]


def torch_long_worker(T, threads, backward):
    """One causal MHA forward (+ backward) at length T in PyTorch; prints a JSON line."""
    import resource
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    B, C, H = 1, 512, 8
    hs = C // H

    def run(t):
        x = torch.randn(B, t, C, requires_grad=backward)
        w_qkv = (torch.randn(C, 3 * C) / math.sqrt(C)).requires_grad_(backward)
        w_o = (torch.randn(C, C) / math.sqrt(C)).requires_grad_(backward)
        start, cpu0 = time.perf_counter(), time.process_time()
        with torch.set_grad_enabled(backward):
            q, k, v = (x @ w_qkv).split(C, dim=2)
            q, k, v = (z.view(B, t, H, hs).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            out = y.transpose(1, 2).reshape(B, t, C) @ w_o
            if backward:
                out.backward(torch.randn_like(out))
        return time.perf_counter() - start, time.process_time() - cpu0

    run(256)  # loads the kernels
    wall, cpu = run(T)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"wall": wall, "cpu": cpu, "rss": rss, "version": torch.__version__}))


def ours_long(chapter, T, threads, backward):
    cmd = [chapter, "--long", str(T), "--kernel", "flash", "--timing"] + (
        ["--backward"] if backward else [])
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        die(f"{' '.join(cmd)} exited with {proc.returncode}: {proc.stderr.strip()}")
    row = next(line.split() for line in proc.stdout.splitlines() if line.startswith("flash "))
    rss = next(line for line in proc.stdout.splitlines() if line.startswith("peak resident"))
    value, unit = rss.split(": ")[1].split()
    scale = {"KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}[unit]
    # flash <heap> <unit> <time> s <cpu> s <GFLOP/s> <x floor>
    return {"wall": float(row[3]), "cpu": float(row[5]), "rss": float(value) * scale}


def torch_long(python, T, threads, backward):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    cmd = [python, os.path.abspath(__file__), "--long-worker", str(T), "--long-threads",
           str(threads)]
    if backward:
        cmd.append("--long-backward")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        die(f"{' '.join(cmd)} exited with {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_long(args, ops):
    python = (args.torch_python or [sys.executable])[-1]
    modes = [False] + ([True] if "mha_fwd_bwd" in ops else [])
    ts = [int(t) for t in args.long_t.split(",")] if args.long_t else LONG_TS
    load = os.getloadavg()
    print(f"long context: causal MHA B 1, C 512, H 8, projections included; the same threads "
          f"on each side; load average {load[0]:.2f} at the start")
    print(f"{'case':<20} {'ours wall':>10} {'torch wall':>10} {'ratio':>6} {'ours CPU':>9} "
          f"{'torch CPU':>9} {'ratio':>6} {'ours RSS':>9} {'torch RSS':>9}")
    version = ""
    for threads, backward, T in ((n, b, T) for n in THREADS for b in modes for T in ts):
        best = {}
        for _ in range(args.rounds):  # ours and PyTorch take turns
            for side in ("ours", "torch"):
                r = (ours_long(args.chapter, T, threads, backward) if side == "ours"
                     else torch_long(python, T, threads, backward))
                version = r.get("version", version)
                if side not in best or r["cpu"] < best[side]["cpu"]:
                    best[side] = r
        o, t = best["ours"], best["torch"]
        name = f"{'fwd+bwd' if backward else 'forward'} T={T} {threads}t"
        mib = 1024.0 ** 2
        print(f"{name:<20} {o['wall']:>9.3f}s {t['wall']:>9.3f}s {o['wall'] / t['wall']:>6.2f} "
              f"{o['cpu']:>8.3f}s {t['cpu']:>8.3f}s {o['cpu'] / t['cpu']:>6.2f} "
              f"{o['rss'] / mib:>6.0f}MiB {t['rss'] / mib:>6.0f}MiB", flush=True)
    load = os.getloadavg()
    print(f"PyTorch {version} ({python}); load average {load[0]:.2f} at the end; ratio: ours / "
          "PyTorch (below 1: ours faster); RSS: each process's peak resident memory")
    return 0


def bench_names(bench):
    proc = subprocess.run([bench, "--benchmark_list_tests=true"], capture_output=True, text=True)
    if proc.returncode != 0:
        die(f"{bench} --benchmark_list_tests=true exited with {proc.returncode}")
    return [line.removesuffix("/real_time") for line in proc.stdout.split()]


def before_after(args, ops):
    """--baseline: the benchmarks of --cases that both binaries have, each binary at every thread
    setting, taking turns round by round (baseline, then this), best round kept. Prints
    this / baseline in time: below 1 is faster than before."""
    wanted = {"forward": ops, "train": ["train_step"],
              "generate": ["generate_cached", "generate_uncached", "generate_swa_cached"]}
    kinds = (["gemm_peak"] + wanted["forward"] + wanted["train"] + wanted["generate"]
             if args.cases == "all" else wanted[args.cases])
    shapes = {shape_name(s) for s in SHAPES}
    common = [n for n in bench_names(args.bench) if n in set(bench_names(args.baseline))
              and n.split("/")[0] in kinds
              and (n.split("/")[0] not in OPS or n.split("/")[1] in shapes)]
    if not common:
        die("the two attn-bench binaries have no benchmark of --cases in common")
    pattern = "^(" + "|".join(common) + ")(/real_time)?$"
    best = {}  # (label, threads, name) -> best ms
    for round_no in range(1, args.rounds + 1):
        for t in THREADS:
            for label, bench in (("baseline", args.baseline), ("this", args.bench)):
                print(f"  round {round_no}: {label} ({bench}) with OPENBLAS_NUM_THREADS={t} ...",
                      file=sys.stderr)
                for name, got in run_ours(bench, t, args.repetitions, args.min_time,
                                          pattern).items():
                    key = (label, t, name)
                    best[key] = min(best.get(key, math.inf), got["ms"])
    print(f"\nthis: {args.bench}\nbaseline: {args.baseline}\n{args.rounds} round(s) taking "
          f"turns, median of {args.repetitions} repetitions per round, best round kept")
    print(f"\n| benchmark | threads | baseline ms | this ms | this / baseline |")
    print("| --- | ---: | ---: | ---: | ---: |")
    ratios = []
    for name in common:
        for t in THREADS:
            before, after = best[("baseline", t, name)], best[("this", t, name)]
            ratios.append(after / before)
            print(f"| {name} | {t} | {before:.3f} | {after:.3f} | {after / before:.3f} |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\ngeometric mean of this / baseline over {len(ratios)} rows: {geo:.3f}; "
          f"worst {max(ratios):.3f}, best {min(ratios):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{label} {t} {name}": ms for (label, t, name), ms in best.items()},
                      f, indent=1)
    return 0


def print_scaling(result, version):
    """With --threads: each measured case's time at every thread count n, and its parallel
    efficiency t1 / (n * tn) (1.0: n threads are n times as fast as one), ours and PyTorch's."""
    lines = []

    def line(case, ours_t, torch_t):  # {n: seconds (or ms)} for each side
        cells = []
        for n in THREADS:
            cells.append(f"{n}: {ours_t[n]:.3f} / {torch_t[n]:.3f} ms "
                         f"(eff {ours_t[1] / (n * ours_t[n]):.2f} / "
                         f"{torch_t[1] / (n * torch_t[n]):.2f})")
        lines.append(f"  {case:34} " + "; ".join(cells))

    for r in result.get("rows") or []:
        if r["op"] in ("mha_forward", "block_fwd_bwd"):
            line(f"{r['op']} {shape_name(r['shape'])}", r["ours_ms_by_threads"],
                 {n: r["torch_ms_by_threads"][f"{n}/{n}"] for n in THREADS})
    train = result.get("training")
    if train:
        tokens = TRAIN["B"] * TRAIN["T"]
        line("train_step (CPU model)", {n: tokens / train["ours"][str(n)] * 1e3 for n in THREADS},
             {n: tokens / train["torch"][f"{n}/{n}"] * 1e3 for n in THREADS})
    if lines:
        print()
        print(f"Thread scaling against PyTorch {version}: threads: ours / PyTorch ms "
              "(efficiency t1 / (n tn), ours / PyTorch)")
        print("\n".join(lines))


def compare(args, ops):
    """Every case of --cases against the PyTorch of TORCH_PYTHON; prints the tables and returns
    the measurements."""
    if args.cases == "train":
        return dict(training=run_train(args, args.rounds))

    generation = None
    if args.cases in ("all", "generate"):
        generation = run_generate(args, args.rounds)
        if args.cases == "generate":
            return dict(generation=generation)

    ours = {t: {} for t in THREADS}  # threads -> benchmark name -> best {"ms", "gflops"}
    torch_ms, torch_cpu, torch_peak = {}, {}, {}
    ours_cpu = {}  # benchmark name -> best CPU time at 1 thread (all the work is on that thread)
    for round_no in range(1, args.rounds + 1):
        # 1. Ours at each thread setting.
        for t in THREADS:
            print(f"  round {round_no}: attn-bench with OPENBLAS_NUM_THREADS={t} ...",
                  file=sys.stderr)
            for name, got in run_ours(args.bench, t, args.repetitions, args.min_time,
                                      f"^(gemm_peak/|({'|'.join(ops)})/"
                                      f"({'|'.join(shape_name(s) for s in SHAPES)})/)").items():
                best = ours[t].get(name)
                # The peak keeps its highest rate, everything else its lowest time.
                better = (best is None or (got["gflops"] > best["gflops"]
                                           if name.startswith("gemm_peak/")
                                           else got["ms"] < best["ms"]))
                if better:
                    ours[t][name] = got
                if t == 1:
                    ours_cpu[name] = min(ours_cpu.get(name, math.inf), got["cpu_ms"])
        # 2. PyTorch: one child process per (OpenBLAS threads, intra-op threads) setting.
        for blas_t, intra_t in TORCH_SETTINGS:
            print(f"  round {round_no}: PyTorch with OPENBLAS_NUM_THREADS={blas_t}, "
                  f"torch.set_num_threads({intra_t}) ...", file=sys.stderr)
            got = run_torch_worker(blas_t, intra_t, args.repetitions, args.min_time, "forward",
                                   ops)
            peak_now = got.pop("gemm_peak")
            torch_peak[(blas_t, intra_t)] = max(torch_peak.get((blas_t, intra_t), 0.0), peak_now)
            for key, (ms, cpu_ms) in got.items():
                shape_text, label = key.split(" ", 1)
                shape = tuple(int(n) for n in shape_text.split("_"))
                k = (shape, label, (blas_t, intra_t))
                torch_ms[k] = min(torch_ms.get(k, math.inf), ms)
                torch_cpu[k] = min(torch_cpu.get(k, math.inf), cpu_ms)

    peak_name = next((n for n in ours[THREADS[0]] if n.startswith("gemm_peak/")), None)
    if peak_name is None:
        die("attn-bench reported no gemm_peak benchmark")
    peak_by_threads = {t: ours[t][peak_name]["gflops"] for t in THREADS}
    peak = max(peak_by_threads.values())

    # 3. The table.
    rows = []
    for shape in SHAPES:
        for op in ops:
            flops = FLOPS[op]
            name = f"{op}/{shape_name(shape)}"
            best_t = min(THREADS, key=lambda t: ours[t][name]["ms"])
            ms = ours[best_t][name]["ms"]
            t_best = min(TORCH_SETTINGS, key=lambda t: torch_ms[(shape, op, t)])
            tms = torch_ms[(shape, op, t_best)]
            gflops = flops(*shape) / (ms * 1e-3) * 1e-9
            rows.append(dict(shape=shape, op=op, ours_ms=ms, ours_threads=best_t,
                             ours_ms_by_threads={t: ours[t][name]["ms"] for t in THREADS},
                             torch_ms=tms, torch_threads=f"{t_best[0]}/{t_best[1]}",
                             torch_ms_by_threads={f"{t[0]}/{t[1]}": torch_ms[(shape, op, t)]
                                                  for t in TORCH_SETTINGS},
                             ratio=ms / tms, gflops=gflops, peak_fraction=gflops / peak,
                             cpu1_ratio=ours_cpu[name] / torch_cpu[(shape, op, (1, 1))]))
    extras = []
    for shape in SHAPES:
        for label in (MODULES[op] for op in MODULES if op in ops):
            t_best = min(TORCH_SETTINGS, key=lambda t: torch_ms[(shape, label, t)])
            extras.append(dict(shape=shape, op=label, torch_ms=torch_ms[(shape, label, t_best)],
                               torch_threads=f"{t_best[0]}/{t_best[1]}"))

    peak_text = ", ".join(f"{peak_by_threads[t]:.1f} at {t} thread(s)" for t in THREADS)
    torch_peak_text = ", ".join(f"{v:.1f} at {b}/{i}" for (b, i), v in torch_peak.items())
    print(f"SGEMM 2048^3 peak (attn-bench gemm_peak): {peak_text} GFLOP/s -> peak {peak:.1f}")
    print(f"PyTorch 2048^3 matmul (BLAS/intra-op threads): {torch_peak_text} GFLOP/s")
    if args.markdown:
        print()
        print("| shape (B, T, C, H) | op | ours ms (BLAS threads) | PyTorch ms (threads) "
              "| ours / PyTorch | ours GFLOP/s | fraction of peak | 1-thread CPU ratio |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            print(f"| ({', '.join(map(str, r['shape']))}) | {r['op']} | {r['ours_ms']:.3f} "
                  f"({r['ours_threads']}) | {r['torch_ms']:.3f} ({r['torch_threads']}) | "
                  f"{r['ratio']:.2f} | {r['gflops']:.1f} | {r['peak_fraction']:.2f} | "
                  f"{r['cpu1_ratio']:.2f} |")
        print()
        print("| shape (B, T, C, H) | PyTorch module (biases, not the same math) | ms (threads) |")
        print("| --- | --- | ---: |")
        for e in extras:
            print(f"| ({', '.join(map(str, e['shape']))}) | {e['op']} | {e['torch_ms']:.3f} "
                  f"({e['torch_threads']}) |")
    else:
        for shape in SHAPES:
            print()
            print(f"(B, T, C, H) = {shape}")
            print(f"  {'':28} {'ours ms (n)':>14} {'PyTorch ms (b/i)':>18} {'ours/PT':>8} "
                  f"{'GFLOP/s':>8} {'of peak':>8} {'CPU1 o/PT':>9}")
            for r in rows:
                if r["shape"] != shape:
                    continue
                print(f"  {r['op']:28} {r['ours_ms']:10.3f} ({r['ours_threads']}) "
                      f"{r['torch_ms']:12.3f} ({r['torch_threads']}) {r['ratio']:8.2f} "
                      f"{r['gflops']:8.1f} {r['peak_fraction']:8.2f} {r['cpu1_ratio']:9.2f}")
            for e in extras:
                if e["shape"] == shape:
                    print(f"  {e['op']:28} {'':14} {e['torch_ms']:12.3f} ({e['torch_threads']})"
                          f"   (PyTorch module, with biases)")
        print()
        print("(n) = OPENBLAS_NUM_THREADS for ours (the library's thread count); (b/i) = "
              "OPENBLAS_NUM_THREADS / torch.set_num_threads for PyTorch; the fastest setting is "
              f"kept, and the best of {args.rounds} round(s). CPU1 o/PT = ours / PyTorch in "
              "CPU time on one thread (1 and 1/1): what other programs on the machine change "
              "least.")
    return dict(peak_by_threads=peak_by_threads,
                torch_peak={f"{b}/{i}": v for (b, i), v in torch_peak.items()}, rows=rows,
                extras=extras, ours_raw={str(t): ours[t] for t in THREADS}, generation=generation)


if __name__ == "__main__":
    sys.exit(main())
