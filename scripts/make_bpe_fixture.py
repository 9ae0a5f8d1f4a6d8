#!/usr/bin/env python3
"""Chapter 13's hard-string fixture: what Hugging Face's tokenizer and tiktoken make of hard text.

Reads tests/tokens/hard_strings.json (emoji, CJK, combining marks, whitespace runs, contractions,
numbers, and invalid UTF-8 given as hex) and the tokenizer tests/tokens/sonnets-1024/ (vocab.json +
merges.txt, trained by `13_tokens --train data/sonnets.txt --vocab-size 1024 --save ...`). Builds
from those SAME two files
  - Hugging Face `tokenizers`: models.BPE + the ByteLevel pre-tokenizer (add_prefix_space=False,
    GPT-2's regex) + the ByteLevel decoder, as GPT-2's tokenizer.json does;
  - tiktoken: an Encoding with GPT-2's pattern and mergeable_ranks = the vocabulary's bytes -> id
    (tiktoken merges by the rank of the merged token, i.e. its id);
  - Python's `regex` module: the chunks of GPT-2's pattern (the reference for attn::pretokenize);
and writes tests/tokens/hard_strings_expected.json: for every text string the chunks and both
tokenizers' ids; for every hex string the byte tokens' ids and their decoding by both tokenizers
and by bytes.decode("utf-8", errors="replace"). The ctest tokens.hard_strings checks attn::Bpe
against it. Where HF and tiktoken disagree, both are recorded ("agree": false) and the test
says which one attn::Bpe follows.

Regenerate (never at build or test time; needs the network once, for pip):
  python3 -m venv /tmp/venv-tok && /tmp/venv-tok/bin/pip install tokenizers tiktoken regex
  /tmp/venv-tok/bin/python scripts/make_bpe_fixture.py
"""
import json
import pathlib
import sys

import regex
import tiktoken
import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

ROOT = pathlib.Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "tokens"
TOKENIZER = HERE / "sonnets-1024"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    """GPT-2's encoder.py: printable bytes keep their code point, the rest move to 256 and up."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def main():
    vocab = json.loads((TOKENIZER / "vocab.json").read_text(encoding="utf-8"))
    byte_encoder = bytes_to_unicode()
    byte_decoder = {c: b for b, c in byte_encoder.items()}

    hf = Tokenizer(models.BPE.from_file(str(TOKENIZER / "vocab.json"), str(TOKENIZER / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.decoder = decoders.ByteLevel()

    ranks = {bytes(byte_decoder[c] for c in token): i for token, i in vocab.items()}
    tk = tiktoken.Encoding(name="sonnets-1024", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                           special_tokens={})

    cases = json.loads((HERE / "hard_strings.json").read_text(encoding="utf-8"))
    out = []
    disagreements = 0
    for case in cases:
        row = {"name": case["name"]}
        if "text" in case:
            text = case["text"]
            hf_ids = hf.encode(text).ids
            tk_ids = tk.encode(text, disallowed_special=())
            row.update(text=text, chunks=regex.findall(GPT2_PATTERN, text), hf=hf_ids,
                       tiktoken=tk_ids, agree=hf_ids == tk_ids,
                       hf_decoded=hf.decode(hf_ids), tiktoken_decoded=tk.decode(tk_ids))
            if hf_ids != tk_ids:
                disagreements += 1
                print(f"HF and tiktoken disagree on {case['name']!r}: {hf_ids} vs {tk_ids}",
                      file=sys.stderr)
        else:
            raw = bytes.fromhex(case["hex"])
            ids = [vocab[byte_encoder[b]] for b in raw]  # one token per byte
            row.update(hex=case["hex"], byte_ids=ids,
                       python_decoded=raw.decode("utf-8", errors="replace"),
                       hf_decoded=hf.decode(ids), tiktoken_decoded=tk.decode(ids))
        out.append(row)
    result = {
        "made_by": "scripts/make_bpe_fixture.py",
        "tokenizer": "tests/tokens/sonnets-1024",
        "versions": {"tokenizers": tokenizers.__version__, "tiktoken": tiktoken.__version__,
                     "regex": regex.__version__, "python": sys.version.split()[0]},
        "disagreements": disagreements,
        "cases": out,
    }
    path = HERE / "hard_strings_expected.json"
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}: {len(out)} cases, {disagreements} where HF and "
          f"tiktoken disagree")


if __name__ == "__main__":
    main()
