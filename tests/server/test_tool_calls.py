#!/usr/bin/env python3
"""Tool calls end to end: `jisu serve` with the official openai client, streamed and not.

The models are scripted (tests/server/scripted_model.py): greedy decoding writes a fixed text,
token by token, through the real engine, tokenizer and detokenizer, so the test knows what the
model said and checks what the server made of it: message.tool_calls (ids, names, arguments as
JSON text), content, finish_reason "tool_calls", and the streamed delta.tool_calls chunks (a
call's first chunk names it with empty arguments, later ones carry arguments only), which must
add up to the same calls. Marker tokens are split across tokens and, where the family's
tokenizer has them so, special tokens (Mistral's [TOOL_CALLS], Llama's <|python_tag|>).

1. Always: a Hermes-style template written here (the plumbing, tool_choice "none",
   parallel_tool_calls false, malformed calls kept as text, and the 400s: tools the model's
   template cannot parse, tool_choice "required" or a named function, invalid tools).
2. With llama.cpp's real templates (scripts/setup.sh extracts them; skipped without them,
   except under CI): Hermes 3, Qwen2.5, Llama 3.1 and 3.2, Mistral Small 3.2 and Nemo. For
   Hermes 3 the prompt the server built (tools, an assistant's OpenAI tool_calls, tool results)
   must be what jinja2 renders from the same messages (tools/render_chat_references.py).

Usage: tests/server/test_tool_calls.py [--jisu build/jisu]
Exit status 0 when every test passed (or was skipped).
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scripted_model import write_scripted_model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                     "description": "Unit"}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Current time in a zone.",
        "parameters": {"type": "object", "properties": {
            "zone": {"type": "string", "description": "IANA zone"}}, "required": ["zone"]}}},
]
QUESTION = [{"role": "system", "content": "You can call tools."},
            {"role": "user", "content": "Weather in Paris, and the time?"}]

# A Hermes-style template for the tests that need no real one: tools in the system turn,
# calls in <tool_call> tags, tool results as tool turns.
HERMES_LIKE = (
    "{%- if tools %}<|im_start|>system\n<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}"
    "</tools> Call tools as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>"
    "<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{%- for c in m.tool_calls or [] %}<tool_call>{\"name\": \"{{ c.function.name }}\", "
    "\"arguments\": {{ c.function.arguments | tojson }}}</tool_call>{%- endfor %}<|im_end|>\n"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")

HERMES_PIECES = ["Let me check.", "\n<tool", "_call>\n{\"name\": \"get_weather\", ",
                 "\"arguments\": {\"city\": \"Par", "is\"}}\n</tool_",
                 "call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": ",
                 "{\"zone\": \"CET\"}}\n</tool_call>"]
HERMES_CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def upstream_template(name):
    d = os.environ.get("JISU_CHAT_TEMPLATE_DIR") or os.path.join(
        ROOT, ".venv", "share", "jisu", "chat_templates")
    p = os.path.join(d, "upstream", name)
    return p if os.path.isfile(p) else None


def setup_required():
    return os.environ.get("CI", "") not in ("", "false")


class Server:
    """jisu serve with a scripted model and a chat template file."""

    def __init__(self, jisu, workdir, name, pieces, special=(), template=None,
                 template_text=None):
        self.model = write_scripted_model(os.path.join(workdir, name), pieces, special)
        if template is None:
            template = os.path.join(workdir, name + ".jinja")
            with open(template, "w") as f:
                f.write(template_text)
        self.template = template
        self.port = free_port()
        self.log_path = os.path.join(ROOT, "build", "tool_calls_test_%s.log" % name)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [jisu, "serve", "-m", self.model, "--port", str(self.port), "--kv-memory", "64MiB",
             "--max-model-len", "8192", "--chat-template", template,
             "--served-model-name", "m"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while True:
            try:
                url = "http://127.0.0.1:%d/health" % self.port
                if urllib.request.urlopen(url, timeout=2).status == 200:
                    break
            except Exception:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                raise RuntimeError("server did not become healthy; see " + self.log_path)
            time.sleep(0.1)
        self.client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % self.port,
                                    api_key="unused", max_retries=0, timeout=120)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = "timeout"
        assert rc == 0, "server exit status after SIGTERM: %s" % rc

    def chat(self, **kw):
        args = dict(model="m", messages=QUESTION, tools=TOOLS, temperature=0, max_tokens=200)
        args.update(kw)
        return self.client.chat.completions.create(**args)

    def stream(self, **kw):
        """The streamed reply reassembled: (content or None, calls, finish_reason)."""
        content, calls, finish = None, [], None
        for chunk in self.chat(stream=True, **kw):
            assert chunk.object == "chat.completion.chunk"
            for ch in chunk.choices:
                d = ch.delta
                if d.content:
                    content = (content or "") + d.content
                for tc in d.tool_calls or []:
                    if tc.index == len(calls):  # a call opens: index, id, type, name, ""
                        assert tc.id and tc.type == "function", tc
                        assert tc.function.name and tc.function.arguments == "", tc
                        calls.append({"id": tc.id, "name": tc.function.name, "arguments": ""})
                    else:  # later chunks: index and a piece of the arguments only
                        assert tc.index == len(calls) - 1, (tc.index, len(calls))
                        assert tc.id is None and tc.type is None, tc
                        assert tc.function.name is None, tc
                        calls[tc.index]["arguments"] += tc.function.arguments
                if ch.finish_reason:
                    assert finish is None, "two finish reasons"
                    finish = ch.finish_reason
        return content, calls, finish


def check_calls(calls, want, id_len=None):
    """calls: [{id, name, arguments}] against want: [(name, arguments as an object)]."""
    got = [(c["name"], json.loads(c["arguments"])) for c in calls]
    assert got == want, (got, want)
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == len(ids), ids
    for i in ids:
        if id_len:
            assert len(i) == id_len and i.isalnum(), i
        else:
            assert i.startswith("call_") and len(i) > 10, i


def message_calls(msg):
    return [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in msg.tool_calls or []]


def check_both_ways(server, want_content, want_calls, id_len=None, **kw):
    """The same calls and content, not streamed and streamed; returns the message."""
    r = server.chat(**kw)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", ch.finish_reason
    assert ch.message.content == want_content, ch.message.content
    for c in ch.message.tool_calls:
        assert c.type == "function", c
    check_calls(message_calls(ch.message), want_calls, id_len)
    content, calls, finish = server.stream(**kw)
    assert finish == "tool_calls", finish
    assert content == want_content, content
    check_calls(calls, want_calls, id_len)
    return ch.message


def bad_request(fn, param):
    try:
        fn()
    except openai.BadRequestError as e:
        got = e.body.get("param") if isinstance(e.body, dict) else None
        assert got == param, (got, param, e.body)
        return e.body["message"]
    raise AssertionError("expected a 400 naming %s" % param)


def test_hermes_like(jisu, workdir):
    s = Server(jisu, workdir, "hermes_like", HERMES_PIECES, template_text=HERMES_LIKE)
    try:
        check_both_ways(s, "Let me check.", HERMES_CALLS)
        # tool_choice "none": the model's text as content, nothing parsed.
        r = s.chat(tool_choice="none")
        assert r.choices[0].message.content == "".join(HERMES_PIECES), r.choices[0].message
        assert not r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "stop"
        content, calls, finish = s.stream(tool_choice="none")
        assert (content, calls, finish) == ("".join(HERMES_PIECES), [], "stop")
        # parallel_tool_calls false: the first call only.
        check_both_ways(s, "Let me check.", HERMES_CALLS[:1], parallel_tool_calls=False)
        # The OpenAI shapes of a next turn (content null, arguments as JSON text, tool
        # results with tool_call_id) are accepted and rendered.
        msg = check_both_ways(s, "Let me check.", HERMES_CALLS)
        follow = QUESTION + [
            {"role": "assistant", "content": None,
             "tool_calls": [c.model_dump() for c in msg.tool_calls]},
            {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "18 C, rain"},
            {"role": "tool", "tool_call_id": msg.tool_calls[1].id, "content": "14:07"}]
        r = s.chat(messages=follow)
        assert r.choices[0].finish_reason == "tool_calls"
        assert r.usage.prompt_tokens > s.chat().usage.prompt_tokens
        # /tokenize renders the same prompt, tools included.
        req = urllib.request.Request(
            "http://127.0.0.1:%d/tokenize" % s.port, method="POST",
            data=json.dumps({"messages": follow, "tools": TOOLS}).encode(),
            headers={"Content-Type": "application/json"})
        count = json.loads(urllib.request.urlopen(req, timeout=60).read())["count"]
        assert count == r.usage.prompt_tokens, (count, r.usage.prompt_tokens)
        # Errors name their parameter; the server stays up.
        bad_request(lambda: s.chat(tool_choice="required"), "tool_choice")
        bad_request(lambda: s.chat(tool_choice={"type": "function",
                                                "function": {"name": "get_time"}}),
                    "tool_choice")
        bad_request(lambda: s.chat(tool_choice={"type": "function",
                                                "function": {"name": "nope"}}),
                    "tool_choice.function.name")
        bad_request(lambda: s.chat(tool_choice="sometimes"), "tool_choice")
        bad_request(lambda: s.chat(tools=[]), "tools")
        bad_request(lambda: s.chat(tools=[{"type": "function", "function": {"name": "a b"}}]),
                    "tools[0].function.name")
        bad_request(lambda: s.chat(tools=[{"type": "retrieval"}]), "tools[0].type")
        bad_request(lambda: s.chat(tools=[{"type": "function"}]), "tools[0].function")
        bad_request(lambda: s.chat(tools=[{"type": "function", "function": {
            "name": "f", "parameters": "{}"}}]), "tools[0].function.parameters")
        bad_request(lambda: s.chat(tools=None, tool_choice="auto"), "tool_choice")
        bad_request(lambda: s.chat(parallel_tool_calls="yes"), "parallel_tool_calls")
        bad_request(lambda: s.chat(messages=QUESTION + [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]}]),
            "messages[2].tool_calls[0].type")
        bad_request(lambda: s.chat(messages=QUESTION + [{"role": "tool", "content": "r"}]),
                    "messages[2].tool_call_id")
        assert s.chat().choices[0].finish_reason == "tool_calls"
    finally:
        s.stop()


def test_malformed_call_is_text(jisu, workdir):
    pieces = ["<tool_call>", "{\"name\": \"get_weather\", \"arguments\": {city}}", "</tool_call>"]
    s = Server(jisu, workdir, "malformed", pieces, template_text=HERMES_LIKE)
    try:
        r = s.chat()
        assert r.choices[0].message.content == "".join(pieces), r.choices[0].message
        assert not r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "stop"
        assert s.stream() == ("".join(pieces), [], "stop")
    finally:
        s.stop()


def test_no_tool_format_is_refused(jisu, workdir):
    # A ChatML template: no format the server parses, so tools need tool_choice "none".
    chatml = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
              "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    s = Server(jisu, workdir, "chatml", ["Hello", " there."], template_text=chatml)
    try:
        message = bad_request(lambda: s.chat(), "tools")
        assert "--tool-call-parser" in message, message
        r = s.chat(tool_choice="none")
        assert r.choices[0].message.content == "Hello there."
        assert r.choices[0].finish_reason == "stop"
        r = s.chat(tools=None)
        assert r.choices[0].message.content == "Hello there."
    finally:
        s.stop()


def test_hermes3_prompt_is_jinja2s(jisu, workdir):
    """The prompt with tools, OpenAI tool_calls and tool results is what jinja2 renders."""
    template = upstream_template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")
    if template is None:
        return "llama.cpp's templates are not extracted (see scripts/setup.sh)"
    from render_chat_references import compile_template, normalize
    s = Server(jisu, workdir, "hermes3", HERMES_PIECES, template=template)
    try:
        msg = check_both_ways(s, "Let me check.", HERMES_CALLS)
        follow = QUESTION + [
            {"role": "assistant", "content": None,
             "tool_calls": [c.model_dump() for c in msg.tool_calls]},
            {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "18 C, rain"},
            {"role": "tool", "tool_call_id": msg.tool_calls[1].id, "content": "14:07"}]
        r = s.chat(messages=follow)
        # What the server renders: OpenAI's arguments JSON text as objects (as vLLM passes
        # them), a null content as "".
        expected_messages = json.loads(json.dumps(follow))
        expected_messages[2]["content"] = ""
        for c in expected_messages[2]["tool_calls"]:
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
        with open(template) as f:
            text = compile_template(f.read()).render(
                messages=normalize(expected_messages), tools=TOOLS, documents=None,
                add_generation_prompt=True, bos_token="", eos_token="<|im_end|>")
        ids = json.loads(subprocess.run(
            [jisu, "tokenize", "-m", s.model, "--no-bos", "--json", "-p", text],
            capture_output=True, text=True, timeout=120, check=True).stdout)
        assert r.usage.prompt_tokens == len(ids), (r.usage.prompt_tokens, len(ids))
        assert "get_weather(city: str, unit: str)" in text  # the tools reached the template
    finally:
        s.stop()


# (name, upstream template, pieces, special pieces, content, calls, id length)
FAMILIES = [
    ("qwen2_5", "Qwen-Qwen2.5-7B-Instruct.jinja",
     ["<tool_call>", "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\", ",
      "\"unit\": \"celsius\"}}", "\n</tool_call>"], (),
     None, [("get_weather", {"city": "Tokyo", "unit": "celsius"})], None),
    ("llama3_1", "meta-llama-Llama-3.1-8B-Instruct.jinja",
     ["<|python_tag|>", "{\"name\": \"get_weather\", \"parameters\": ", "{\"city\": \"Berlin\"}}"],
     ("<|python_tag|>",), None, [("get_weather", {"city": "Berlin"})], None),
    ("llama3_2", "meta-llama-Llama-3.2-3B-Instruct.jinja",
     ["{\"name\": \"get_time\", ", "\"parameters\": {\"zone\": \"UTC\"}}"], (),
     None, [("get_time", {"zone": "UTC"})], None),
    ("mistral_small_3_2", "Mistral-Small-3.2-24B-Instruct-2506.jinja",
     ["Checking.", "[TOOL_CALLS]", "get_weather", "[ARGS]", "{\"city\": \"Rome\"}"],
     ("[TOOL_CALLS]", "[ARGS]"), "Checking.", [("get_weather", {"city": "Rome"})], 9),
    ("mistral_nemo", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
     ["[TOOL_CALLS]", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}, ",
      "\"id\": \"abcDEF123\"}, {\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]"],
     ("[TOOL_CALLS]",), None, [("get_weather", {"city": "Rome"}), ("get_time", {"zone": "CET"})],
     9),
]


def test_real_templates(jisu, workdir):
    missing = [f[1] for f in FAMILIES if upstream_template(f[1]) is None]
    if missing:
        if setup_required():
            raise AssertionError("not extracted: %s" % missing)
        return "llama.cpp's templates are not extracted (see scripts/setup.sh)"
    for name, template, pieces, special, content, calls, id_len in FAMILIES:
        s = Server(jisu, workdir, name, pieces, special, template=upstream_template(template))
        try:
            msg = check_both_ways(s, content, calls, id_len)
            # The calls go back to the template in the next turn (Mistral's templates check
            # the ids), with their results.
            follow = QUESTION[1:] + [
                {"role": "assistant", "content": msg.content,
                 "tool_calls": [c.model_dump() for c in msg.tool_calls]}]
            follow += [{"role": "tool", "tool_call_id": c.id, "content": "done"}
                       for c in msg.tool_calls]
            r = s.chat(messages=follow)
            assert r.choices[0].finish_reason == "tool_calls", name
        except Exception as e:
            raise AssertionError("%s (%s): %s; see %s" % (name, template, e, s.log_path)) from e
        finally:
            s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jisu", default=os.path.join(ROOT, "build", "jisu"))
    ap.add_argument("-k", default="", help="run only tests whose name contains this")
    args = ap.parse_args()
    failures = skipped = passed = 0
    tests = [(n, f) for n, f in globals().items()
             if n.startswith("test_") and callable(f) and args.k in n]
    with tempfile.TemporaryDirectory() as workdir:
        for name, fn in tests:
            t0 = time.time()
            try:
                note = fn(args.jisu, workdir)
                if note:
                    skipped += 1
                    print("SKIP %-40s %s" % (name, note), flush=True)
                else:
                    passed += 1
                    print("PASS %-40s %.1fs" % (name, time.time() - t0), flush=True)
            except Exception:
                failures += 1
                print("FAIL %s" % name, flush=True)
                traceback.print_exc()
    print("%d passed, %d failed, %d skipped" % (passed, failures, skipped))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
