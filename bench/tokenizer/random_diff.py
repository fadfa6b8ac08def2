#!/usr/bin/env python3
"""Differential probe: jisu's tokenizer on a family's vocabulary-only GGUF against the
`tokenizers` library on the same family's tokenizer.json (tests/data/tokenizer/pretok/), over
random strings drawn from the character classes pre-tokenizers treat differently (letters of
several scripts and cases, digits of several kinds, whitespace of every kind, punctuation,
emoji sequences, combining marks, contractions). Study code: it prints mismatches, it is not a
test. Byte-level families only (the GGUF of a SentencePiece family derives its merges from
scores, so its reference is not tokenizer.json's).

Usage: /work/refenv/bin/python bench/tokenizer/random_diff.py [--n 200] [--seed 1] [family ...]
"""
import argparse
import json
import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRETOK = os.path.join(ROOT, "tests", "data", "tokenizer", "pretok")
BYTE_LEVEL = ["command-r", "deepseek-coder", "deepseek-llm", "deepseek-v3", "falcon", "gpt-2",
              "llama-bpe", "mpt", "qwen2", "refact", "smollm", "starcoder"]

PIECES = [
    "a", "b", "Z", "hello", "World", "THE", "iÖ", "é", "ß", "Ωμέγα", "Ж", "жизнь", "中文", "日本語",
    "한국어", "ไทย", "עברית", "العربية", "हिन्दी", "ক", "ʼ", "ǅ", "ﬁ", "Ⅻ", "ⅷ",
    "0", "1", "42", "123", "2024", "99999", "3.14", "1,000", "٣", "५", "１２", "²", "½", "①", "𝟙",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\u00a0", "\u2009", "\u3000", "\u200b",
    "\u2028", "\u0085", "\x0b", "\x0c",
    ".", ",", "!", "?", "...", "'", "\"", "-", "--", "_", "(", ")", "[", "]", "{", "}", "<", ">",
    "/", "\\", "@", "#", "$", "%", "^", "&", "*", "+", "=", "|", "~", "`", ";", ":",
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "’s",
    "😀", "👍🏽", "👨‍👩‍👧", "❤️", "1️⃣", "🇫🇷", "e\u0301", "a\u0300\u0301", "\u0915\u094d\u0937",
    "```", "<|", "|>", "</s>", "\ufeff", "\ufffd", "\U0001f600\u200d",
]


def random_text(rng):
    n = rng.randint(1, 14)
    out = []
    for _ in range(n):
        p = rng.choice(PIECES)
        if rng.random() < 0.15:
            p = p * rng.randint(2, 6)
        out.append(p)
    return "".join(out)


def jisu_ids(binary, gguf, text, tmp):
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    r = subprocess.run([binary, "tokenize", "-m", gguf, "--json", "--no-bos", "-f", tmp],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return "error: " + r.stderr.strip()
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "jisu"))
    ap.add_argument("families", nargs="*", default=BYTE_LEVEL)
    a = ap.parse_args()
    from tokenizers import Tokenizer
    tmp = "/tmp/jisu_random_diff.txt"
    total_bad = 0
    for fam in a.families:
        d = os.path.join(PRETOK, fam)
        ref = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        rng = random.Random(f"{a.seed}-{fam}")
        bad = []
        for _ in range(a.n):
            t = random_text(rng)
            want = ref.encode(t, add_special_tokens=False).ids
            got = jisu_ids(a.binary, os.path.join(d, "vocab.gguf"), t, tmp)
            if got != want:
                bad.append((t, want, got))
        total_bad += len(bad)
        print(f"{fam:16s} {a.n - len(bad)}/{a.n} equal")
        for t, want, got in bad[:3]:
            print(f"    {t!r}\n      tokenizers {want}\n      jisu       {got}")
    sys.exit(1 if total_bad else 0)


if __name__ == "__main__":
    main()
