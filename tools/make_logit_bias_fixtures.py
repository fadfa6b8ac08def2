#!/usr/bin/env python3
"""Generates tests/data/sampling/logit_bias.json: OpenAI's logit_bias as transformers applies it.

The bias goes first, through transformers' SequenceBiasLogitsProcessor with one-token sequences
(what OpenAI's and vLLM's logit_bias mean: the bias is added to the token's logit), then the
same processors as tools/make_sampling_fixtures.py (penalties, greedy, temperature, top-k,
top-p, min-p), whose helpers are reused so the order is the one the sampler fixtures check.

Run: /work/refenv/bin/python tools/make_logit_bias_fixtures.py (torch, transformers)
"""

import json
import os
import sys

import numpy as np
import torch
from transformers.generation.logits_process import SequenceBiasLogitsProcessor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sampling_fixtures import OUT_DIR, emit_value, f32, hf_filter, make_params, random_logits, robust  # noqa: E402


def biased(logits, bias):
    scores = torch.tensor([logits], dtype=torch.float32)
    proc = SequenceBiasLogitsProcessor(sequence_bias=[[[i], b] for i, b in bias])
    ids = torch.tensor([[0]], dtype=torch.long)
    return [float(v) for v in proc(ids, scores)[0]]


def main():
    rng = np.random.default_rng(20261206)
    cases = []
    while len(cases) < 60:
        vocab = int(rng.choice([8, 32, 100]))
        logits = random_logits(rng, vocab, float(rng.choice([1.0, 3.0])), None, 0.0)
        n = int(rng.integers(1, 6))
        ids = [int(i) for i in rng.choice(vocab, size=n, replace=False)]
        bias = [(i, f32(float(rng.choice([-100.0, 100.0, -5.5, 3.25, 0.5, -0.75])))) for i in ids]
        p = make_params(rng, vocab)
        generated = [int(t) for t in rng.integers(0, vocab, size=int(rng.integers(0, 4)))]
        prompt = [int(t) for t in rng.integers(0, vocab, size=2)]
        after = biased(logits, bias)
        if not robust(after, prompt, generated, p):
            continue
        res = hf_filter(after, prompt, generated, p)
        case = {"vocab": vocab, "logits": [emit_value(v) for v in logits],
                "logit_bias": [[i, b] for i, b in bias], "prompt": prompt,
                "generated": generated, "params": p}
        if res[0] == "greedy":
            case["greedy"] = res[1]
        else:
            mask, probs = res[0], res[1]
            case["survivors"] = [[int(i), float("%.9g" % float(probs[i]))]
                                 for i in range(vocab) if bool(mask[i])]
        cases.append(case)
    meta = {"generator": "tools/make_logit_bias_fixtures.py",
            "transformers": __import__("transformers").__version__, "torch": torch.__version__}
    with open(os.path.join(OUT_DIR, "logit_bias.json"), "w") as f:
        json.dump(dict(meta, cases=cases), f, separators=(",", ":"))
    print(len(cases), "logit_bias cases")


if __name__ == "__main__":
    main()
