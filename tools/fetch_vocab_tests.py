#!/usr/bin/env python3
"""Fetches llama.cpp's tokenizer test files, for the tokenizer tests on real vocabularies.

llama.cpp keeps, for each pre-tokenizer family, the vocabulary of a real model as a
vocabulary-only GGUF (models/ggml-vocab-<pre>.gguf) with test inputs (.inp) and the ids
transformers gives on the model's own repository (.out). The llama-cpp-python sdist on PyPI
vendors that folder; this takes those files out of it (pip, --no-deps, the sdist checked by
its SHA-256) and writes them to DEST, where tokenizer_pretok_test.cc looks for them.

    .venv/bin/python tools/fetch_vocab_tests.py .venv/share/jisu/llama_cpp_vocab
"""

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile

PACKAGE, VERSION = "llama-cpp-python", "0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
MODELS = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/"
# The families jisu's tokenizer covers (BERT's WordPiece and T5's Unigram are not BPE).
FAMILIES = ["command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2",
            "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder"]


def fetch(dest):
    names = [f"ggml-vocab-{f}.gguf{ext}" for f in FAMILIES for ext in ("", ".inp", ".out")]
    stamp = os.path.join(dest, "SOURCE")
    if all(os.path.isfile(os.path.join(dest, n)) for n in names) and os.path.isfile(stamp):
        with open(stamp) as f:
            if f.read().strip() == f"{PACKAGE}=={VERSION} {SDIST_SHA256}":
                return
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", f"{PACKAGE}=={VERSION}", "-d", tmp], check=True)
        sdists = [s for s in os.listdir(tmp) if s.endswith(".tar.gz")]
        if len(sdists) != 1:
            sys.exit(f"{PACKAGE}=={VERSION}: expected one sdist, got {sdists}")
        path = os.path.join(tmp, sdists[0])
        with open(path, "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != SDIST_SHA256:
            sys.exit(f"{PACKAGE}=={VERSION}: sha256 {got}, expected {SDIST_SHA256}")
        with tarfile.open(path) as tar:
            for name in names:
                data = tar.extractfile(MODELS + name).read()
                with open(os.path.join(dest, name + ".tmp"), "wb") as f:
                    f.write(data)
                os.replace(os.path.join(dest, name + ".tmp"), os.path.join(dest, name))
    with open(stamp, "w") as f:
        f.write(f"{PACKAGE}=={VERSION} {SDIST_SHA256}\n")
    print(f"{len(names)} files from {PACKAGE} {VERSION} in {dest}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    fetch(sys.argv[1])
