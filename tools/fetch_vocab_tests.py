#!/usr/bin/env python3
"""Fetches llama.cpp's tokenizer test files and real chat templates, for the tests on them.

llama.cpp keeps, for each pre-tokenizer family, the vocabulary of a real model as a
vocabulary-only GGUF (models/ggml-vocab-<pre>.gguf) with test inputs (.inp) and the ids
transformers gives on the model's own repository (.out), and the chat templates of the models
it serves as the Hub has them (models/templates/*.jinja: Llama 3.x, Qwen2.5/3, Hermes 2/3,
Mistral, DeepSeek, Command R, Gemma, gpt-oss, ...). The llama-cpp-python sdist on PyPI vendors
that folder; this takes those files out of it (pip, --no-deps, the sdist checked by its
SHA-256, downloaded once for both) and writes the vocabularies to DEST, where
tokenizer_pretok_test.cc looks for them, and with --templates every template to TEMPLATES_DEST
(tools/render_chat_references.py renders them for chat_template_test.cc). Only data leaves
the sdist: no llama.cpp code is extracted or built.

    .venv/bin/python tools/fetch_vocab_tests.py .venv/share/jisu/llama_cpp_vocab \
        [--templates .venv/share/jisu/chat_templates/upstream]
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
TEMPLATES = MODELS + "templates/"
# The families jisu's tokenizer covers (BERT's WordPiece and T5's Unigram are not BPE).
FAMILIES = ["command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2",
            "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder"]


def up_to_date(dest, names):
    """Whether DEST holds NAMES from this sdist (its SOURCE stamp says so)."""
    stamp = os.path.join(dest, "SOURCE")
    if not os.path.isfile(stamp) or not all(os.path.isfile(os.path.join(dest, n)) for n in names):
        return False
    with open(stamp) as f:
        return f.read().strip() == f"{PACKAGE}=={VERSION} {SDIST_SHA256}"


def write_stamped(dest, files):
    """Writes {relative path: bytes} into DEST (each atomically), removes other .jinja files
    there (a template the sdist no longer has), then stamps DEST with the sdist."""
    os.makedirs(dest, exist_ok=True)
    for name, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
        with open(os.path.join(dest, name + ".tmp"), "wb") as f:
            f.write(data)
        os.replace(os.path.join(dest, name + ".tmp"), os.path.join(dest, name))
    for name in os.listdir(dest):
        if name.endswith(".jinja") and name not in files:
            os.remove(os.path.join(dest, name))
    with open(os.path.join(dest, "SOURCE"), "w") as f:
        f.write(f"{PACKAGE}=={VERSION} {SDIST_SHA256}\n")


def fetch(dest, templates_dest=None):
    names = [f"ggml-vocab-{f}.gguf{ext}" for f in FAMILIES for ext in ("", ".inp", ".out")]
    if up_to_date(dest, names) and (templates_dest is None or up_to_date(templates_dest, [])):
        return
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
            vocab = {name: tar.extractfile(MODELS + name).read() for name in names}
            jinja = {m.name[len(TEMPLATES):]: tar.extractfile(m).read() for m in tar.getmembers()
                     if m.isfile() and m.name.startswith(TEMPLATES) and m.name.endswith(".jinja")
                     and "/" not in m.name[len(TEMPLATES):]}
    write_stamped(dest, vocab)
    print(f"{len(vocab)} files from {PACKAGE} {VERSION} in {dest}")
    if templates_dest is not None:
        if not jinja:
            sys.exit(f"{PACKAGE}=={VERSION}: no chat templates under {TEMPLATES}")
        write_stamped(templates_dest, jinja)
        print(f"{len(jinja)} chat templates from {PACKAGE} {VERSION} in {templates_dest}")


if __name__ == "__main__":
    args = sys.argv[1:]
    options = {"--templates": None}
    while len(args) >= 3 and args[-2] in options:
        options[args[-2]] = args[-1]
        args = args[:-2]
    if len(args) != 1:
        sys.exit(__doc__)
    fetch(args[0], options["--templates"])
