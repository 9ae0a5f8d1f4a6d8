#!/usr/bin/python3
"""tests/golden/make_fixtures.py: the PyTorch side of the golden tests (chapters 03-08).

Writes tests/golden/cases/<name>/{case.txt, *.npy}: small inputs, weights and the outputs PyTorch
computes from them, in float32; the backward cases (chapter 08) add grad.<name>.npy, the upstream
gradient of the output and the gradients autograd computes (in float64) for every input and
weight. `attn-golden` (tools/golden.cpp) recomputes every output with the
C++ library and compares. Only needed to regenerate the committed files:

    /usr/bin/python3 tests/golden/make_fixtures.py

Needs numpy and torch (Debian: python3-numpy, python3-torch). Deterministic: every case has its
own seed and torch runs on one thread, so a re-run rewrites byte-identical files.
"""

import math
import shutil
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent / "cases"
EPS = 1e-5  # LayerNorm epsilon of every block and of the model


# ---------------------------------------------------------------------------------------------
# The reference computations, written with torch's own ops. Shapes: B batch, T time, C channels,
# H heads, hs head size, V vocabulary, F FFN width. Linear maps are y = x @ W, W of shape (in, out).

def causal_fill(scores):
    """(..., T, T) -> scores with -inf above the diagonal (query t sees keys 0..t)."""
    T = scores.shape[-1]
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
    return scores.masked_fill(~allowed, float("-inf"))


def sdpa(q, k, v, causal):
    """q, k, v (B, H, T, hs) -> out (B, H, T, hs), weights (B, H, T, T)."""
    hs = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(hs)  # (B, H, T, T)
    if causal:
        scores = causal_fill(scores)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def mha(x, w, n_heads, causal):
    """x (B, T, C) -> out (B, T, C), weights (B, H, T, T). No biases."""
    B, T, C = x.shape
    hs = C // n_heads

    def heads(y):  # (B, T, C) -> (B, H, T, hs)
        return y.view(B, T, n_heads, hs).transpose(1, 2)

    q, k, v = heads(x @ w["w_q"]), heads(x @ w["w_k"]), heads(x @ w["w_v"])
    out, weights = sdpa(q, k, v, causal)
    out = out.transpose(1, 2).contiguous().view(B, T, C)  # merge heads
    return out @ w["w_o"], weights


def layer_norm(x, gamma, beta, eps):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def activate(h, activation):
    if activation == "relu":
        return F.relu(h)
    if activation == "gelu":
        return F.gelu(h, approximate="none")
    if activation == "gelu_tanh":
        return F.gelu(h, approximate="tanh")
    raise ValueError(activation)


def ffn(x, w, activation):
    """act(x @ w1 + b1) @ w2 + b2."""
    return activate(x @ w["w1"] + w["b1"], activation) @ w["w2"] + w["b2"]


def block(x, w, n_heads, causal, norm, activation, eps, use_layer_norm=True):
    def ln(x, i):  # LayerNorm i, or the identity when the block has none
        if not use_layer_norm:
            return x
        return layer_norm(x, w[f"ln{i}_gamma"], w[f"ln{i}_beta"], eps)

    if norm == "pre":  # GPT-2
        x = x + mha(ln(x, 1), w, n_heads, causal)[0]
        return x + ffn(ln(x, 2), w, activation)
    # post-norm, the original Transformer
    x = ln(x + mha(x, w, n_heads, causal)[0], 1)
    return ln(x + ffn(x, w, activation), 2)


def lm(tokens, w, n_layers, n_heads):
    """tokens (B, T) -> logits (B, T, V): pre-norm, causal, exact GELU, tied output projection."""
    T = tokens.shape[1]
    x = w["wte"][tokens] + w["wpe"][:T]  # (B, T, C)
    for i in range(n_layers):
        layer = {k[len(f"h{i}."):]: v for k, v in w.items() if k.startswith(f"h{i}.")}
        x = block(x, layer, n_heads, True, "pre", "gelu", EPS)
    x = layer_norm(x, w["ln_f_gamma"], w["ln_f_beta"], EPS)
    return x @ w["wte"].T


# ---------------------------------------------------------------------------------------------
# Random inputs and weights, at scales that keep every output non-trivial.

def randn(*shape, std=1.0):
    return torch.randn(*shape) * std


def mha_weights(C):
    # std 1/sqrt(C): q.k / sqrt(hs) is then of order 1, so the attention weights are far from
    # uniform and far from one-hot.
    return {name: randn(C, C, std=1.0 / math.sqrt(C)) for name in ("w_q", "w_k", "w_v", "w_o")}


def ln_weights(C, prefix):
    return {f"{prefix}_gamma": 1.0 + randn(C, std=0.1), f"{prefix}_beta": randn(C, std=0.1)}


def ffn_weights(C, Fw):
    return {"w1": randn(C, Fw, std=1.0 / math.sqrt(C)), "b1": randn(Fw, std=0.1),
            "w2": randn(Fw, C, std=1.0 / math.sqrt(Fw)), "b2": randn(C, std=0.1)}


def block_weights(C, Fw):
    w = mha_weights(C)
    w.update(ln_weights(C, "ln1"))
    w.update(ln_weights(C, "ln2"))
    w.update(ffn_weights(C, Fw))
    return w


# ---------------------------------------------------------------------------------------------
# Writing a case.

def write_case(name, about, op, keys, arrays):
    """cases/<name>/case.txt (a comment, `op`, then `key value` lines) and one .npy per array."""
    folder = ROOT / name
    folder.mkdir(parents=True)
    lines = [f"# {about}", f"op {op}"] + [f"{k} {v}" for k, v in keys.items()]
    (folder / "case.txt").write_text("\n".join(lines) + "\n")
    for file_name, value in arrays.items():
        array = value.detach().numpy()
        if array.dtype != np.int64:
            array = array.astype(np.float32)
        np.save(folder / f"{file_name}.npy", array)


def case_softmax(name, about, shape, scale=1.0):
    x = randn(*shape, std=scale)
    write_case(name, about, "softmax", {}, {"x": x, "y": torch.softmax(x, dim=-1)})


def case_masked_softmax(name, about, shape, causal, scale=1.0):
    x = randn(*shape, std=scale)
    y = torch.softmax(causal_fill(x) if causal else x, dim=-1)
    write_case(name, about, "masked_softmax", {"causal": int(causal)}, {"x": x, "y": y})


def case_sdpa(name, about, B, H, T, hs, causal):
    q, k, v = randn(B, H, T, hs), randn(B, H, T, hs), randn(B, H, T, hs)
    out, weights = sdpa(q, k, v, causal)
    write_case(name, about, "sdpa", {"causal": int(causal)},
               {"q": q, "k": k, "v": v, "out": out, "weights": weights})


def case_mha(name, about, B, T, C, H, causal):
    x, w = randn(B, T, C), mha_weights(C)
    out, weights = mha(x, w, H, causal)
    write_case(name, about, "mha", {"n_heads": H, "causal": int(causal)},
               {"x": x, **w, "out": out, "weights": weights})


def case_layernorm(name, about, shape, eps=EPS, offset=0.0, scale=1.0, values=None):
    C = shape[-1]
    x = randn(*shape, std=scale) + offset if values is None else torch.tensor(values).view(shape)
    w = ln_weights(C, "ln")
    gamma, beta = w["ln_gamma"], w["ln_beta"]
    write_case(name, about, "layernorm", {"eps": repr(eps)},
               {"x": x, "gamma": gamma, "beta": beta, "y": layer_norm(x, gamma, beta, eps)})


def case_ffn(name, about, B, T, C, Fw, activation):
    x, w = randn(B, T, C), ffn_weights(C, Fw)
    write_case(name, about, "ffn", {"activation": activation},
               {"x": x, **w, "y": ffn(x, w, activation)})


def case_block(name, about, B, T, C, H, causal, norm, activation, eps=EPS):
    x, w = randn(B, T, C), block_weights(C, 4 * C)
    y = block(x, w, H, causal, norm, activation, eps)
    write_case(name, about, "block",
               {"n_heads": H, "causal": int(causal), "norm": norm, "activation": activation,
                "eps": repr(eps)},
               {"x": x, **w, "y": y})


def case_lm(name, about, B, T, V, T_max, C, H, L):
    tokens = torch.randint(0, V, (B, T), dtype=torch.int64)
    w = {"wte": randn(V, C, std=0.5), "wpe": randn(T_max, C, std=0.5)}
    for i in range(L):
        w.update({f"h{i}.{k}": v for k, v in block_weights(C, 4 * C).items()})
    w.update({"ln_f_gamma": 1.0 + randn(C, std=0.1), "ln_f_beta": randn(C, std=0.1)})
    write_case(name, about, "lm", {"n_layers": L, "n_heads": H},
               {"tokens": tokens, **w, "logits": lm(tokens, w, L, H)})


# ---------------------------------------------------------------------------------------------
# Backward cases (chapter 08). grad.NAME.npy is dloss/dNAME. For the op's output (y, out) it is an
# input of the case: the upstream gradient, random. For the op's inputs and parameters it is the
# reference autograd computes from it. References are computed in float64 from the same float32
# inputs and rounded once to float32, so they carry no float32 accumulation error of their own.

def with_grads(name, about, op, keys, leaves, forward, upstream, dy_scale=1.0, extra=None):
    """leaves: float32 inputs and parameters that get a gradient. forward(**leaves) -> dict of
    outputs. `upstream` names the output that receives a random upstream gradient (std dy_scale),
    or is None when forward returns a scalar "loss" (the backward starts from dloss/dloss = 1)."""
    extra = extra or {}
    leaves64 = {k: v.double().requires_grad_() for k, v in leaves.items()}
    outputs = forward(**leaves64)
    arrays = {**leaves, **extra, **{k: v.detach() for k, v in outputs.items()}}
    if upstream is None:
        outputs["loss"].backward()
    else:
        dy = randn(*outputs[upstream].shape, std=dy_scale)  # float32 values
        outputs[upstream].backward(dy.double())
        arrays[f"grad.{upstream}"] = dy
    for k, v in leaves64.items():
        arrays[f"grad.{k}"] = v.grad
    write_case(name, about, op, keys, arrays)


def case_softmax_grad(name, about, shape, scale=1.0, dy_scale=1.0):
    with_grads(name, about, "softmax", {}, {"x": randn(*shape, std=scale)},
               lambda x: {"y": torch.softmax(x, dim=-1)}, "y", dy_scale)


def case_masked_softmax_grad(name, about, shape, causal, scale=1.0):
    def forward(x):
        return {"y": torch.softmax(causal_fill(x) if causal else x, dim=-1)}
    with_grads(name, about, "masked_softmax", {"causal": int(causal)},
               {"x": randn(*shape, std=scale)}, forward, "y")


def case_sdpa_grad(name, about, B, H, T, hs, causal, scale=1.0):
    leaves = {n: randn(B, H, T, hs, std=scale) for n in ("q", "k", "v")}

    def forward(q, k, v):
        out, weights = sdpa(q, k, v, causal)
        return {"out": out, "weights": weights}
    with_grads(name, about, "sdpa", {"causal": int(causal)}, leaves, forward, "out")


def case_mha_grad(name, about, B, T, C, H, causal):
    leaves = {"x": randn(B, T, C), **mha_weights(C)}

    def forward(x, **w):
        out, weights = mha(x, w, H, causal)
        return {"out": out, "weights": weights}
    with_grads(name, about, "mha", {"n_heads": H, "causal": int(causal)}, leaves, forward, "out")


def case_layernorm_grad(name, about, shape, eps=EPS, offset=0.0, scale=1.0, values=None):
    C = shape[-1]
    x = randn(*shape, std=scale) + offset if values is None else torch.tensor(values).view(shape)
    w = ln_weights(C, "ln")
    leaves = {"x": x, "gamma": w["ln_gamma"], "beta": w["ln_beta"]}
    with_grads(name, about, "layernorm", {"eps": repr(eps)}, leaves,
               lambda x, gamma, beta: {"y": layer_norm(x, gamma, beta, eps)}, "y")


def case_ffn_grad(name, about, B, T, C, Fw, activation, scale=1.0):
    leaves = {"x": randn(B, T, C, std=scale), **ffn_weights(C, Fw)}
    with_grads(name, about, "ffn", {"activation": activation}, leaves,
               lambda x, **w: {"y": ffn(x, w, activation)}, "y")


def case_block_grad(name, about, B, T, C, H, causal, norm, activation, eps=EPS,
                    use_layer_norm=True):
    w = block_weights(C, 4 * C)
    if not use_layer_norm:  # a block without LayerNorm has no ln weights at all
        w = {k: v for k, v in w.items() if not k.startswith("ln")}
    leaves = {"x": randn(B, T, C), **w}
    keys = {"n_heads": H, "causal": int(causal), "norm": norm, "activation": activation,
            "eps": repr(eps), "layer_norm": int(use_layer_norm)}
    with_grads(name, about, "block", keys, leaves,
               lambda x, **w: {"y": block(x, w, H, causal, norm, activation, eps,
                                          use_layer_norm)}, "y")


def case_cross_entropy(name, about, N, V, scale=1.0):
    logits = randn(N, V, std=scale)
    targets = torch.randint(0, V, (N,), dtype=torch.int64)
    with_grads(name, about, "cross_entropy", {}, {"logits": logits},
               lambda logits: {"loss": F.cross_entropy(logits, targets)}, None,
               extra={"targets": targets})


def case_lm_grad(name, about, B, T, V, T_max, C, H, L):
    """An lm case with targets: the loss (mean cross-entropy) and the gradient of every weight."""
    tokens = torch.randint(0, V, (B, T), dtype=torch.int64)
    targets = torch.randint(0, V, (B, T), dtype=torch.int64)
    w = {"wte": randn(V, C, std=0.5), "wpe": randn(T_max, C, std=0.5)}
    for i in range(L):
        w.update({f"h{i}.{k}": v for k, v in block_weights(C, 4 * C).items()})
    w.update({"ln_f_gamma": 1.0 + randn(C, std=0.1), "ln_f_beta": randn(C, std=0.1)})

    def forward(**w):
        logits = lm(tokens, w, L, H)  # (B, T, V)
        return {"logits": logits, "loss": F.cross_entropy(logits.view(B * T, V), targets.view(-1))}
    with_grads(name, about, "lm", {"n_layers": L, "n_heads": H}, w, forward, None,
               extra={"tokens": tokens, "targets": targets})


def case_train(name, about, B, T, V, T_max, C, H, L, steps, lr, weight_decay, grad_clip,
               beta1=0.9, beta2=0.999, adam_eps=1e-8):
    """`steps` AdamW steps of the `lm` model, like chapter 09's training step: the loss of every
    step before its update. torch.optim.AdamW with two groups: matrices and embeddings decayed,
    vectors (LayerNorm gains and biases, FFN biases) not; clip_grad_norm_ when grad_clip > 0."""
    w = {"wte": randn(V, C, std=0.3), "wpe": randn(T_max, C, std=0.3)}
    for i in range(L):
        w.update({f"h{i}.{k}": v for k, v in block_weights(C, 4 * C).items()})
    w.update({"ln_f_gamma": 1.0 + randn(C, std=0.1), "ln_f_beta": randn(C, std=0.1)})
    # A text with structure to learn: a repeating cycle of the vocabulary with a few random
    # characters, cut into windows at random places.
    stream = torch.arange(0, 4 * V * (T + 1)) % V
    noise = torch.rand(stream.shape) < 0.1
    stream = torch.where(noise, torch.randint(0, V, stream.shape), stream)
    starts = torch.randint(0, stream.numel() - T - 1, (steps, B))
    batches = torch.stack([torch.stack([stream[s:s + T + 1] for s in row]) for row in starts])
    params = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(beta1, beta2), eps=adam_eps)
    losses = []
    for s in range(steps):
        x, y = batches[s, :, :T], batches[s, :, 1:]
        loss = F.cross_entropy(lm(x, params, L, H).reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(list(params.values()), grad_clip)
        opt.step()
        losses.append(loss.item())
    keys = {"n_layers": L, "n_heads": H, "lr": lr, "beta1": beta1, "beta2": beta2,
            "adam_eps": adam_eps, "weight_decay": weight_decay, "grad_clip": grad_clip}
    write_case(name, about, "train", keys,
               {**w, "batches": batches, "losses": torch.tensor(losses, dtype=torch.float32)})


# ---------------------------------------------------------------------------------------------
# Chapter 11's ops: RoPE, RMSNorm, SwiGLU, grouped-query and sliding-window attention, written the
# way their reference implementations write them (Meta's Llama for RoPE, RMSNorm and SwiGLU,
# Hugging Face's repeat_kv for GQA). Every case is computed in float64 from the float32 inputs;
# `grads` adds the backward (grad.NAME.npy) like the chapter-08 cases.

def rope(x, theta, offset):
    """x (B, H, T, hs) -> pair (x[2i], x[2i+1]) of row t rotated by (offset + t) theta^(-2i/hs):
    Llama's complex-number form (precompute_freqs_cis, view_as_complex)."""
    T, hs = x.shape[-2], x.shape[-1]
    freqs = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64)[: hs // 2] / hs))
    angles = torch.outer(torch.arange(offset, offset + T, dtype=torch.float64), freqs)  # (T, hs/2)
    cis = torch.polar(torch.ones_like(angles), angles)
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], hs // 2, 2).contiguous())
    return torch.view_as_real(xc * cis).flatten(-2)


def rms_norm(x, gamma, eps):
    """Llama's RMSNorm: x * rsqrt(mean(x^2) + eps) * gamma over the last axis."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma


def swiglu(x, w):
    """(silu(x @ w_gate) * (x @ w_up)) @ w_down, no biases."""
    return (F.silu(x @ w["w_gate"]) * (x @ w["w_up"])) @ w["w_down"]


def band_attention(q, k, v, causal, window):
    """q, k, v (B, H, T, hs); query t sees key s when (not causal or s <= t) and (window 0 or
    s > t - window)."""
    T, hs = q.shape[-2], q.shape[-1]
    t = torch.arange(T)[:, None]
    s = torch.arange(T)[None, :]
    allowed = torch.ones(T, T, dtype=torch.bool)
    if causal:
        allowed &= s <= t
    if window:
        allowed &= s > t - window
    scores = (q @ k.transpose(-2, -1) / math.sqrt(hs)).masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def alibi_slopes(n):
    """ALiBi's head slopes, as the paper's reference code computes them (Press et al. 2022)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]


def alibi_attention(q, k, v, window):
    """Causal attention with ALiBi's bias -m_h (t - s) added to every score (and a window)."""
    B, H, T, hs = q.shape
    t = torch.arange(T)[:, None]
    s = torch.arange(T)[None, :]
    allowed = s <= t
    if window:
        allowed &= s > t - window
    m = torch.tensor(alibi_slopes(H), dtype=q.dtype).view(1, H, 1, 1)
    bias = -m * (t - s).to(q.dtype)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(hs) + bias).masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def gqa(x, w, n_heads, n_kv_heads, causal, use_rope, theta, window):
    """x (B, T, C) -> out (B, T, C), weights (B, H, T, T); query head h reads K/V head
    h // (H / KV) (Hugging Face's repeat_kv)."""
    B, T, C = x.shape
    hs = C // n_heads
    q = (x @ w["w_q"]).view(B, T, n_heads, hs).transpose(1, 2)
    k = (x @ w["w_k"]).view(B, T, n_kv_heads, hs).transpose(1, 2)
    v = (x @ w["w_v"]).view(B, T, n_kv_heads, hs).transpose(1, 2)
    if use_rope:
        q, k = rope(q, theta, 0), rope(k, theta, 0)
    rep = n_heads // n_kv_heads
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    out, weights = band_attention(q, k, v, causal, window)
    return out.transpose(1, 2).contiguous().view(B, T, C) @ w["w_o"], weights


def modern_case(name, about, op, keys, leaves, forward, upstream, grads):
    """A forward case (outputs only) or, with grads, a backward case; float64 either way."""
    if grads:
        with_grads(name, about, op, keys, leaves, forward, upstream)
        return
    outputs = forward(**{k: v.double() for k, v in leaves.items()})
    write_case(name, about, op, keys, {**leaves, **{k: v.detach() for k, v in outputs.items()}})


def case_rope(name, about, B, H, T, hs, theta=10000.0, offset=0, grads=True, write_keys=True):
    keys = {"theta": repr(theta), "offset": offset} if write_keys else {}
    modern_case(name, about, "rope", keys, {"x": randn(B, H, T, hs)},
                lambda x: {"y": rope(x, theta, offset)}, "y", grads)


def case_rmsnorm(name, about, shape, eps=EPS, scale=1.0, grads=True):
    C = shape[-1]
    leaves = {"x": randn(*shape, std=scale), "gamma": 1.0 + randn(C, std=0.1)}
    modern_case(name, about, "rmsnorm", {"eps": repr(eps)}, leaves,
                lambda x, gamma: {"y": rms_norm(x, gamma, eps)}, "y", grads)


def case_swiglu(name, about, B, T, C, Fw, scale=1.0, grads=True):
    leaves = {"x": randn(B, T, C, std=scale), "w_gate": randn(C, Fw, std=1.0 / math.sqrt(C)),
              "w_up": randn(C, Fw, std=1.0 / math.sqrt(C)),
              "w_down": randn(Fw, C, std=1.0 / math.sqrt(Fw))}
    modern_case(name, about, "swiglu", {}, leaves, lambda x, **w: {"y": swiglu(x, w)}, "y", grads)


def case_gqa(name, about, B, T, C, H, KV, causal=True, use_rope=False, theta=10000.0, window=0,
             grads=True, optional_keys=True):
    hs = C // H
    std = 1.0 / math.sqrt(C)
    leaves = {"x": randn(B, T, C), "w_q": randn(C, C, std=std), "w_k": randn(C, KV * hs, std=std),
              "w_v": randn(C, KV * hs, std=std), "w_o": randn(C, C, std=std)}
    keys = {"n_heads": H, "n_kv_heads": KV, "causal": int(causal)}
    if optional_keys:  # else rope, theta and window take their defaults: 0, 10000, 0
        keys["rope"] = int(use_rope)
        if use_rope:
            keys["theta"] = repr(theta)
        keys["window"] = window

    def forward(x, **w):
        out, weights = gqa(x, w, H, KV, causal, use_rope, theta, window)
        return {"out": out, "weights": weights}
    modern_case(name, about, "gqa", keys, leaves, forward, "out", grads)


def case_swa(name, about, B, H, T, hs, window, scale=1.0, grads=True):
    leaves = {n: randn(B, H, T, hs, std=scale) for n in ("q", "k", "v")}

    def forward(q, k, v):
        out, weights = band_attention(q, k, v, True, window)
        return {"out": out, "weights": weights}
    modern_case(name, about, "swa", {"window": window}, leaves, forward, "out", grads)


def case_alibi(name, about, B, H, T, hs, window=0, scale=1.0, grads=True, write_window=True):
    leaves = {n: randn(B, H, T, hs, std=scale) for n in ("q", "k", "v")}
    keys = {"causal": 1}
    if write_window:
        keys["window"] = window

    def forward(q, k, v):
        out, weights = alibi_attention(q, k, v, window)
        return {"out": out, "weights": weights}
    modern_case(name, about, "alibi", keys, leaves, forward, "out", grads)


# Every case: (function, name, description, arguments). Each gets its own seed, its index, so
# adding a case at the end changes no other file.
CASES = [
    (case_softmax, "softmax_rows", "softmax over the rows of a (4, 7) matrix", dict(shape=(4, 7))),
    (case_softmax, "softmax_large_logits", "logits of order 100: the max shift keeps exp finite",
     dict(shape=(3, 10), scale=100.0)),
    (case_softmax, "softmax_3d", "softmax over the last axis of a (2, 3, 5) tensor",
     dict(shape=(2, 3, 5))),
    (case_softmax, "softmax_4d", "softmax over the last axis of a (2, 2, 3, 4) tensor",
     dict(shape=(2, 2, 3, 4))),
    (case_softmax, "softmax_one_column", "a last axis of length 1: every weight is 1",
     dict(shape=(5, 1))),
    (case_masked_softmax, "masked_softmax_T7", "causal softmax of (2, 7, 7) scores",
     dict(shape=(2, 7, 7), causal=True)),
    (case_masked_softmax, "masked_softmax_4d_T10", "causal softmax of (2, 3, 10, 10) scores x10",
     dict(shape=(2, 3, 10, 10), causal=True, scale=10.0)),
    (case_masked_softmax, "masked_softmax_T1", "T = 1: the only key is the query itself",
     dict(shape=(1, 1, 1, 1), causal=True)),
    (case_masked_softmax, "masked_softmax_2d", "one (5, 5) score matrix, causal",
     dict(shape=(5, 5), causal=True)),
    (case_masked_softmax, "masked_softmax_not_causal", "causal 0: a plain softmax",
     dict(shape=(2, 6, 6), causal=False)),
    (case_sdpa, "sdpa_causal", "B 2, H 2, T 5, hs 4, causal", dict(B=2, H=2, T=5, hs=4, causal=True)),
    (case_sdpa, "sdpa_not_causal_T7", "B 1, H 3, T 7, hs 8, every key visible",
     dict(B=1, H=3, T=7, hs=8, causal=False)),
    (case_sdpa, "sdpa_T1", "T = 1", dict(B=2, H=1, T=1, hs=4, causal=True)),
    (case_sdpa, "sdpa_hs1", "head size 1", dict(B=1, H=2, T=6, hs=1, causal=True)),
    (case_mha, "mha_causal", "B 2, T 5, C 8, H 2, causal", dict(B=2, T=5, C=8, H=2, causal=True)),
    (case_mha, "mha_odd", "B 1, T 7, C 12, H 3 (hs 3), not causal",
     dict(B=1, T=7, C=12, H=3, causal=False)),
    (case_mha, "mha_one_head", "H = 1: hs = C = 6", dict(B=2, T=4, C=6, H=1, causal=True)),
    (case_mha, "mha_hs1", "H = C = 4: head size 1, T = 10", dict(B=1, T=10, C=4, H=4, causal=True)),
    (case_mha, "mha_T1", "T = 1, B = 3", dict(B=3, T=1, C=8, H=2, causal=True)),
    (case_layernorm, "layernorm_3d", "(2, 5, 8), eps 1e-5", dict(shape=(2, 5, 8))),
    (case_layernorm, "layernorm_offset_1e3",
     "inputs around 1000 with std 5: the mean must be removed before the variance",
     dict(shape=(3, 6), offset=1000.0, scale=5.0)),
    (case_layernorm, "layernorm_eps_1e-3", "(4, 16) with eps 1e-3 and small inputs",
     dict(shape=(4, 16), eps=1e-3, scale=0.05)),
    # Dyadic inputs: for a constant row PyTorch's float32 mean is exact only when x is (for
    # x = 1000 it is off by ~2e-3 after the 1/sqrt(eps) scaling), and the reference must be exact.
    (case_layernorm, "layernorm_one_feature", "C = 1: variance 0, the output is beta",
     dict(shape=(1, 4, 1), values=[0.0, 1.0, -2.0, 0.5])),
    (case_ffn, "ffn_gelu", "exact GELU, C 8, F 32", dict(B=2, T=5, C=8, Fw=32, activation="gelu")),
    (case_ffn, "ffn_gelu_tanh", "tanh GELU, C 6, F 24, T 7",
     dict(B=1, T=7, C=6, Fw=24, activation="gelu_tanh")),
    (case_ffn, "ffn_relu", "ReLU, C 4, F 10 (not 4C)", dict(B=2, T=3, C=4, Fw=10, activation="relu")),
    (case_block, "block_pre_gelu_causal", "GPT-2 block: pre-norm, exact GELU, causal",
     dict(B=2, T=6, C=8, H=2, causal=True, norm="pre", activation="gelu")),
    (case_block, "block_post_relu_encoder", "original Transformer encoder: post-norm, ReLU",
     dict(B=1, T=7, C=12, H=3, causal=False, norm="post", activation="relu")),
    (case_block, "block_pre_gelu_tanh_one_head", "pre-norm, tanh GELU, H 1, eps 1e-6",
     dict(B=2, T=5, C=6, H=1, causal=True, norm="pre", activation="gelu_tanh", eps=1e-6)),
    (case_block, "block_post_gelu_T1", "post-norm, exact GELU, T = 1, hs 2",
     dict(B=2, T=1, C=8, H=4, causal=True, norm="post", activation="gelu")),
    (case_lm, "lm_2layer", "2 layers, B 2, T 7 of T_max 10, V 11, C 8, H 2",
     dict(B=2, T=7, V=11, T_max=10, C=8, H=2, L=2)),
    (case_lm, "lm_full_context", "T = T_max = 6, B 2, V 13, C 12, H 3, 2 layers",
     dict(B=2, T=6, V=13, T_max=6, C=12, H=3, L=2)),
    (case_lm, "lm_one_token", "one layer, one token, H 1", dict(B=1, T=1, V=5, T_max=4, C=4, H=1, L=1)),
    # Backward cases (chapter 08): the same ops with grad.*.npy, and cross-entropy.
    (case_softmax_grad, "softmax_grad_rows", "backward of a (4, 7) row softmax", dict(shape=(4, 7))),
    (case_softmax_grad, "softmax_grad_large_logits", "backward at logits of order 100 (one-hot)",
     dict(shape=(3, 10), scale=100.0)),
    (case_softmax_grad, "softmax_grad_4d", "backward over the last axis of (2, 2, 3, 4)",
     dict(shape=(2, 2, 3, 4))),
    (case_softmax_grad, "softmax_grad_one_column", "a last axis of length 1: dx is 0",
     dict(shape=(5, 1))),
    (case_softmax_grad, "softmax_grad_large_upstream", "upstream gradient of order 1000",
     dict(shape=(3, 9), dy_scale=1000.0)),
    (case_masked_softmax_grad, "masked_softmax_grad_T7", "backward of a causal (2, 7, 7) softmax",
     dict(shape=(2, 7, 7), causal=True)),
    (case_masked_softmax_grad, "masked_softmax_grad_4d_T10", "causal (2, 3, 10, 10), scores x10",
     dict(shape=(2, 3, 10, 10), causal=True, scale=10.0)),
    (case_masked_softmax_grad, "masked_softmax_grad_T1", "T = 1: dx is 0",
     dict(shape=(1, 1, 1, 1), causal=True)),
    (case_masked_softmax_grad, "masked_softmax_grad_not_causal", "causal 0, (2, 6, 6)",
     dict(shape=(2, 6, 6), causal=False)),
    (case_sdpa_grad, "sdpa_grad_causal", "dq, dk, dv: B 2, H 2, T 5, hs 4, causal",
     dict(B=2, H=2, T=5, hs=4, causal=True)),
    (case_sdpa_grad, "sdpa_grad_not_causal_T7", "dq, dk, dv: B 1, H 3, T 7, hs 8, not causal",
     dict(B=1, H=3, T=7, hs=8, causal=False)),
    (case_sdpa_grad, "sdpa_grad_T1", "T = 1: dq and dk are 0", dict(B=2, H=1, T=1, hs=4, causal=True)),
    (case_sdpa_grad, "sdpa_grad_hs1", "head size 1", dict(B=1, H=2, T=6, hs=1, causal=True)),
    (case_sdpa_grad, "sdpa_grad_sharp", "q, k with std 3: sharp attention, T 9",
     dict(B=1, H=2, T=9, hs=4, causal=True, scale=3.0)),
    (case_mha_grad, "mha_grad_causal", "B 2, T 5, C 8, H 2, causal",
     dict(B=2, T=5, C=8, H=2, causal=True)),
    (case_mha_grad, "mha_grad_odd", "B 1, T 7, C 12, H 3 (hs 3), not causal",
     dict(B=1, T=7, C=12, H=3, causal=False)),
    (case_mha_grad, "mha_grad_one_head", "H = 1: hs = C = 6", dict(B=2, T=4, C=6, H=1, causal=True)),
    (case_mha_grad, "mha_grad_hs1", "H = C = 4: head size 1, T = 9",
     dict(B=1, T=9, C=4, H=4, causal=True)),
    (case_mha_grad, "mha_grad_T1", "T = 1, B = 3", dict(B=3, T=1, C=8, H=2, causal=True)),
    (case_layernorm_grad, "layernorm_grad_3d", "dx, dgamma, dbeta: (2, 5, 8)", dict(shape=(2, 5, 8))),
    (case_layernorm_grad, "layernorm_grad_offset_1e3", "inputs around 1000 with std 5",
     dict(shape=(3, 6), offset=1000.0, scale=5.0)),
    (case_layernorm_grad, "layernorm_grad_eps_1e-3", "(4, 16), eps 1e-3, small inputs",
     dict(shape=(4, 16), eps=1e-3, scale=0.05)),
    (case_layernorm_grad, "layernorm_grad_one_feature", "C = 1: dx and dgamma are 0",
     dict(shape=(1, 4, 1), values=[0.0, 1.0, -2.0, 0.5])),
    (case_ffn_grad, "ffn_grad_gelu", "exact GELU, C 8, F 32", dict(B=2, T=5, C=8, Fw=32, activation="gelu")),
    (case_ffn_grad, "ffn_grad_gelu_tanh", "tanh GELU, C 6, F 24, T 7",
     dict(B=1, T=7, C=6, Fw=24, activation="gelu_tanh")),
    (case_ffn_grad, "ffn_grad_relu", "ReLU, C 4, F 10", dict(B=2, T=3, C=4, Fw=10, activation="relu")),
    (case_ffn_grad, "ffn_grad_gelu_tails", "exact GELU, inputs with std 10 (both tails)",
     dict(B=1, T=4, C=4, Fw=16, activation="gelu", scale=10.0)),
    (case_block_grad, "block_grad_pre_gelu_causal", "GPT-2 block: pre-norm, exact GELU, causal",
     dict(B=2, T=6, C=8, H=2, causal=True, norm="pre", activation="gelu")),
    (case_block_grad, "block_grad_post_relu_encoder", "post-norm, ReLU, not causal, H 3",
     dict(B=1, T=7, C=12, H=3, causal=False, norm="post", activation="relu")),
    (case_block_grad, "block_grad_pre_gelu_tanh_one_head", "pre-norm, tanh GELU, H 1, eps 1e-6",
     dict(B=2, T=5, C=6, H=1, causal=True, norm="pre", activation="gelu_tanh", eps=1e-6)),
    (case_block_grad, "block_grad_post_gelu_T1", "post-norm, exact GELU, T = 1, hs 2",
     dict(B=2, T=1, C=8, H=4, causal=True, norm="post", activation="gelu")),
    (case_block_grad, "block_grad_pre_no_layernorm", "pre-norm placement, no LayerNorm",
     dict(B=2, T=5, C=8, H=2, causal=True, norm="pre", activation="gelu", use_layer_norm=False)),
    (case_block_grad, "block_grad_post_no_layernorm", "post-norm placement, no LayerNorm, ReLU",
     dict(B=1, T=6, C=8, H=2, causal=False, norm="post", activation="relu", use_layer_norm=False)),
    (case_cross_entropy, "cross_entropy_rows", "N 6, V 5", dict(N=6, V=5)),
    (case_cross_entropy, "cross_entropy_large_logits", "logits of order 50: log-sum-exp shifted",
     dict(N=4, V=7, scale=50.0)),
    (case_cross_entropy, "cross_entropy_one_row", "N = 1, V 3", dict(N=1, V=3)),
    (case_cross_entropy, "cross_entropy_V1", "V = 1: the loss and its gradient are 0",
     dict(N=3, V=1)),
    (case_lm_grad, "lm_grad_1layer", "1 layer, B 2, T 5 of T_max 6, V 7, C 8, H 2, targets",
     dict(B=2, T=5, V=7, T_max=6, C=8, H=2, L=1)),
    (case_lm_grad, "lm_grad_2layer", "2 layers, B 2, T 7 of T_max 10 (wpe rows 7-9 get 0), V 11",
     dict(B=2, T=7, V=11, T_max=10, C=8, H=2, L=2)),
    (case_lm_grad, "lm_grad_3layer", "3 layers, B 1, T = T_max = 6, V 9, C 12, H 3",
     dict(B=1, T=6, V=9, T_max=6, C=12, H=3, L=3)),
    (case_lm_grad, "lm_grad_one_token", "1 layer, one token, H 1",
     dict(B=1, T=1, V=5, T_max=4, C=4, H=1, L=1)),
    (case_train, "train_2layer_clip", "10 AdamW steps, 2 layers, clipping at 1.0, weight decay 0.1",
     dict(B=3, T=6, V=9, T_max=8, C=8, H=2, L=2, steps=10, lr=3e-2, weight_decay=0.1,
          grad_clip=1.0)),
    (case_train, "train_1layer_no_clip", "8 AdamW steps, 1 layer, no clipping, no weight decay, T = T_max",
     dict(B=2, T=5, V=7, T_max=5, C=6, H=3, L=1, steps=8, lr=1e-2, weight_decay=0.0,
          grad_clip=0.0, beta1=0.8, beta2=0.99, adam_eps=1e-6)),
    (case_train, "train_3layer_one_head", "12 AdamW steps, 3 layers, H 1, clipping at 0.5",
     dict(B=2, T=4, V=11, T_max=6, C=4, H=1, L=3, steps=12, lr=5e-2, weight_decay=0.01,
          grad_clip=0.5)),
    # Chapter 11: RoPE, RMSNorm, SwiGLU, grouped-query and sliding-window attention (float64
    # references, most with their backward).
    (case_rope, "rope_grad_basic", "RoPE, B 2, H 2, T 5, hs 8, theta 10000", dict(B=2, H=2, T=5, hs=8)),
    (case_rope, "rope_grad_offset", "RoPE at positions 100..106 (a generation step's offset), theta 500000",
     dict(B=1, H=3, T=7, hs=4, theta=500000.0, offset=100)),
    (case_rope, "rope_grad_T1_hs2", "T = 1 at offset 3, hs 2 (one pair, one radian per position)",
     dict(B=2, H=1, T=1, hs=2, offset=3)),
    (case_rope, "rope_small_theta", "forward only, theta 10: every pair turns fast",
     dict(B=1, H=2, T=9, hs=6, theta=10.0, grads=False)),
    (case_rmsnorm, "rmsnorm_grad_3d", "RMSNorm (2, 5, 8), eps 1e-5", dict(shape=(2, 5, 8))),
    (case_rmsnorm, "rmsnorm_grad_2d_eps", "(4, 16), eps 1e-3, small inputs (eps matters)",
     dict(shape=(4, 16), eps=1e-3, scale=0.05)),
    (case_rmsnorm, "rmsnorm_grad_one_feature", "C = 1: y = sign(x) gamma, dx ~ 0",
     dict(shape=(1, 4, 1))),
    (case_rmsnorm, "rmsnorm_large", "forward only, inputs of std 100",
     dict(shape=(3, 6), scale=100.0, grads=False)),
    (case_rmsnorm, "rmsnorm_grad_4d", "rank 4, (2, 2, 3, 4), as on (B, H, T, hs) heads",
     dict(shape=(2, 2, 3, 4))),
    (case_swiglu, "swiglu_grad_basic", "SwiGLU, C 8, F 16", dict(B=2, T=5, C=8, Fw=16)),
    (case_swiglu, "swiglu_grad_T1_F1", "T = 1, F = 1", dict(B=3, T=1, C=4, Fw=1)),
    (case_swiglu, "swiglu_grad_tails", "inputs with std 5 (silu's tails), C 6, F 12",
     dict(B=1, T=4, C=6, Fw=12, scale=5.0)),
    (case_swiglu, "swiglu_forward", "forward only, C 6, F 16 (2/3 of 4C)",
     dict(B=2, T=3, C=6, Fw=16, grads=False)),
    (case_gqa, "gqa_grad_kv2", "GQA: H 4, KV 2, C 16, causal", dict(B=2, T=6, C=16, H=4, KV=2)),
    (case_gqa, "gqa_grad_mqa_rope", "MQA (KV 1) with RoPE, H 4, C 8 (hs 2)",
     dict(B=1, T=7, C=8, H=4, KV=1, use_rope=True)),
    (case_gqa, "gqa_grad_mha_rope_window", "KV = H = 2 (MHA), RoPE theta 100, window 3",
     dict(B=2, T=6, C=8, H=2, KV=2, use_rope=True, theta=100.0, window=3)),
    (case_gqa, "gqa_grad_T1", "T = 1, H 2, KV 1, RoPE, window 1",
     dict(B=2, T=1, C=8, H=2, KV=1, use_rope=True, window=1)),
    (case_gqa, "gqa_grad_not_causal_odd_hs", "not causal, H 4, KV 2, hs 3 (no RoPE)",
     dict(B=1, T=5, C=12, H=4, KV=2, causal=False)),
    (case_gqa, "gqa_window_ge_T", "forward only, window 8 >= T 6: plain causal, H 6, KV 3",
     dict(B=1, T=6, C=12, H=6, KV=3, use_rope=True, window=8, grads=False)),
    (case_swa, "swa_grad_window3", "sliding window 3, B 2, H 2, T 7, hs 4",
     dict(B=2, H=2, T=7, hs=4, window=3)),
    (case_swa, "swa_grad_window1", "window 1: each query sees only itself (out = v, dq = dk = 0)",
     dict(B=1, H=2, T=5, hs=4, window=1)),
    (case_swa, "swa_grad_window_ge_T", "window 9 >= T 6: plain causal attention",
     dict(B=1, H=1, T=6, hs=8, window=9)),
    (case_swa, "swa_grad_T1", "T = 1, window 2", dict(B=2, H=1, T=1, hs=4, window=2)),
    (case_swa, "swa_sharp", "forward only, q and k with std 3 (sharp), T 10, window 4",
     dict(B=1, H=2, T=10, hs=4, window=4, scale=3.0, grads=False)),
    (case_rope, "rope_default_keys", "no keys: theta 10000 and offset 0 by default",
     dict(B=1, H=2, T=6, hs=8, write_keys=False)),
    (case_gqa, "gqa_default_keys", "only n_heads, n_kv_heads, causal: no RoPE, no window",
     dict(B=2, T=5, C=8, H=4, KV=2, optional_keys=False)),
    (case_alibi, "alibi_grad_h8", "ALiBi, H 8 (slopes 1/2 .. 1/256), B 2, T 7, hs 4",
     dict(B=2, H=8, T=7, hs=4)),
    (case_alibi, "alibi_grad_h6", "ALiBi, H 6: not a power of two (4 slopes, then 2 of 8)",
     dict(B=1, H=6, T=6, hs=4)),
    (case_alibi, "alibi_grad_window3", "ALiBi with a window of 3, H 3, T 8",
     dict(B=1, H=3, T=8, hs=4, window=3)),
    (case_alibi, "alibi_grad_T1_h1", "T = 1, H 1 (slope 1/256), no window key",
     dict(B=2, H=1, T=1, hs=4, write_window=False)),
    (case_alibi, "alibi_sharp_long", "forward only, q and k std 3, T 24, H 12: long distances",
     dict(B=1, H=12, T=24, hs=4, scale=3.0, grads=False)),
]


def main():
    torch.set_num_threads(1)  # same reductions, same bits, on every run
    if ROOT.exists():
        shutil.rmtree(ROOT)
    for index, (make, name, about, args) in enumerate(CASES):
        torch.manual_seed(1000 + index)
        make(name, about, **args)
    files = sorted(p for p in ROOT.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in files)
    print(f"{len(CASES)} cases, {len(files)} files, {size} bytes in {ROOT}")


if __name__ == "__main__":
    main()
