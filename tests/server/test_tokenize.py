#!/usr/bin/env python3
"""POST /tokenize and /detokenize on `jisu serve`, in vLLM's and llama.cpp's spellings.

Against other paths of the same server and CLI (the tokenizer itself is checked elsewhere):
- a text's ids equal `jisu tokenize` (with and without the special tokens, per flag and per
  spelling's default), and /v1/completions' usage.prompt_tokens;
- a chat request's count equals /v1/chat/completions' usage.prompt_tokens for the same
  messages (through the openai client), and add_generation_prompt=false gives fewer tokens;
- /detokenize gives the text back; with_pieces and return_token_strs give the vocabulary
  entries of `jisu tokenize`;
- bad bodies are 400 naming the field, an unknown model 404, and with --api-key the endpoints
  need the key (401 without).
Run on the demo model (SmolLM2, no BOS) and on tests/data/convert_spm converted to GGUF (adds
BOS, no chat template), so the special-token flags are seen to matter.

Usage: tests/server/test_tokenize.py [--jisu build/jisu]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import ROOT, TINY, Server, find_smollm2  # noqa: E402

KEY = "tok-test-key"
TEXTS = ["Hello  world", " leading space", "numbers 12345, unicode café 你好 🙂", "line\n\nbreaks\t"]


def model_path():
    return find_smollm2() or TINY


def post(port, path, body, key=KEY):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def cli_tokens(jisu, model, text, bos):
    args = [jisu, "tokenize", "-m", model, "--json", "-p", text] + ([] if bos else ["--no-bos"])
    return json.loads(subprocess.run(args, capture_output=True, text=True, timeout=120,
                                     check=True).stdout)


def cli_pieces(jisu, model, text):
    out = subprocess.run([jisu, "tokenize", "-m", model, "--no-bos", "-p", text],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return [json.loads(line.split("->", 1)[1]) for line in out.splitlines() if "->" in line]


def start(jisu, model, log_name, max_len=1024):
    """A server that needs KEY, with the openai client as `server.client`."""
    server = Server(log_name, "--kv-memory", "64MiB", "--max-model-len", max_len,
                    "--served-model-name", "m", "--api-key", KEY, model=model, jisu=jisu)
    server.client = server.openai_client(api_key=KEY)
    return server


def check_texts(jisu, model, server, expect_bos, max_len=1024):
    port, client = server.port, server.client
    for text in TEXTS:
        with_special = cli_tokens(jisu, model, text, bos=True)
        plain = cli_tokens(jisu, model, text, bos=False)
        assert (with_special != plain) == expect_bos, (with_special, plain)
        st, r = post(port, "/tokenize", {"prompt": text})  # vLLM: specials by default
        assert st == 200 and r["tokens"] == with_special, (text, r)
        assert r["count"] == len(with_special) and r["max_model_len"] == max_len, r
        st, r = post(port, "/tokenize", {"prompt": text, "add_special_tokens": False})
        assert st == 200 and r["tokens"] == plain, (text, r)
        st, r = post(port, "/tokenize", {"content": text})  # llama.cpp: none by default
        assert st == 200 and r["tokens"] == plain, (text, r)
        st, r = post(port, "/tokenize", {"content": text, "add_special": True, "model": "m"})
        assert st == 200 and r["tokens"] == with_special, (text, r)
        pieces = cli_pieces(jisu, model, text)
        st, r = post(port, "/tokenize", {"content": text, "with_pieces": True})
        assert st == 200 and [t["id"] for t in r["tokens"]] == plain, r
        assert [t["piece"] for t in r["tokens"]] == pieces, (r, pieces)
        st, r = post(port, "/tokenize", {"prompt": text, "add_special_tokens": False,
                                         "return_token_strs": True})
        assert st == 200 and r["token_strs"] == pieces, r
        st, r = post(port, "/detokenize", {"tokens": plain})
        assert st == 200 and r["prompt"] == text and r["content"] == text, (text, r)
        done = client.completions.create(model="m", prompt=text, max_tokens=1)
        assert done.usage.prompt_tokens == len(with_special), done.usage


def check_chat_and_errors(server):
    port, client = server.port, server.client
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 2+2?"}]
    st, r = post(port, "/tokenize", {"model": "m", "messages": messages})
    assert st == 200, r
    chat = client.chat.completions.create(model="m", messages=messages, max_tokens=1)
    assert r["count"] == chat.usage.prompt_tokens, (r["count"], chat.usage)
    st, r2 = post(port, "/tokenize", {"messages": messages, "add_generation_prompt": False})
    assert st == 200 and r2["count"] < r["count"], (r, r2)
    assert r2["tokens"] == r["tokens"][:r2["count"]], (r, r2)
    for path, body, param in [
            ("/tokenize", {}, "content"),
            ("/tokenize", {"prompt": 5}, "prompt"),
            ("/tokenize", {"prompt": "x", "add_special_tokens": "yes"}, "add_special_tokens"),
            ("/tokenize", {"messages": "hi"}, "messages"),
            ("/detokenize", {"tokens": [0, -1]}, "tokens"),
            ("/detokenize", {"tokens": [10 ** 12]}, "tokens"),
            ("/detokenize", {}, "tokens")]:
        st, r = post(port, path, body)
        assert st == 400 and r["error"]["param"] == param, (path, body, st, r)
    st, r = post(port, "/tokenize", {"model": "other", "prompt": "x"})
    assert st == 404, r
    st, r = post(port, "/tokenize", {"prompt": "x"}, key=None)
    assert st == 401, r
    st, r = post(port, "/detokenize", {"tokens": [1]}, key="wrong")
    assert st == 401, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jisu", default=os.path.join(ROOT, "build", "jisu"))
    jisu = ap.parse_args().jisu
    model = model_path()
    server = start(jisu, model, "test_tokenize")
    try:
        check_texts(jisu, model, server, expect_bos=False)
        check_chat_and_errors(server)
    finally:
        server.stop()
    with tempfile.TemporaryDirectory() as tmp:
        spm = os.path.join(tmp, "spm.gguf")
        subprocess.run([jisu, "convert", "-m", os.path.join(ROOT, "tests", "data", "convert_spm",
                                                              "hf"), "-o", spm, "--type", "f32"],
                       check=True, capture_output=True, timeout=120)
        server = start(jisu, spm, "test_tokenize_spm", max_len=256)
        try:
            check_texts(jisu, spm, server, expect_bos=True, max_len=256)
        finally:
            server.stop()
    print("PASS test_tokenize")
    return 0


if __name__ == "__main__":
    sys.exit(main())
