#!/usr/bin/env python3
"""Writes tests/data/ops/kquants/{q2_k,q3_k,q4_k,q5_k,q6_k,q5_0}.{blocks,f32}: random blocks and their
dequantization by the `gguf` Python package (gguf.quants.dequantize), the reference that
src/ops/quant_k_test.cc compares DequantizeRow (and the Q5_0 -> Q8_0 widening) with, bit for bit.

Block bytes are uniformly random except the f16 scale fields, which are drawn as finite
values of both signs (random bits could be NaN/inf, which says nothing about the layout).

Usage: .venv/bin/pip install gguf numpy && .venv/bin/python tools/make_kquant_fixtures.py
"""
import json
import pathlib

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "ops" / "kquants"
NUM_BLOCKS = 16

# (type, block bytes, byte offsets of f16 scale fields, values per block)
TYPES = {
    "q2_k": (T.Q2_K, 84, [80, 82], 256),
    "q3_k": (T.Q3_K, 110, [108], 256),
    "q4_k": (T.Q4_K, 144, [0, 2], 256),
    "q5_k": (T.Q5_K, 176, [0, 2], 256),
    "q6_k": (T.Q6_K, 210, [208], 256),
    "q5_0": (T.Q5_0, 22, [0], 32),
}


def main() -> None:
    rng = np.random.default_rng(20261201)
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {"num_blocks": NUM_BLOCKS, "generator": "tools/make_kquant_fixtures.py", "types": {}}
    for name, (qtype, block_bytes, f16_offsets, block_values) in TYPES.items():
        blocks = rng.integers(0, 256, size=(NUM_BLOCKS, block_bytes), dtype=np.uint8)
        for off in f16_offsets:
            scale = (rng.standard_normal(NUM_BLOCKS) * 0.05).astype(np.float16)
            blocks[:, off:off + 2] = scale.view(np.uint8).reshape(NUM_BLOCKS, 2)
        values = dequantize(blocks.reshape(-1), qtype).astype(np.float32)
        assert values.shape == (NUM_BLOCKS * block_values,)
        (OUT / f"{name}.blocks").write_bytes(blocks.tobytes())
        (OUT / f"{name}.f32").write_bytes(values.astype("<f4").tobytes())
        meta["types"][name] = {"ggml_type": int(qtype), "block_bytes": block_bytes}
    (OUT / "fixtures.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
