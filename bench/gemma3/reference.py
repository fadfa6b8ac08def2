#!/usr/bin/env python3
"""Gemma 3 270M (the real Q4_K_M GGUF from PyPI) under transformers, the reference for jisu.

transformers dequantizes the GGUF to float32 and runs it eagerly. Prints the perplexity of a
text as jisu defines it (src/eval/perplexity.h: tokenized without special tokens, the first
CHUNKS windows of CTX tokens, each on its own) and writes every scored position's top-1 token to
OUT (one list per window), for teacher-forced top-1 agreement with `jisu perplexity --top1-out`.

  python bench/gemma3/reference.py GGUF TEXT CTX CHUNKS OUT.json
Needs torch, transformers, gguf, accelerate (not the project's .venv).
"""
import json
import math
import os
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main():
  gguf, text_path, ctx, chunks, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(
      sys.argv[4]), sys.argv[5]
  d, f = os.path.split(os.path.abspath(gguf))
  tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
  model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32,
                                               attn_implementation="eager")
  model.eval()
  with open(text_path, encoding="utf-8", newline="") as fh:
    ids = tok(fh.read(), add_special_tokens=False)["input_ids"]
  nll, n, top1 = 0.0, 0, []
  for c in range(chunks):
    w = ids[c * ctx:(c + 1) * ctx]
    if len(w) < ctx:
      break
    with torch.no_grad():
      lg = model(torch.tensor([w])).logits[0].float()
    lp = torch.log_softmax(lg.double(), -1)
    for i in range(ctx - 1):
      nll -= lp[i, w[i + 1]].item()
      n += 1
    top1.append(lg[:ctx - 1].argmax(-1).tolist())
  result = {"ppl": math.exp(nll / n), "num_scored": n, "num_tokens": len(ids),
            "transformers": __import__("transformers").__version__, "torch": torch.__version__}
  print(json.dumps(result))
  with open(out, "w") as fh:
    json.dump(dict(result, top1=top1), fh)


if __name__ == "__main__":
  main()
