#!/usr/bin/env python3
"""scripts/make_gpt2_fixture.py: the small GPT-2 that chapter 14's tests run (issue 30).

A randomly initialised GPT2LMHeadModel, written by Hugging Face's own save_pretrained
(config.json, model.safetensors), a byte-level BPE tokenizer (vocab.json, merges.txt), and what
transformers computes with it: the logits of a prompt and the greedy continuation with and
without its KV cache. Regeneration only: the committed files are what the tests read; nothing
is downloaded at build or test time.

    python3 -m venv ~/venv-torch   # any folder
    ~/venv-torch/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
    ~/venv-torch/bin/pip install transformers safetensors
    ~/venv-torch/bin/python scripts/make_gpt2_fixture.py [--tokenizer DIR] [--out DIR]

--tokenizer DIR takes vocab.json and merges.txt from DIR (a tokenizer trained by 13_tokens);
without it, a small byte-level BPE is trained here on the shipped corpus.

Two folders: tests/gpt2/tiny (as save_pretrained writes it) and tests/gpt2/tiny-hub (the same
tensors spelled the other way, with or without "transformer.", plus the causal-mask buffers
attn.bias / attn.masked_bias that older hub files such as openai-community/gpt2 store).

--size 124m instead writes GPT2Config()'s defaults (124M parameters, random) to --out, for the
speed comparison (scripts/bench_gpt2.py); never commit it.
"""
import argparse
import collections
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROMPT = "Shall I compare thee to a summer's day?"
NEW_TOKENS = 24


def bytes_to_unicode():
    """GPT-2's map from the 256 bytes to printable characters (vocab.json's alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def train_tiny_bpe(text, merges_wanted):
    """Byte-level BPE on whitespace-split words: the most frequent pair merged, again and again."""
    enc = bytes_to_unicode()
    words = collections.Counter()
    for i, w in enumerate(text.split(" ")):
        words[tuple(enc[b] for b in ((" " if i else "") + w).encode("utf-8"))] += 1
    vocab = [enc[b] for b in range(256)]
    merges = []
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        vocab.append(a + b)
        merged = collections.Counter()
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    vocab.append("<|endoftext|>")
    return {t: i for i, t in enumerate(vocab)}, merges


def write_tokenizer(out, source):
    if source:
        for f in ("vocab.json", "merges.txt"):
            shutil.copy(os.path.join(source, f), os.path.join(out, f))
        return
    with open(os.path.join(ROOT, "data", "sonnets.txt"), encoding="utf-8") as f:
        text = f.read()[:20000].replace("\n", " ")
    vocab, merges = train_tiny_bpe(text, 64)
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")


def randomise(model, seed):
    """Every tensor drawn, biases and LayerNorms included (HF starts those at 0 and 1, which
    would hide a bias put in the wrong place), large enough that greedy picks are clear."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or \
                    name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def greedy(model, ids, use_cache):
    out = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False,
                         use_cache=use_cache, pad_token_id=0)
    return out[0, len(ids):].tolist()


def smallest_margin(model, ids, new):
    """The smallest gap between the first and second logit along the greedy path."""
    seq = list(ids)
    gaps = []
    with torch.no_grad():
        for t in new:
            logits = model(torch.tensor([seq])).logits[0, -1]
            top = torch.topk(logits, 2).values
            gaps.append(float(top[0] - top[1]))
            seq.append(t)
    return min(gaps)


def write_hub_variant(src, dst, config):
    """The same tensors, spelled the other way, plus the causal-mask buffers of older files."""
    os.makedirs(dst, exist_ok=True)
    for f in ("config.json", "vocab.json", "merges.txt"):
        shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    tensors = load_file(os.path.join(src, "model.safetensors"))
    prefixed = any(k.startswith("transformer.") for k in tensors)
    out = {}
    for k, v in tensors.items():
        base = k[len("transformer."):] if k.startswith("transformer.") else k
        out[base if prefixed else "transformer." + base] = v.clone()
    T = config.n_positions
    for layer in range(config.n_layer):
        p = "" if prefixed else "transformer."
        out[f"{p}h.{layer}.attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        out[f"{p}h.{layer}.attn.masked_bias"] = torch.tensor(-1e4)
    save_file(out, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", help="a folder with vocab.json and merges.txt (13_tokens)")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "gpt2"))
    ap.add_argument("--size", choices=["tiny", "124m"], default="tiny")
    ap.add_argument("--seed", type=int, default=14)
    args = ap.parse_args()
    torch.manual_seed(args.seed)

    if args.size == "124m":
        os.makedirs(args.out, exist_ok=True)
        config = GPT2Config()
        model = GPT2LMHeadModel(config).eval()
        model.save_pretrained(args.out, safe_serialization=True)
        print(f"wrote a random GPT-2 124M ({sum(p.numel() for p in model.parameters())} "
              f"parameters) to {args.out}")
        return

    tiny = os.path.join(args.out, "tiny")
    os.makedirs(tiny, exist_ok=True)
    write_tokenizer(tiny, args.tokenizer)
    tok = GPT2Tokenizer.from_pretrained(tiny)
    with open(os.path.join(tiny, "vocab.json"), encoding="utf-8") as f:
        V = len(json.load(f))  # the model's V is the tokenizer's, as GPT-2's 50257
    config = GPT2Config(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                        bos_token_id=V - 1, eos_token_id=V - 1)
    model = GPT2LMHeadModel(config).eval()
    randomise(model, args.seed)
    model.save_pretrained(tiny, safe_serialization=True)
    os.remove(os.path.join(tiny, "generation_config.json"))  # transformers' own; the course reads none

    ids = tok.encode(PROMPT)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].numpy().astype(np.float32)  # (T, V)
    cached = greedy(model, ids, True)
    uncached = greedy(model, ids, False)
    assert cached == uncached, "transformers' greedy ids differ with and without its cache"
    margin = smallest_margin(model, ids, cached)
    expected = os.path.join(tiny, "expected")
    os.makedirs(expected, exist_ok=True)
    np.save(os.path.join(expected, "logits.npy"), logits)
    with open(os.path.join(expected, "prompt.txt"), "w", encoding="utf-8") as f:
        f.write(PROMPT + "\n")
    with open(os.path.join(expected, "prompt_ids.txt"), "w") as f:
        f.write(",".join(map(str, ids)) + "\n")
    with open(os.path.join(expected, "greedy_ids.txt"), "w") as f:
        f.write(",".join(map(str, cached)) + "\n")
    with open(os.path.join(expected, "greedy_text.txt"), "w", encoding="utf-8") as f:
        f.write(tok.decode(cached))
    write_hub_variant(tiny, os.path.join(args.out, "tiny-hub"), config)
    print(f"prompt {len(ids)} tokens, V {V}, greedy {cached}")
    print(f"smallest top-1/top-2 logit gap along the greedy path: {margin:.4f}")
    print(f"torch {torch.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    sys.exit(main())
