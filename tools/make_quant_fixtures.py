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


if __name__ == "__main__":
    main()
