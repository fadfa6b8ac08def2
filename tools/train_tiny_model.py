#!/usr/bin/env python3
"""Trains the two small models bundled with jisu, from scratch, and the tokenizer they share.

  models/tiny-llama/  LlamaForCausalLM (GQA, untied embeddings, Llama-3 rope scaling), sharded
                      into two safetensors files, config.json in the classic layout
                      (rope_theta + rope_scaling + torch_dtype).
  models/tiny-draft/  Qwen2ForCausalLM (QKV bias, tied embeddings), one safetensors file,
                      config.json as transformers 5 writes it (rope_parameters, dtype).
  tests/data/golden/heldout.txt
                      a plain-text sample of the held-out split (for perplexity tests).

Corpus: the Python sources and docs of the running interpreter's site-packages, read in a
deterministic order (sorted by a hash of the path relative to site-packages), deduplicated by
content and capped in size. A file is held out when the hash of its relative path says so
(about 1 %), so the split does not depend on where site-packages lives.

Why the training length is set in seconds: the script must finish inside one 10-minute call on
a GPU machine, data preparation included. It times the first steps and fixes the step count
(and so the cosine schedule) from that; --steps overrides it.

GPU run (one H200, ~9 minutes):
  python3 tools/train_tiny_model.py
CPU smoke test (small corpus, a handful of steps):
  python tools/train_tiny_model.py --steps 5 --device cpu --out-dir /tmp/m --golden-dir /tmp/g
"""

import time

T_START = time.time()

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import shutil
import sys
import sysconfig

import numpy as np
import torch
import torch.nn.functional as F
import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
from tokenizers import processors, trainers
import transformers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
from transformers import Qwen2Config, Qwen2ForCausalLM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
EOT_ID, IM_START_ID, IM_END_ID = 0, 1, 2
VOCAB = 8192

# The Llama-3 pre-tokenizer pattern.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# ChatML, with a default system message when the conversation has none.
CHAT_TEMPLATE = (
    "{%- if not messages or messages[0]['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}")

SUFFIXES = (".py", ".md", ".rst", ".txt")

LOG_LINES = []


def log(msg):
  line = f"[{time.time() - T_START:7.1f}s] {msg}"
  print(line, flush=True)
  LOG_LINES.append(line)


def path_hash(rel):
  return hashlib.sha1(rel.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------------- corpus


def site_packages_dirs():
  paths = sysconfig.get_paths()
  dirs = []
  for d in (paths["purelib"], paths["platlib"]):
    d = os.path.realpath(d)
    if os.path.isdir(d) and d not in dirs:
      dirs.append(d)
  return dirs


def list_files(max_file_bytes):
  """All candidate files as (hash, rel, abs), ordered by hash (deterministic, well mixed)."""
  out = []
  for root in site_packages_dirs():
    for dirpath, dirnames, filenames in os.walk(root):
      dirnames.sort()
      dirnames[:] = [d for d in dirnames if d != "__pycache__"]
      for name in sorted(filenames):
        if not name.endswith(SUFFIXES):
          continue
        full = os.path.join(dirpath, name)
        try:
          st = os.stat(full)
        except OSError:
          continue
        if not (64 <= st.st_size <= max_file_bytes):
          continue
        rel = os.path.relpath(full, root)
        out.append((path_hash(rel), rel, full))
  out.sort()
  return out


def read_corpus(max_bytes, max_file_bytes, heldout_mod):
  files = list_files(max_file_bytes)
  log(f"{len(files)} candidate files under {site_packages_dirs()}")
  train, held = [], []
  seen = set()
  total = 0
  for h, rel, full in files:
    if total >= max_bytes:
      break
    try:
      with open(full, "rb") as f:
        raw = f.read()
      text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
      continue
    if "\x00" in text:
      continue
    digest = hashlib.sha1(raw).digest()
    if digest in seen:
      continue
    seen.add(digest)
    total += len(raw)
    if int(h[:8], 16) % heldout_mod == 0:
      held.append((rel, text))
    else:
      train.append((rel, text))
  tb = sum(len(t) for _, t in train)
  hb = sum(len(t) for _, t in held)
  log(f"corpus: {len(train)} train files ({tb / 1e6:.1f} M chars), "
      f"{len(held)} held-out files ({hb / 1e6:.2f} M chars)")
  return train, held


def heldout_sample(held, target_bytes, per_file_chars):
  """A few KB from each of several held-out files, cut at line ends, LF line endings, no
  special-token text."""
  parts = []
  size = 0
  for rel, text in held:
    if any(s in text for s in SPECIALS):
      continue
    piece = text[:per_file_chars]
    if len(text) > per_file_chars:
      cut = piece.rfind("\n")
      if cut <= 0:
        continue
      piece = piece[:cut + 1]
    # LF only: a CR in a committed text file is at the mercy of git's line-ending settings.
    piece = piece.replace("\r\n", "\n").replace("\r", "\n").rstrip() + "\n"
    parts.append(piece)
    size += len(piece.encode("utf-8")) + 1
    if size >= target_bytes:
      break
  return "\n".join(parts)


# -------------------------------------------------------------------------------- tokenizer


def train_tokenizer(train, max_bytes):
  tok = Tokenizer(models.BPE())
  tok.pre_tokenizer = pre_tokenizers.Sequence([
      pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
      pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
  ])
  tok.decoder = decoders.ByteLevel()
  tok.post_processor = processors.ByteLevel(trim_offsets=False)
  specials = [AddedToken(s, special=True, normalized=False) for s in SPECIALS]
  trainer = trainers.BpeTrainer(
      vocab_size=VOCAB, min_frequency=2, special_tokens=specials,
      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)

  def texts():
    n = 0
    for _, t in train:
      if n >= max_bytes:
        return
      n += len(t)
      yield t

  tok.train_from_iterator(texts(), trainer=trainer)
  assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
  for i, s in enumerate(SPECIALS):
    assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
  return tok


def tokenizer_config(max_len):
  return {
      "add_bos_token": False,
      "add_eos_token": False,
      "add_prefix_space": False,
      "added_tokens_decoder": {
          str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                   "single_word": False, "special": True}
          for i, s in enumerate(SPECIALS)
      },
      "bos_token": None,
      "chat_template": CHAT_TEMPLATE,
      "clean_up_tokenization_spaces": False,
      "eos_token": "<|im_end|>",
      "model_max_length": max_len,
      "pad_token": "<|endoftext|>",
      "tokenizer_class": "PreTrainedTokenizerFast",
      "unk_token": None,
  }


def encode_docs(tok, docs, chunk=4096):
  """One uint16 token stream: each document followed by <|endoftext|>."""
  enc = getattr(tok, "encode_batch_fast", tok.encode_batch)
  pieces = []
  sep = np.array([EOT_ID], dtype=np.uint16)
  for i in range(0, len(docs), chunk):
    batch = [t for _, t in docs[i:i + chunk]]
    for e in enc(batch, add_special_tokens=False):
      pieces.append(np.asarray(e.ids, dtype=np.uint16))
      pieces.append(sep)
  return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.uint16)


# -------------------------------------------------------------------------------- training


def sample_batch(data, batch, seq, gen):
  starts = torch.randint(0, data.numel() - seq - 1, (batch,), device=data.device, generator=gen)
  idx = starts[:, None] + torch.arange(seq + 1, device=data.device)[None, :]
  w = data[idx].long()
  return w[:, :-1], w[:, 1:]


def lm_loss(model, x, y, autocast):
  with autocast():
    logits = model(input_ids=x, use_cache=False).logits
  return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))


@torch.no_grad()
def eval_loss(model, data, seq, max_windows, batch, autocast):
  """Mean next-token loss over the first non-overlapping windows of the stream."""
  model.eval()
  n = min(max_windows, (data.numel() - 1) // seq)
  total, count = 0.0, 0
  for b in range(0, n, batch):
    k = min(batch, n - b)
    starts = torch.arange(b, b + k, device=data.device) * seq
    idx = starts[:, None] + torch.arange(seq + 1, device=data.device)[None, :]
    w = data[idx].long()
    loss = lm_loss(model, w[:, :-1], w[:, 1:], autocast)
    total += loss.item() * k * seq
    count += k * seq
  model.train()
  return total / max(count, 1), count


def train_model(name, model, data, args, lr, seconds, steps_override, autocast, device):
  model.to(device)
  model.train()
  decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
  no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
  opt_kwargs = dict(lr=lr, betas=(0.9, 0.95), eps=1e-8)
  if device.type == "cuda":
    opt_kwargs["fused"] = True
  opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                           {"params": no_decay, "weight_decay": 0.0}], **opt_kwargs)
  gen = torch.Generator(device=device)
  gen.manual_seed(args.seed)
  warmup = args.warmup if steps_override is None else max(1, min(args.warmup, steps_override // 5))
  calib = 25
  total_steps = steps_override  # fixed after calibration when None
  nparams = sum(p.numel() for p in model.parameters())
  log(f"[{name}] {nparams / 1e6:.2f} M parameters, lr {lr}, batch {args.batch}x{args.seq}, "
      f"budget {seconds:.0f} s" + (f", steps {steps_override}" if steps_override else ""))

  def lr_at(step):
    if step < warmup:
      return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, total_steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, t))))

  def sync():
    if device.type == "cuda":
      torch.cuda.synchronize()

  losses = []
  recent = torch.zeros((), device=device)
  recent_n = 0
  t0 = time.time()
  t_calib = None
  step = 0
  while total_steps is None or step < total_steps:
    if total_steps is None and step == 5:
      sync()
      t_calib = time.time()
    if total_steps is None and step == 5 + calib:
      sync()
      per_step = (time.time() - t_calib) / calib
      total_steps = max(step + 1, int((seconds - (time.time() - t0)) / per_step) + step)
      log(f"[{name}] {per_step * 1000:.1f} ms/step -> {total_steps} steps")
    for g in opt.param_groups:
      g["lr"] = lr_at(step)
    x, y = sample_batch(data, args.batch, args.seq, gen)
    loss = lm_loss(model, x, y, autocast)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    recent += loss.detach()
    recent_n += 1
    step += 1
    if step % args.log_every == 0 or step == total_steps:
      avg = (recent / recent_n).item()
      losses.append((step, avg))
      recent.zero_()
      recent_n = 0
      el = time.time() - t0
      log(f"[{name}] step {step}/{total_steps} loss {avg:.4f} lr {lr_at(step - 1):.2e} "
          f"{step * args.batch * args.seq / el / 1e3:.0f} k tok/s")
  sync()
  elapsed = time.time() - t0
  return {"steps": step, "seconds": elapsed, "tokens": step * args.batch * args.seq,
          "params": nparams, "last_logged_train_loss": losses[-1][1] if losses else None}


# ---------------------------------------------------------------------------------- saving


def save_tokenizer(tok, folder, max_len):
  tok.save(os.path.join(folder, "tokenizer.json"))
  with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
    json.dump(tokenizer_config(max_len), f, indent=2, ensure_ascii=False)
    f.write("\n")


def save_generation_config(folder):
  gc = {"bos_token_id": EOT_ID, "eos_token_id": [IM_END_ID, EOT_ID], "pad_token_id": EOT_ID,
        "do_sample": False, "transformers_version": transformers.__version__}
  with open(os.path.join(folder, "generation_config.json"), "w") as f:
    json.dump(gc, f, indent=2)
    f.write("\n")


def classic_config(folder):
  """Rewrites config.json in the layout most published Llama checkpoints use."""
  path = os.path.join(folder, "config.json")
  with open(path) as f:
    cfg = json.load(f)
  rope = cfg.pop("rope_parameters", None) or {}
  cfg.pop("dtype", None)
  cfg["rope_theta"] = rope.pop("rope_theta", 10000.0)
  cfg["rope_scaling"] = rope if rope.get("rope_type", "default") != "default" else None
  cfg["torch_dtype"] = "bfloat16"
  with open(path, "w") as f:
    json.dump(dict(sorted(cfg.items())), f, indent=2)
    f.write("\n")


def save_model(model, folder, shards):
  if os.path.exists(folder):
    shutil.rmtree(folder)
  os.makedirs(folder)
  model = model.to(torch.bfloat16).cpu()
  model.config.use_cache = True
  nbytes = sum(p.numel() * p.element_size() for p in model.state_dict().values())
  if shards > 1:
    # The largest tensors (embeddings, lm_head) are well under this, so the greedy split gives
    # exactly `shards` files.
    model.save_pretrained(folder, max_shard_size=int(nbytes / shards * 1.15))
  else:
    model.save_pretrained(folder)
  st = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
  if shards > 1:
    assert len(st) == shards, st
    assert os.path.exists(os.path.join(folder, "model.safetensors.index.json"))
  else:
    assert st == ["model.safetensors"], st
  # Our own generation config (eos = [<|im_end|>, <|endoftext|>]) replaces the derived one.
  save_generation_config(folder)


def folder_bytes(folder):
  return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


# ------------------------------------------------------------------------------------ main


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
  ap.add_argument("--steps", type=int, default=None, help="target steps (default: by time)")
  ap.add_argument("--draft-steps", type=int, default=None,
                  help="draft steps (default: --steps, or by time)")
  ap.add_argument("--time-budget", type=float, default=540,
                  help="seconds for the whole script; the target gets what is left")
  ap.add_argument("--target-max-seconds", type=float, default=420)
  ap.add_argument("--draft-seconds", type=float, default=70)
  ap.add_argument("--max-bytes", type=float, default=None,
                  help="corpus cap in bytes (default 300e6 on GPU, 8e6 on CPU)")
  ap.add_argument("--max-file-bytes", type=int, default=256 * 1024)
  ap.add_argument("--tok-train-bytes", type=float, default=80e6)
  ap.add_argument("--heldout-mod", type=int, default=100)
  ap.add_argument("--heldout-sample-bytes", type=int, default=48 * 1024)
  ap.add_argument("--batch", type=int, default=None, help="default 128 on GPU, 4 on CPU")
  ap.add_argument("--seq", type=int, default=512)
  ap.add_argument("--lr", type=float, default=2e-3)
  ap.add_argument("--draft-lr", type=float, default=4e-3)
  ap.add_argument("--warmup", type=int, default=200)
  ap.add_argument("--log-every", type=int, default=200)
  ap.add_argument("--eval-windows", type=int, default=None, help="default 512 GPU, 8 CPU")
  ap.add_argument("--seed", type=int, default=1234)
  ap.add_argument("--out-dir", default=os.path.join(REPO, "models"))
  ap.add_argument("--golden-dir", default=os.path.join(REPO, "tests", "data", "golden"))
  args = ap.parse_args()
  cmdline = " ".join(["python3 tools/train_tiny_model.py"] + sys.argv[1:])

  device = torch.device(args.device)
  gpu = device.type == "cuda"
  if args.max_bytes is None:
    args.max_bytes = 300e6 if gpu else 8e6
  if args.batch is None:
    args.batch = 128 if gpu else 4
  if args.eval_windows is None:
    args.eval_windows = 512 if gpu else 8
  if args.draft_steps is None:
    args.draft_steps = args.steps
  if not gpu:
    args.log_every = min(args.log_every, 1)
  torch.manual_seed(args.seed)
  if gpu:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    hw = torch.cuda.get_device_name(device)
  else:
    hw = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} threads)"

  def autocast():
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)

  log(f"python {platform.python_version()}, torch {torch.__version__}, transformers "
      f"{transformers.__version__}, tokenizers {tokenizers.__version__}, device {hw}")
  log(f"args: {vars(args)}")

  # Data.
  train, held = read_corpus(int(args.max_bytes), args.max_file_bytes, args.heldout_mod)
  sample = heldout_sample(held, args.heldout_sample_bytes, 6000)
  os.makedirs(args.golden_dir, exist_ok=True)
  with open(os.path.join(args.golden_dir, "heldout.txt"), "w", encoding="utf-8") as f:
    f.write(sample)
  log(f"heldout.txt: {len(sample.encode('utf-8'))} bytes")

  tok = train_tokenizer(train, args.tok_train_bytes)
  log(f"tokenizer trained (vocab {tok.get_vocab_size()})")
  train_ids = encode_docs(tok, train)
  held_ids = encode_docs(tok, held)
  train_chars = sum(len(t) for _, t in train)
  log(f"tokens: train {train_ids.size / 1e6:.2f} M ({train_chars / max(1, train_ids.size):.2f} "
      f"chars/token), held-out {held_ids.size / 1e6:.3f} M")
  del train
  train_t = torch.from_numpy(train_ids.astype(np.int32)).to(device)
  held_t = torch.from_numpy(held_ids.astype(np.int32)).to(device)

  # Models.
  target_cfg = LlamaConfig(
      vocab_size=VOCAB, hidden_size=384, num_hidden_layers=6, num_attention_heads=6,
      num_key_value_heads=2, intermediate_size=1024, hidden_act="silu",
      tie_word_embeddings=False, rms_norm_eps=1e-5, rope_theta=10000.0,
      max_position_embeddings=1024,
      rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0, "original_max_position_embeddings": 256},
      bos_token_id=EOT_ID, eos_token_id=IM_END_ID, pad_token_id=EOT_ID)
  draft_cfg = Qwen2Config(
      vocab_size=VOCAB, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
      num_key_value_heads=2, intermediate_size=384, hidden_act="silu",
      tie_word_embeddings=True, rms_norm_eps=1e-6, rope_theta=10000.0,
      max_position_embeddings=1024, use_sliding_window=False,
      bos_token_id=EOT_ID, eos_token_id=IM_END_ID, pad_token_id=EOT_ID)
  for cfg in (target_cfg, draft_cfg):
    cfg._attn_implementation = "sdpa"

  stats = {}
  results = {}
  for name, cfg, cls, lr, steps, shards in (
      ("tiny-llama", target_cfg, LlamaForCausalLM, args.lr, args.steps, 2),
      ("tiny-draft", draft_cfg, Qwen2ForCausalLM, args.draft_lr, args.draft_steps, 1)):
    torch.manual_seed(args.seed)
    model = cls(cfg)
    log(f"[{name}] rope: {getattr(model.config, 'rope_parameters', None)}")
    if name == "tiny-llama":
      # Leave time for the draft, the evaluations and saving.
      left = args.time_budget - (time.time() - T_START) - args.draft_seconds - 40
      seconds = max(10.0, min(args.target_max_seconds, left))
    else:
      seconds = args.draft_seconds
    st = train_model(name, model, train_t, args, lr, seconds, steps, autocast, device)
    st["train_eval_loss"], n_tr = eval_loss(model, train_t, args.seq, args.eval_windows,
                                            args.batch, autocast)
    st["val_loss"], n_val = eval_loss(model, held_t, args.seq, args.eval_windows, args.batch,
                                      autocast)
    st["eval_tokens"] = n_val
    log(f"[{name}] done: {st['steps']} steps, {st['tokens'] / 1e6:.1f} M tokens, "
        f"{st['seconds']:.0f} s; train loss {st['train_eval_loss']:.4f} "
        f"(last logged {st['last_logged_train_loss']:.4f}), held-out loss {st['val_loss']:.4f} "
        f"(ppl {math.exp(st['val_loss']):.2f}, {n_val} tokens)")
    folder = os.path.join(args.out_dir, name)
    save_model(model, folder, shards)
    if name == "tiny-llama":
      classic_config(folder)
    else:
      with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
      c["torch_dtype"] = "bfloat16"
      with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    save_tokenizer(tok, folder, 1024)
    st["bytes"] = folder_bytes(folder)
    st["files"] = sorted(os.listdir(folder))
    log(f"[{name}] saved {folder}: {st['bytes'] / 1e6:.2f} MB, {st['files']}")
    stats[name] = st
    del model
    if gpu:
      torch.cuda.empty_cache()

  total_time = time.time() - T_START
  write_readme(args, stats, cmdline, hw, total_time, train_ids.size, held_ids.size,
               train_chars)
  with open(os.path.join(args.out_dir, "training_log.txt"), "w") as f:
    f.write("\n".join(LOG_LINES) + "\n")
  log(f"all done in {total_time:.0f} s")


def write_readme(args, stats, cmdline, hw, total_time, ntrain, nheld, train_chars):
  date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  t, d = stats["tiny-llama"], stats["tiny-draft"]

  def row(name, s):
    return (f"| {name} | {s['params'] / 1e6:.2f} M | {s['steps']} | {s['tokens'] / 1e6:.0f} M "
            f"| {s['seconds']:.0f} s | {s['last_logged_train_loss']:.3f} "
            f"| {s['train_eval_loss']:.3f} | {s['val_loss']:.3f} "
            f"| {math.exp(s['val_loss']):.1f} | {s['bytes'] / 1e6:.1f} MB |")

  text = f"""# Bundled models

Two small models trained from scratch by `tools/train_tiny_model.py`, so that jisu has a model
to run (and golden tests have fixtures) without downloading anything. They write plausible
Python-ish text and nothing more: they exist to exercise the code paths, not to be useful.

| folder | architecture | what it covers |
|---|---|---|
| `tiny-llama/` | `LlamaForCausalLM`: hidden 384, 6 layers, 6 heads, 2 KV heads (GQA), MLP 1024, untied embeddings, RMSNorm eps 1e-5, rope theta 10000 with Llama-3 rope scaling (factor 4, low/high freq factors 1/4, original context 256), max positions 1024 | sharded safetensors (2 files + `model.safetensors.index.json`), the classic `config.json` layout (`rope_theta`, `rope_scaling`, `torch_dtype`) |
| `tiny-draft/` | `Qwen2ForCausalLM`: hidden 128, 2 layers, 4 heads, 2 KV heads, MLP 384, QKV bias, tied embeddings, RMSNorm eps 1e-6 | one `model.safetensors` without `lm_head.weight`, the transformers-5 `config.json` layout (`rope_parameters`, `dtype`; `torch_dtype` added too); meant as a speculative-decoding draft for tiny-llama |

Both are stored in bfloat16 and share one tokenizer (`tokenizer.json`, identical in both
folders): byte-level BPE with a vocabulary of {VOCAB}, trained with HF `tokenizers`
{tokenizers.__version__} on the training split; pre-tokenizer = Split(Llama-3 regex, isolated)
then ByteLevel (no prefix space, no regex); ByteLevel decoder and post-processor; no BOS is
added. Special tokens: `<|endoftext|>` = 0 (document separator in training, pad), `<|im_start|>`
= 1, `<|im_end|>` = 2 (EOS). `tokenizer_config.json` carries a ChatML chat template with a
default system message. `generation_config.json` has `eos_token_id` [2, 0].

## Training data

The `*.py`, `*.md`, `*.rst` and `*.txt` files (64 B to {args.max_file_bytes // 1024} KiB,
UTF-8, deduplicated by content) of the training machine's Python site-packages, taken in the
order of the SHA-1 of their path relative to site-packages until {args.max_bytes / 1e6:.0f} MB.
A file whose path hash is 0 mod {args.heldout_mod} is held out. Training split: {ntrain / 1e6:.1f} M
tokens ({train_chars / max(1, ntrain):.2f} characters per token); held-out split: {nheld / 1e3:.0f} k
tokens. `tests/data/golden/heldout.txt` is a {os.path.getsize(os.path.join(args.golden_dir, "heldout.txt")) // 1024} KiB sample
of the held-out files (up to 6000 characters of each, files that contain special-token text
skipped).

## Training

Sequence length {args.seq}, batch {args.batch} sequences (random windows of the token stream,
documents separated by `<|endoftext|>`), AdamW (betas 0.9/0.95, weight decay 0.1 on matrices,
gradient clipping 1.0), linear warmup {args.warmup} steps then cosine decay to 10 %, bf16
autocast over fp32 weights, SDPA attention, no torch.compile. Peak learning rate {args.lr}
(tiny-llama) and {args.draft_lr} (tiny-draft). The step count was fixed from the time of the
first steps so that the run fits its time budget.

Losses are mean next-token cross-entropy in nats. "Last steps": the training loss averaged over
the last logging interval (at most {args.log_every} steps). "Train" and "held-out": measured after training over the first
{args.eval_windows} non-overlapping {args.seq}-token windows of each split's token stream (bf16
autocast); ppl = exp(held-out loss).

| model | parameters | steps | tokens seen | training time | loss, last steps | train loss | held-out loss | held-out ppl | size on disk |
|---|---|---|---|---|---|---|---|---|---|
{row("tiny-llama", t)}
{row("tiny-draft", d)}

- Command: `{cmdline}` (whole run, data preparation included: {total_time:.0f} s)
- Hardware: {hw}; Python {platform.python_version()}, torch {torch.__version__}, transformers
  {transformers.__version__}, tokenizers {tokenizers.__version__}
- Date: {date}
- Log: `training_log.txt`

The golden fixtures made from these models (`tests/data/golden/`) are written by
`tools/make_golden.py`.
"""
  with open(os.path.join(args.out_dir, "README.md"), "w") as f:
    f.write(text)


if __name__ == "__main__":
  main()
