#!/usr/bin/env python3
"""Writes the format fixtures under tests/data/format/ with the reference Python libraries.

  small.gguf            gguf.GGUFWriter: every metadata type, arrays (incl. nested), tensors
                        in F32 / F16 / Q8_0 with known values.
  small.gguf.json       what gguf.GGUFReader reads back from it (the C++ tests compare).
  align64_vocab.gguf    general.alignment = 64 and no tensors (vocab-only file), + .json.
  small.safetensors     safetensors.torch.save_file: F32 / F16 / BF16 / I32 / I64 / F64 and a
                        zero-size tensor, with __metadata__; + small.safetensors.json.
  sharded/              two shards + model.safetensors.index.json; + sharded.json.
  fuzz seeds            copies of the tiny valid files in fuzz/corpus/{gguf,safetensors}/.

Run:  /work/venv/bin/python tools/make_format_fixtures.py
Also: tools/make_format_fixtures.py --check-gguf FILE  reads FILE (e.g. one written by jisu's
GgufWriter) with gguf.GGUFReader and compares it to small.gguf.json.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch
import gguf
from gguf import GGUFValueType as VT
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "format")
FUZZ = os.path.join(ROOT, "fuzz", "corpus")

TYPE_NAMES = {
    VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16", VT.UINT32: "u32",
    VT.INT32: "i32", VT.FLOAT32: "f32", VT.BOOL: "bool", VT.STRING: "string",
    VT.ARRAY: "array", VT.UINT64: "u64", VT.INT64: "i64", VT.FLOAT64: "f64",
}

# (key, value, type, array element type). Written in this order.
METADATA = [
    ("test.u8", 200, VT.UINT8, None),
    ("test.i8", -100, VT.INT8, None),
    ("test.u16", 60000, VT.UINT16, None),
    ("test.i16", -30000, VT.INT16, None),
    ("test.u32", 4000000000, VT.UINT32, None),
    ("test.i32", -2000000000, VT.INT32, None),
    ("test.u64_big", 2**63 + 5, VT.UINT64, None),  # does not fit int64
    ("test.u64", 123456789012, VT.UINT64, None),
    ("test.i64", -(2**40), VT.INT64, None),
    ("test.f32", 0.1, VT.FLOAT32, None),
    ("test.f64", 3.141592653589793, VT.FLOAT64, None),
    ("test.bool_true", True, VT.BOOL, None),
    ("test.bool_false", False, VT.BOOL, None),
    ("test.string", "h\u00e9llo w\u00f6rld \u2713", VT.STRING, None),
    ("test.arr_i32", [1, -2, 3], VT.ARRAY, VT.INT32),
    ("test.arr_u8", [0, 7, 255], VT.ARRAY, VT.UINT8),
    ("test.arr_u64", [1, 2**40], VT.ARRAY, VT.UINT64),
    ("test.arr_f32", [0.5, -1.25, 1e-3], VT.ARRAY, VT.FLOAT32),
    ("test.arr_bool", [True, False, True], VT.ARRAY, VT.BOOL),
    ("test.arr_str", ["a", "bc", "\u00fcn\u00ef", ""], VT.ARRAY, VT.STRING),
    ("test.arr_nested", [[1, 2], [3]], VT.ARRAY, VT.ARRAY),
    ("llama.block_count", 2, VT.UINT32, None),
    ("tokenizer.ggml.tokens", ["<s>", "</s>", "\u0120the", "x"], VT.ARRAY, VT.STRING),
]


def tensors():
    """(name, numpy data as stored, ggml type, shape outermost-first)."""
    f32 = (np.arange(6, dtype=np.float32) * 0.5 - 1.0).reshape(2, 3)
    f16 = np.array([1.0, -2.5, 65504.0, 1e-4], dtype=np.float16)
    f32_4d = np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2)
    q_src = (np.sin(np.arange(128, dtype=np.float32)) * 3.0).reshape(2, 64)
    q8 = gguf.quants.quantize(q_src, gguf.GGMLQuantizationType.Q8_0)
    return [
        ("f32.weight", f32, gguf.GGMLQuantizationType.F32, [2, 3]),
        ("f16.weight", f16, gguf.GGMLQuantizationType.F16, [4]),
        ("q8.weight", q8, gguf.GGMLQuantizationType.Q8_0, [2, 64]),
        ("f32_4d.weight", f32_4d, gguf.GGMLQuantizationType.F32, [2, 1, 2, 2]),
    ]


def field_value(field):
    """Python value of a reader field; nested arrays come back flattened from GGUFReader."""
    if field.types[0] == VT.ARRAY and field.types[-1] == VT.STRING:
        return field.contents()
    v = field.contents()
    return v


def flatten(v):
    if isinstance(v, list):
        return [y for x in v for y in flatten(x)]
    return [v]


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(a))
    return a == b


def read_gguf(path):
    """Everything GGUFReader reports about `path`, as JSON-able data."""
    r = gguf.GGUFReader(path)
    meta = []
    for key, field in r.fields.items():
        if key.startswith("GGUF."):
            continue
        entry = {"key": key, "type": TYPE_NAMES[field.types[0]]}
        if field.types[0] == VT.ARRAY:
            entry["array_type"] = TYPE_NAMES[field.types[1]]
            entry["flat_value"] = field_value(field)
        else:
            entry["value"] = field_value(field)
        meta.append(entry)
    ts = []
    for t in r.tensors:
        ts.append({
            "name": t.name,
            "dtype": t.tensor_type.name.lower(),
            "shape": [int(x) for x in reversed(t.shape)],  # GGUF ne[] reversed
            "offset": int(t.data_offset),
            "num_bytes": int(t.n_bytes),
            "hex": bytes(t.data.tobytes()).hex(),
        })
    version = int(r.fields["GGUF.version"].parts[-1][0])
    return {"version": version, "alignment": int(r.alignment), "file_size": os.path.getsize(path),
            "metadata": meta, "tensors": ts}


def write_small_gguf():
    path = os.path.join(OUT, "small.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    for key, value, vtype, sub in METADATA:
        w.add_key_value(key, value, vtype, sub_type=sub)
    for name, data, qtype, shape in tensors():
        if qtype == gguf.GGMLQuantizationType.Q8_0:
            w.add_tensor(name, data, raw_dtype=qtype)
        else:
            w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    got = read_gguf(path)
    # Cross-check the reader against what we wrote, so the JSON is not just an echo.
    by_key = {m["key"]: m for m in got["metadata"]}
    assert by_key["general.architecture"]["value"] == "llama"
    for key, value, vtype, sub in METADATA:
        m = by_key[key]
        assert m["type"] == TYPE_NAMES[vtype], key
        if vtype == VT.ARRAY:
            flat = flatten(value)
            assert len(flat) == len(m["flat_value"]), key
            assert all(close(a, b) for a, b in zip(flat, m["flat_value"])), key
            # Nested arrays: keep the structure as written (the reader flattens it).
            nested = any(isinstance(x, list) for x in value)
            m["value"] = value if nested else m["flat_value"]
        else:
            assert close(value, m["value"]), key
    for (name, data, qtype, shape), t in zip(tensors(), got["tensors"]):
        assert t["name"] == name and t["shape"] == shape, (t, shape)
        assert bytes.fromhex(t["hex"]) == data.tobytes()
        if qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            t["values"] = [float(x) for x in data.astype(np.float32).ravel()]
        else:
            deq = gguf.quants.dequantize(data, qtype)
            t["values"] = [float(x) for x in deq.astype(np.float32).ravel()]
    with open(path + ".json", "w") as f:
        json.dump(got, f, indent=1)
    return path


def write_vocab_gguf():
    path = os.path.join(OUT, "align64_vocab.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_custom_alignment(64)
    w.add_key_value("tokenizer.ggml.tokens", ["a", "b"], VT.ARRAY, sub_type=VT.STRING)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(path + ".json", "w") as f:
        json.dump(read_gguf(path), f, indent=1)
    return path


def tensor_entry(name, t):
    return {
        "name": name,
        "dtype": {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                  torch.float64: "F64", torch.int32: "I32", torch.int64: "I64",
                  torch.int8: "I8", torch.int16: "I16"}[t.dtype],
        "shape": list(t.shape),
        "values": [float(x) for x in t.double().flatten().tolist()] if t.is_floating_point()
        else [int(x) for x in t.flatten().tolist()],
    }


def read_safetensors_header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n))


def write_small_safetensors():
    path = os.path.join(OUT, "small.safetensors")
    ts = {
        "a.f32": (torch.arange(6, dtype=torch.float32) * 0.25 - 0.5).reshape(2, 3),
        "b.f16": torch.tensor([1.0, -2.5, 65504.0, 1e-4], dtype=torch.float16),
        "c.bf16": torch.tensor([[1.0, -3.140625], [1e30, 0.0078125]], dtype=torch.bfloat16),
        "d.i32": torch.tensor([-1, 0, 2147483647], dtype=torch.int32),
        "e.i64": torch.tensor([-(2**40), 5], dtype=torch.int64),
        "f.f64": torch.tensor([0.1], dtype=torch.float64),
        "g.i8": torch.tensor([-128, 127], dtype=torch.int8),
        "h.i16": torch.tensor([-32768, 1], dtype=torch.int16),
        "z.empty": torch.zeros((0, 3), dtype=torch.float32),
    }
    save_file(ts, path, metadata={"format": "pt", "note": "jisu fixture"})
    header = read_safetensors_header(path)
    expected = {"metadata": header["__metadata__"], "tensors": []}
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        for name in sorted(f.keys()):
            t = f.get_tensor(name)
            assert torch.equal(t, ts[name])
            e = tensor_entry(name, t)
            e["data_offsets"] = header[name]["data_offsets"]
            expected["tensors"].append(e)
    with open(path + ".json", "w") as f:
        json.dump(expected, f, indent=1)
    return path


def write_sharded():
    d = os.path.join(OUT, "sharded")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shards = {
        "model-00001-of-00002.safetensors": {
            "model.embed.weight": torch.arange(8, dtype=torch.float32).reshape(4, 2),
            "model.layers.0.w": torch.tensor([0.5, 1.5], dtype=torch.bfloat16),
        },
        "model-00002-of-00002.safetensors": {
            "lm_head.weight": torch.tensor([[-1.0, 2.0]], dtype=torch.float16),
        },
    }
    weight_map = {}
    expected = {"tensors": []}
    for fname, ts in shards.items():
        save_file(ts, os.path.join(d, fname), metadata={"format": "pt"})
        for name, t in ts.items():
            weight_map[name] = fname
            e = tensor_entry(name, t)
            e["shard"] = fname
            expected["tensors"].append(e)
    index = {"metadata": {"total_size": 0}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    expected["tensors"].sort(key=lambda e: e["name"])
    with open(os.path.join(OUT, "sharded.json"), "w") as f:
        json.dump(expected, f, indent=1)


def check_gguf(path):
    """Compares `path` (written by jisu) with small.gguf.json as read by GGUFReader."""
    with open(os.path.join(OUT, "small.gguf.json")) as f:
        want = json.load(f)
    got = read_gguf(path)
    ok = True
    for k in ("version", "alignment", "file_size"):
        if got[k] != want[k]:
            print(f"{k}: got {got[k]} want {want[k]}")
            ok = False
    wm = {m["key"]: m for m in want["metadata"]}
    gm = {m["key"]: m for m in got["metadata"]}
    if list(wm) != list(gm):
        print("metadata keys differ:", list(gm), list(wm))
        ok = False
    for key, m in wm.items():
        g = gm.get(key)
        if g is None:
            continue
        for field in ("type", "array_type"):
            if m.get(field) != g.get(field):
                print(key, field, g.get(field), m.get(field))
                ok = False
        a = g.get("flat_value", g.get("value"))
        b = m.get("flat_value", m.get("value"))
        if not isinstance(a, list):
            a, b = [a], [b]
        if len(a) != len(b) or not all(close(x, y) for x, y in zip(a, b)):
            print(key, "value", a, b)
            ok = False
    for gt, wt in zip(got["tensors"], want["tensors"]):
        for field in ("name", "dtype", "shape", "offset", "num_bytes", "hex"):
            if gt[field] != wt[field]:
                print(wt["name"], field, "differs")
                ok = False
    if len(got["tensors"]) != len(want["tensors"]):
        print("tensor count differs")
        ok = False
    print("OK: GGUFReader reads", path, "identically to small.gguf" if ok else "MISMATCH")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-gguf")
    args = ap.parse_args()
    if args.check_gguf:
        sys.exit(0 if check_gguf(args.check_gguf) else 1)
    os.makedirs(OUT, exist_ok=True)
    small = write_small_gguf()
    vocab = write_vocab_gguf()
    st = write_small_safetensors()
    write_sharded()
    for sub, files in (("gguf", [small, vocab]), ("safetensors", [st])):
        os.makedirs(os.path.join(FUZZ, sub), exist_ok=True)
        for p in files:
            shutil.copy(p, os.path.join(FUZZ, sub, os.path.basename(p)))
    shutil.copy(os.path.join(OUT, "sharded", "model-00002-of-00002.safetensors"),
                os.path.join(FUZZ, "safetensors", "shard2.safetensors"))
    print("wrote fixtures to", OUT)


if __name__ == "__main__":
    main()
