#!/usr/bin/env python3
"""Generates the quantization fixtures under tests/data/ops/ with the reference quantizers of
the Python `gguf` package (gguf.quants), so src/ops/quant_test.cc can require byte-identical
quantization and exact dequantization.

Usage: /work/venv/bin/python tools/make_quant_fixtures.py [out_dir]

One file per type, <type>.bin, little endian:
  char[4] "JQF1"; u32 ggml type id; u32 rows; u32 cols; u32 row_bytes
  f32 src[rows * cols]            the input rows
  u8  quant[rows * row_bytes]     gguf.quants.quantize(src, type)
  f32 deq[rows * cols]            gguf.quants.dequantize(quant, type)

Also writes elementwise.json: inputs and PyTorch float32 outputs of the Hugging Face Llama
building blocks (LlamaRMSNorm, SiLU(gate) * up, softmax, apply_rotary_pos_emb with
LlamaRotaryEmbedding's cos/sin), for src/ops/elementwise_test.cc.

Rows cover random data at several scales plus edge cases: all zeros, constant rows (positive
and negative), negative-only, huge magnitudes (f16 scale overflows to inf), tiny magnitudes
(scales that are f16 subnormal or flush to zero), values placed exactly on rounding ties, a
single outlier per block, and repeated maxima (first-index tie-breaking). Mixed +0.0/-0.0
blocks are left out on purpose: numpy's min/max over signed zeros depends on its SIMD code
path, so the reference itself is not deterministic there.
"""

import os
import struct
import sys

import json

import numpy as np
from gguf import quants
from gguf.constants import GGMLQuantizationType as T

COLS = 128  # four 32-element blocks per row
SEED = 20240601


def block_rows(rng):
    """Rows of COLS floats; each a list of 4 blocks of 32 (some rows mix block kinds)."""
    rows = []

    def add(r):
        rows.append(np.asarray(r, dtype=np.float32).reshape(COLS))

    for scale in (1.0, 0.02, 3e3):
        for _ in range(4):
            add(rng.standard_normal(COLS) * scale)
    add(rng.uniform(-1, 1, COLS))
    add(np.zeros(COLS))
    add(np.full(COLS, 0.75))
    add(np.full(COLS, -3.5))
    add(-np.abs(rng.standard_normal(COLS)))
    add(np.abs(rng.standard_normal(COLS)) + 5.0)
    add(rng.standard_normal(COLS) * 1e7)  # Q8_0 d = amax/127 > 65504: f16 scale is inf
    add(rng.standard_normal(COLS) * 1e-6)  # f16 subnormal scales
    add(rng.standard_normal(COLS) * 1e-9)  # scales that round to zero in f16
    add(rng.standard_normal(COLS) * 6e4)
    # Exact ties for the Q8_0 rounding (round half away from zero): d a power of two, values
    # (n + 0.5) * d with the block max 127 * d.
    d = 2.0**-4
    t = (rng.integers(-126, 126, COLS) + 0.5) * d
    t[::32] = 127 * d
    t[5::32] = -127 * d
    add(t)
    # Exact ties for Q4_0/Q4_1 (trunc(x * id + 8.5) and trunc((x - min) * id + 0.5)).
    d = 2.0**-3
    t = (rng.integers(-8, 8, COLS) + 0.5) * d
    t[::32] = -8 * d
    add(t)
    t = rng.integers(0, 31, COLS) * 0.5 * (2.0**-2)
    t[::32] = 0.0
    t[1::32] = 15 * 2.0**-2
    add(t)
    # Integer grids, which land on exact quantization levels.
    add(rng.integers(-8, 8, COLS).astype(np.float32))
    add(rng.integers(-127, 128, COLS).astype(np.float32))
    # One outlier per block; equal magnitudes of both signs (argmax takes the first).
    t = rng.standard_normal(COLS) * 0.01
    t[7::32] = 50.0
    add(t)
    t = rng.standard_normal(COLS) * 0.1
    t[3::32] = -2.0
    t[9::32] = 2.0
    add(t)
    t = rng.standard_normal(COLS) * 0.1
    t[3::32] = 2.0
    t[9::32] = -2.0
    add(t)
    return rows


def float_rows(rng):
    rows = block_rows(rng)
    # Conversion edge cases for f16 / bf16: overflow and its tie, subnormals, ties to even, inf.
    special = [
        65504.0, 65519.0, 65520.0, 65536.0, 1e6, -65520.0, np.inf, -np.inf,
        2.0**-24, 2.0**-25, 2.0**-25 * 1.0000001, 3 * 2.0**-25, 2.0**-14, 2.0**-14 - 2.0**-25,
        1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8,
        3.4e38, -3.4e38, 1e-40, -1e-45, 0.0, -0.0, 1.0, -1.0, np.float32(np.pi), 1e-30,
        np.nan,
    ]
    t = np.zeros(COLS, dtype=np.float32)
    t[: len(special)] = special
    t[len(special):] = rng.standard_normal(COLS - len(special)) * 1e3
    rows.append(t)
    # Random bit patterns (finite), many exact ties in low bits.
    bits = rng.integers(0, 2**32, COLS, dtype=np.uint64).astype(np.uint32)
    bits &= np.uint32(0xFFFFF000)
    v = bits.view(np.float32)
    v = np.where(np.isfinite(v), v, np.float32(1.5))
    rows.append(v.astype(np.float32))
    return rows


def write(path, qtype, src):
    src = np.ascontiguousarray(src, dtype=np.float32)
    rows, cols = src.shape
    q = quants.quantize(src, qtype)
    qb = np.ascontiguousarray(q).view(np.uint8).reshape(rows, -1)
    deq = quants.dequantize(qb, qtype).astype(np.float32).reshape(rows, cols)
    with open(path, "wb") as f:
        f.write(b"JQF1")
        f.write(struct.pack("<IIII", int(qtype), rows, cols, qb.shape[1]))
        f.write(src.astype("<f4").tobytes())
        f.write(qb.tobytes())
        f.write(deq.astype("<f4").tobytes())
    print(f"{path}: {rows} x {cols}, {qb.shape[1]} bytes/row")


def f32list(t):
    # Python floats print the shortest repr that round-trips the exact float32 value; JSON has
    # no infinities, so those are written as the strings "inf" / "-inf".
    def enc(v):
        v = float(v)
        return v if np.isfinite(v) else ("inf" if v > 0 else "-inf")
    return [enc(v) for v in np.asarray(t, dtype=np.float32).ravel()]


def write_elementwise(path):
    import torch
    from transformers.models.llama.modeling_llama import (LlamaRMSNorm, apply_rotary_pos_emb)

    g = torch.Generator().manual_seed(SEED)
    cases = {"rmsnorm": [], "silu_mul": [], "softmax": [], "rope": []}
    for n, eps, scale in ((576, 1e-5, 3.0), (2048, 1e-6, 0.01), (37, 1e-5, 100.0)):
        x = torch.randn(n, generator=g) * scale
        norm = LlamaRMSNorm(n, eps=eps)
        with torch.no_grad():
            norm.weight.copy_(torch.randn(n, generator=g) * 0.5 + 1.0)
            y = norm(x[None])[0]
        cases["rmsnorm"].append({"eps": eps, "x": f32list(x), "weight": f32list(norm.weight.detach()),
                                 "out": f32list(y)})
    for n in (1536, 40):
        gate = torch.randn(n, generator=g) * 4
        gate[:6] = torch.tensor([0.0, -0.0, 30.0, -30.0, 100.0, -100.0])
        up = torch.randn(n, generator=g)
        y = torch.nn.functional.silu(gate) * up
        cases["silu_mul"].append({"gate": f32list(gate), "up": f32list(up), "out": f32list(y)})
    for n in (1, 100, 1000):
        x = torch.randn(n, generator=g) * 5
        if n >= 100:
            x[10:20] = float("-inf")  # masked positions
            x[3] = 80.0
        y = torch.softmax(x, dim=-1)
        cases["softmax"].append({"x": f32list(x), "out": f32list(y)})
    for head_dim, heads, base in ((64, 3, 10000.0), (128, 2, 500000.0)):
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim))
        for pos in (0, 1, 37, 4095, 100000):
            q = torch.randn(1, heads, 1, head_dim, generator=g)
            # LlamaRotaryEmbedding.forward, attention_scaling = 1.
            freqs = torch.tensor([[pos]])[..., None].float() * inv_freq.float()
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos() * 1.0, emb.sin() * 1.0
            out, _ = apply_rotary_pos_emb(q, q, cos, sin)
            # Interleaved (GPT-J / GGUF llama) pairs (2i, 2i+1), same float32 formulas.
            qi = q.reshape(heads, head_dim // 2, 2)
            c, s = cos[0, 0, : head_dim // 2], sin[0, 0, : head_dim // 2]
            a, b = qi[..., 0], qi[..., 1]
            inter = torch.stack((a * c - b * s, b * c + a * s), dim=-1)
            cases["rope"].append({"head_dim": head_dim, "heads": heads, "position": pos,
                                  "inv_freq": f32list(inv_freq), "x": f32list(q),
                                  "half_split": f32list(out), "interleaved": f32list(inter)})
    with open(path, "w") as f:
        json.dump(cases, f, separators=(",", ":"))
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "tests", "data", "ops")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    with np.errstate(all="ignore"):
        blocks = np.stack(block_rows(rng))
        floats = np.stack(float_rows(rng))
        write(os.path.join(out, "q8_0.bin"), T.Q8_0, blocks)
        write(os.path.join(out, "q4_0.bin"), T.Q4_0, blocks)
        write(os.path.join(out, "q4_1.bin"), T.Q4_1, blocks)
        write(os.path.join(out, "f16.bin"), T.F16, floats)
        write(os.path.join(out, "bf16.bin"), T.BF16, floats)
    write_elementwise(os.path.join(out, "elementwise.json"))


if __name__ == "__main__":
    main()
