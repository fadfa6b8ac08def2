#!/usr/bin/env python3
"""Generates tests/data/sampling/*.json: reference sampling distributions for src/sampling.

For random logit rows and many parameter combinations, applies Hugging Face transformers'
logits processors exactly as `generate()` orders them:
  RepetitionPenaltyLogitsProcessor (prompt + generated ids)
  -> frequency / presence penalties (OpenAI / vLLM formula; transformers has no processor for
     them, so they are written out here: logits -= f * count; logits -= p * (count > 0),
     generated ids only, float32)
  -> greedy: argmax (torch.argmax; ties to the lowest id)
  -> TemperatureLogitsWarper -> TopKLogitsWarper -> TopPLogitsWarper -> MinPLogitsWarper
and records which tokens survive (score != -inf) and their softmax probabilities.

Cases whose survivor set would flip under tiny perturbations of top_p / min_p (float rounding
differences between torch and our C++ would be legitimate there) or that have a tie straddling
the top-p cut (torch.sort's order decides it) are re-drawn, so the fixtures only test what the
semantics determine.

Also writes log_softmax / top-n log-probability references (torch.log_softmax + torch.topk).

Run: /work/venv/bin/python tools/make_sampling_fixtures.py
"""

import json
import math
import os

import numpy as np
import torch
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "sampling")
NEG_INF = float("-inf")


def f32(x):
    """A short Python float whose nearest float32 is the float32 nearest to x (so the JSON stays
    small and both torch and the C++ test read back the same float32)."""
    return float(str(np.float32(x)))


def hf_filter(logits, prompt, generated, p):
    """Returns (survivor mask, probabilities) or ("greedy", id) following transformers."""
    scores = torch.tensor([logits], dtype=torch.float32)
    ids = torch.tensor([prompt + generated], dtype=torch.long)
    if p["repetition_penalty"] != 1.0:
        scores = RepetitionPenaltyLogitsProcessor(penalty=p["repetition_penalty"])(ids, scores)
    freq = torch.tensor(p["frequency_penalty"], dtype=torch.float32)
    pres = torch.tensor(p["presence_penalty"], dtype=torch.float32)
    if p["frequency_penalty"] != 0.0 or p["presence_penalty"] != 0.0:
        counts = torch.zeros_like(scores)
        for t in generated:
            counts[0, t] += 1
        scores = scores - freq * counts
        scores = scores - pres * (counts > 0).to(torch.float32)
    if p["temperature"] == 0.0:
        return "greedy", int(torch.argmax(scores[0]).item())
    if p["temperature"] != 1.0:
        scores = TemperatureLogitsWarper(p["temperature"])(ids, scores)
    if p["top_k"] > 0:
        scores = TopKLogitsWarper(top_k=p["top_k"])(ids, scores)
    if p["top_p"] < 1.0:
        scores = TopPLogitsWarper(top_p=p["top_p"])(ids, scores)
    if p["min_p"] > 0.0:
        scores = MinPLogitsWarper(min_p=p["min_p"])(ids, scores)
    mask = scores[0] != NEG_INF
    probs = torch.softmax(scores[0], dim=-1)
    return mask, probs, scores[0]


def robust(logits, prompt, generated, p):
    """True when the survivor set does not hinge on rounding or on tie order at the top-p cut."""
    base = hf_filter(logits, prompt, generated, p)
    if base[0] == "greedy":
        return True  # penalties are the same IEEE float32 operations in C++: ties stay ties
    mask = base[0]
    for dp in (-2e-5, 2e-5):
        for dm in (0.9999, 1.0001):
            q = dict(p)
            if q["top_p"] < 1.0:
                q["top_p"] = min(1.0 - 1e-6, max(1e-6, q["top_p"] + dp))
            if q["min_p"] > 0.0:
                q["min_p"] = min(1.0, q["min_p"] * dm)
            if not torch.equal(mask, hf_filter(logits, prompt, generated, q)[0]):
                return False
    if p["top_p"] < 1.0 and not bool(mask.all()):
        # A value shared by a kept and a removed token means torch.sort's tie order decided.
        pre = hf_filter(logits, prompt, generated, dict(p, top_p=1.0, min_p=0.0, top_k=0))[2]
        removed = pre[(~mask) & (pre != NEG_INF)]
        if removed.numel() and float(removed.max()) == float(pre[mask].min()):
            return False
    return True


def random_logits(rng, vocab, scale, decimals, neg_inf_frac):
    x = rng.standard_normal(vocab) * scale
    if decimals is not None:
        x = np.round(x, decimals)
    out = [f32(v) for v in x]
    if neg_inf_frac > 0:
        for i in rng.choice(vocab, size=int(vocab * neg_inf_frac), replace=False):
            out[int(i)] = NEG_INF
    return out


def make_params(rng, vocab):
    p = {
        "temperature": float(rng.choice([0.0, 0.3, 0.7, 1.0, 1.0, 1.5])),
        "top_k": int(rng.choice([0, 0, 1, 5, 40, vocab + 10])),
        "top_p": float(rng.choice([1.0, 1.0, 0.95, 0.9, 0.5, 0.1])),
        "min_p": float(rng.choice([0.0, 0.0, 0.05, 0.2])),
        "repetition_penalty": float(rng.choice([1.0, 1.0, 1.1, 1.3, 0.8])),
        "frequency_penalty": float(rng.choice([0.0, 0.0, 0.5, -0.5, 2.0])),
        "presence_penalty": float(rng.choice([0.0, 0.0, 0.5, -1.0, 1.5])),
    }
    return {k: (f32(v) if isinstance(v, float) else v) for k, v in p.items()}


def emit_value(v):
    if v == NEG_INF:
        return "-inf"
    return v


def build_case(name, logits, prompt, generated, p):
    res = hf_filter(logits, prompt, generated, p)
    case = {
        "name": name,
        "vocab": len(logits),
        # -inf is not JSON: written as the string "-inf".
        "logits": [emit_value(v) for v in logits],
        "prompt": prompt,
        "generated": generated,
        "params": p,
    }
    if res[0] == "greedy":
        case["greedy"] = res[1]
    else:
        mask, probs, _ = res
        ids = torch.nonzero(mask).flatten().tolist()
        case["survivors"] = [[i, float("%.8g" % float(probs[i]))] for i in ids]
    return case


def sampling_cases(rng):
    cases = []
    # Each filter alone, then random combinations, over several vocab sizes and logit spreads.
    singles = [
        dict(temperature=1.0),
        dict(temperature=0.5),
        dict(temperature=2.0),
        dict(temperature=0.0),
        dict(top_k=1),
        dict(top_k=10),
        dict(top_k=200),
        dict(top_p=0.9),
        dict(top_p=0.5),
        dict(top_p=0.99),
        dict(top_p=0.01),
        dict(min_p=0.1),
        dict(min_p=0.02),
        dict(min_p=1.0),
        dict(repetition_penalty=1.3),
        dict(repetition_penalty=0.7),
        dict(frequency_penalty=0.7),
        dict(presence_penalty=-1.2),
        dict(frequency_penalty=1.0, presence_penalty=1.0),
        dict(repetition_penalty=1.2, temperature=0.0),
        dict(frequency_penalty=2.0, temperature=0.0),
        dict(top_k=20, top_p=0.8, min_p=0.05, temperature=0.8),
    ]
    defaults = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0,
                    frequency_penalty=0.0, presence_penalty=0.0)
    configs = []
    for s in singles:
        for vocab, scale in ((64, 2.0), (500, 1.0)):
            configs.append((dict(defaults, **s), vocab, scale, 3, 0.0))
    for _ in range(80):
        vocab = int(rng.choice([8, 50, 257, 600]))
        configs.append((None, vocab, float(rng.choice([0.5, 2.0, 5.0])), 3,
                        float(rng.choice([0.0, 0.0, 0.1]))))
    # Large flat rows: top-p keeps hundreds of tokens (exercises the growing sorted prefix).
    for tp in (0.5, 0.9, 0.97):
        configs.append((dict(defaults, top_p=tp), 2000, 0.3, None, 0.0))
    configs.append((dict(defaults, top_k=1500, top_p=0.95, temperature=1.5), 2000, 0.3, None, 0.0))

    for n, (params, vocab, scale, decimals, neg_inf_frac) in enumerate(configs):
        for attempt in range(100):
            p = {k: (f32(v) if isinstance(v, float) else v) for k, v in params.items()} \
                if params else make_params(rng, vocab)
            logits = random_logits(rng, vocab, scale, decimals, neg_inf_frac)
            finite = [i for i, v in enumerate(logits) if v != NEG_INF]
            prompt = [int(rng.choice(finite)) for _ in range(int(rng.integers(0, 20)))]
            # Repeats so counts > 1 matter; also ids of -inf tokens.
            generated = [int(rng.choice(finite[:max(1, len(finite) // 3)]))
                         for _ in range(int(rng.integers(0, 25)))]
            if robust(logits, prompt, generated, p):
                break
        else:
            raise RuntimeError(f"no robust draw for config {n}")
        cases.append(build_case(f"case{n}", logits, prompt, generated, p))
    return cases


def top_k_ties_case():
    """top-k with the k-th value shared: transformers keeps all tied tokens."""
    logits = [f32(v) for v in [0.5, 2.0, 1.0, 1.0, 3.0, 1.0, -1.0, 0.0]]
    p = dict(temperature=1.0, top_k=3, top_p=1.0, min_p=0.0, repetition_penalty=1.0,
             frequency_penalty=0.0, presence_penalty=0.0)
    return build_case("top_k_ties", logits, [], [], p)


def greedy_ties_case():
    logits = [f32(v) for v in [0.5, 3.0, 1.0, 3.0, 3.0]]
    p = dict(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0,
             frequency_penalty=0.0, presence_penalty=0.0)
    return build_case("greedy_ties", logits, [], [], p)


def logprob_cases(rng):
    cases = []
    for vocab, n in ((10, 3), (300, 1), (300, 5), (1000, 20), (5, 5), (7, 20)):
        logits = [f32(v) for v in rng.standard_normal(vocab) * 3.0]
        t = torch.tensor(logits, dtype=torch.float32)
        ls = torch.log_softmax(t, dim=-1)
        k = min(n, vocab)
        vals, idx = torch.topk(ls, k)
        cases.append({
            "vocab": vocab,
            "n": n,
            "logits": logits,
            "log_softmax": [float("%.8g" % float(v)) for v in ls],
            "top_ids": [int(i) for i in idx],
            "top_logprobs": [float("%.8g" % float(v)) for v in vals],
        })
    return cases


def main():
    rng = np.random.default_rng(20240611)
    os.makedirs(OUT_DIR, exist_ok=True)
    cases = sampling_cases(rng) + [top_k_ties_case(), greedy_ties_case()]
    meta = {
        "generator": "tools/make_sampling_fixtures.py",
        "transformers": __import__("transformers").__version__,
        "torch": torch.__version__,
    }
    with open(os.path.join(OUT_DIR, "distributions.json"), "w") as f:
        json.dump(dict(meta, cases=cases), f, separators=(",", ":"))
    with open(os.path.join(OUT_DIR, "logprobs.json"), "w") as f:
        json.dump(dict(meta, cases=logprob_cases(rng)), f, separators=(",", ":"))
    print(f"{len(cases)} sampling cases")


if __name__ == "__main__":
    main()
