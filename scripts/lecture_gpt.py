#!/usr/bin/env python3
"""The lecture's gpt.py, with flags: the PyTorch side of docs/09-training.md's comparisons.

A measurement script, never part of the build or the tests. The model, the data, the batches,
the estimate and the training loop are the lecture's gpt.py ("Let's build GPT: from scratch, in
code, spelled out"), line for line; what gpt.py fixes at the top of the file are flags here.

  /usr/bin/python3 scripts/lecture_gpt.py                  # the page's CPU model (val 1.763)
  /usr/bin/python3 scripts/lecture_gpt.py --lecture        # gpt.py's own settings (val ~1.48)

The defaults are the sizes of the page's "CPU model on Tiny Shakespeare" (n_embd 64, 4 heads,
4 layers, T 64, batch 32, AdamW lr 1e-3, 2000 steps, estimates every 250 steps over 200 batches)
with dropout 0, since the course's CPU model trains without it. Two choices say how close to
the course's optimizer the run is:
  --param-groups one   gpt.py's torch.optim.AdamW(model.parameters(), lr): one group, so the
                       weight decay (torch's default 0.01) shrinks every tensor, LayerNorm gains
                       and biases included;
  --param-groups two   the course's (and nanoGPT's) two groups: decay on matrices and embeddings
                       only, none on LayerNorm and biases.
The default is gpt.py's `one`; the course's 09_training decays like `two`.

Needs torch (tested with 1.13) and the corpus, data/tinyshakespeare.txt (scripts/get-data.sh).
"""

import argparse
import time

import torch
import torch.nn as nn
from torch.nn import functional as F


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="data/tinyshakespeare.txt")
    p.add_argument("--lecture", action="store_true",
                   help="gpt.py's own settings: n_embd 384, 6 heads, 6 layers, T 256, batch 64, "
                        "dropout 0.2, lr 3e-4, 5000 steps, estimates every 500")
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-heads", type=int, default=4)
    p.add_argument("--n-layers", type=int, default=4)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--eval-interval", type=int, default=250)
    p.add_argument("--eval-iters", type=int, default=200)
    p.add_argument("--param-groups", choices=["one", "two"], default="one")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()
    if a.lecture:
        a.n_embd, a.n_heads, a.n_layers, a.block_size, a.batch_size = 384, 6, 6, 256, 64
        a.dropout, a.lr, a.steps, a.eval_interval = 0.2, 3e-4, 5000, 500
    return a


args = parse_args()
if args.threads > 0:
    torch.set_num_threads(args.threads)
device = args.device
batch_size, block_size = args.batch_size, args.block_size
n_embd, n_head, n_layer, dropout = args.n_embd, args.n_heads, args.n_layers, args.dropout
eval_iters = args.eval_iters

torch.manual_seed(args.seed)

with open(args.data, "r", encoding="utf-8") as f:
    text = f.read()
chars = sorted(list(set(text)))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
encode = lambda s: [stoi[c] for c in s]  # noqa: E731
decode = lambda l: "".join([itos[i] for i in l])  # noqa: E731

data = torch.tensor(encode(text), dtype=torch.long)
n = int(0.9 * len(data))
train_data = data[:n]
val_data = data[n:]


def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
    return x.to(device), y.to(device)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()  # dropout off
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


class Head(nn.Module):
    def __init__(self, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)  # (B, T, hs)
        q = self.query(x)  # (B, T, hs)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5  # (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)  # dropout site 1: the attention weights
        v = self.value(x)  # (B, T, hs)
        return wei @ v  # (B, T, hs)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_heads, head_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(head_size) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.dropout(self.proj(out))  # dropout site 2: after the projection


class FeedFoward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.ReLU(),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(dropout),  # dropout site 3: after the FFN
        )

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        head_size = n_embd // n_head
        self.sa = MultiHeadAttention(n_head, head_size)
        self.ffwd = FeedFoward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        x = x + self.ffwd(self.ln2(x))
        return x


class GPTLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head=n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        tok_emb = self.token_embedding_table(idx)  # (B, T, C)
        pos_emb = self.position_embedding_table(torch.arange(T, device=device))  # (T, C)
        x = tok_emb + pos_emb
        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)  # (B, T, V)
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        loss = F.cross_entropy(logits.view(B * T, C), targets.view(B * T))
        return logits, loss


model = GPTLanguageModel().to(device)
n_params = sum(p.numel() for p in model.parameters())
if args.param_groups == "one":
    groups = model.parameters()  # gpt.py: weight decay 0.01 on every tensor
else:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
optimizer = torch.optim.AdamW(groups, lr=args.lr)
print(f"{n_params} parameters, V = {vocab_size}, {len(train_data)} training tokens; "
      f"n_embd {n_embd}, {n_head} heads, {n_layer} layers, T {block_size}, batch {batch_size}, "
      f"dropout {dropout}, AdamW lr {args.lr} ({args.param_groups} parameter group"
      f"{'s' if args.param_groups == 'two' else ''}), {args.steps} steps, seed {args.seed}, "
      f"{device}, {torch.get_num_threads()} threads", flush=True)

start = time.time()
# As gpt.py: the estimate at `it` comes before step it + 1, so it is the loss after `it` steps;
# the loop runs one extra iteration to estimate after the last step.
for it in range(args.steps + 1):
    if it % args.eval_interval == 0 or it == args.steps:
        losses = estimate_loss()
        print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f} "
              f"({time.time() - start:.0f} s)", flush=True)
    if it == args.steps:
        break
    xb, yb = get_batch("train")
    _, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

tokens = args.steps * batch_size * block_size
elapsed = time.time() - start
print(f"{args.steps} steps in {elapsed:.0f} s (estimates included): "
      f"{tokens / elapsed:,.0f} tokens/s", flush=True)
