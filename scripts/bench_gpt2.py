#!/usr/bin/env python3
"""scripts/bench_gpt2.py: chapter 14 at full size, side by side with transformers (issue 30).

GPT-2 124M (random weights: the speed does not depend on them) generating greedy tokens with a
KV cache: 14_gpt2 --timing against transformers' generate(use_cache=True), on the same number of
threads (OPENBLAS_NUM_THREADS for the course, torch.set_num_threads for PyTorch), and the floor
set by memory bandwidth: a cached step reads every weight once, so no loop can beat
bandwidth / weight bytes tokens per second. Also the course's peak memory against the weights.

    ~/venv-torch/bin/python scripts/make_gpt2_fixture.py --size 124m --out /tmp/gpt2-124m
    ~/venv-torch/bin/python scripts/bench_gpt2.py --weights /tmp/gpt2-124m [--threads 1 2]

Never committed: the 124M folder (500 MB) is made locally.
"""
import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch
from transformers import GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_ours(binary, weights, ids, tokens, threads):
    """tokens/s, the greedy ids, and the peak memory in bytes (GNU time's maximum RSS: the
    child's own, not the forked Python it started as)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    cmd = ["/usr/bin/time", "-f", "maxrss %M", binary, "--weights", weights, "--raw", "--greedy",
           "--timing", "--prompt-ids", ",".join(map(str, ids)), "--tokens", str(tokens)]
    r = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    m = re.search(r"generation: (\d+) tokens in ([0-9.]+) s \(([0-9.]+) tokens/s\)", r.stdout)
    generated = [int(x) for x in r.stdout.splitlines()[0].split(",")]
    peak = int(re.search(r"maxrss (\d+)", r.stderr).group(1)) * 1024
    return float(m.group(3)), generated, peak


def run_torch(model, ids, tokens, threads):
    torch.set_num_threads(threads)
    x = torch.tensor([ids])
    with torch.no_grad():
        model.generate(x, max_new_tokens=4, min_new_tokens=4, do_sample=False, use_cache=True,
                       pad_token_id=0)  # warm-up
        t0 = time.perf_counter()
        out = model.generate(x, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                             use_cache=True, pad_token_id=0)
        seconds = time.perf_counter() - t0
    return tokens / seconds, out[0, len(ids):].tolist()


def bandwidth_gbs(threads, gib=1.0, repeats=5):
    """Read bandwidth: the best of a few matrix-vector products over a 1 GiB float32 matrix (a
    step's own access pattern: every weight read once), on `threads` threads."""
    torch.set_num_threads(threads)
    a = torch.ones(int(gib * (1 << 30) / 4 / 4096), 4096)
    x = torch.ones(4096)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mv(a, x)
        best = max(best, a.numel() * 4 / (time.perf_counter() - t0))
    return best / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "default", "bin", "14_gpt2"))
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    model = GPT2LMHeadModel.from_pretrained(args.weights).eval()
    n_params = sum(p.numel() for p in model.parameters())
    weight_bytes = 4 * n_params
    ids = list(range(100, 100 + args.prompt_len))
    print(f"GPT-2 124M (random), {n_params:,} parameters, {weight_bytes / 1e6:.0f} MB of float32; "
          f"prompt {args.prompt_len} tokens, {args.tokens} new, greedy, KV cache")
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    peak = 0
    for t in args.threads:
        ours, theirs = [], []
        same = True
        for _ in range(args.rounds):  # interleaved, best of each
            r, a, p = run_ours(args.binary, args.weights, ids, args.tokens, t)
            peak = max(peak, p)
            ours.append(r)
            r, b = run_torch(model, ids, args.tokens, t)
            theirs.append(r)
            same = same and a == b
        print(f"threads {t}: 14_gpt2 {max(ours):.1f} tokens/s, transformers generate "
              f"{max(theirs):.1f} tokens/s, ratio {max(ours) / max(theirs):.2f}; "
              f"same greedy tokens: {same}")
        bw = bandwidth_gbs(t)
        print(f"  memory bandwidth ({t} thread(s), a 1 GiB matrix-vector product): {bw:.1f} GB/s "
              f"-> at most {bw * 1e9 / weight_bytes:.1f} tokens/s (every weight read once per "
              f"token)")
    print(f"14_gpt2 peak memory {peak / 1e6:.0f} MB = {peak / weight_bytes:.2f} x the weights")


if __name__ == "__main__":
    sys.exit(main())
