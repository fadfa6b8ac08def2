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
   template cannot parse, invalid tools, schemas that cannot constrain a call).
   tool_choice "required" and a named function (decoding constrained to the family's calls):
   a script that conforms passes unchanged, one that does not (prose, other functions) is made
   to call the function, with arguments valid against its schema (`jsonschema`);
   finish_reason "tool_calls" for "required", "stop" for a named function.
2. With llama.cpp's real templates (scripts/setup.sh extracts them; skipped without them,
   except under CI): Hermes 3, Qwen2.5, Llama 3.1 and 3.2, Mistral Small 3.2 and Nemo. For
   Hermes 3 the prompt the server built (tools, an assistant's OpenAI tool_calls, tool results)
   must be what jinja2 renders from the same messages (tools/render_chat_references.py).
   Forced calls in each family's syntax are read back by its parser.
3. The demo model (SmolLM2-135M; the bundled tiny model without it) sampled freely under
   "required" and named tool_choice, several seeds, streamed and not, one continuous batch:
   every reply is calls whose arguments validate.

Usage: tests/server/test_tool_calls.py [--jisu build/jisu] [-k NAME]
Exit status 0 when every test passed (or was skipped).
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

import jsonschema
import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_util  # noqa: E402
from scripted_model import write_scripted_model  # noqa: E402
from server_util import ROOT, run_tests  # noqa: E402

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


# TOOLS with every string an enum: a call the constraint forces on a scripted model (ties between
# tokens it has no preference for) is finite, and still holds the scripts' calls.
TIGHT_TOOLS = json.loads(json.dumps(TOOLS))
TIGHT_TOOLS[0]["function"]["parameters"]["properties"]["city"]["enum"] = [
    "Paris", "Tokyo", "Berlin", "Rome"]
TIGHT_TOOLS[1]["function"]["parameters"]["properties"]["zone"]["enum"] = ["UTC", "CET"]

# What the upstream Hermes templates render for HERMES_CALLS: what a constrained model writes.
CONFORMING_PIECES = ["<tool_call>\n{\"name\": \"get_weather\", ",
                     "\"arguments\": {\"city\": \"Par", "is\"}}\n</tool_",
                     "call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": ",
                     "{\"zone\": \"CET\"}}\n</tool_call>"]


def named(function):
    return {"type": "function", "function": {"name": function}}


def upstream_template(name):
    d = os.environ.get("JISU_CHAT_TEMPLATE_DIR") or os.path.join(
        ROOT, ".venv", "share", "jisu", "chat_templates")
    p = os.path.join(d, "upstream", name)
    return p if os.path.isfile(p) else None


def setup_required():
    return os.environ.get("CI", "") not in ("", "false")


class ToolServer(server_util.Server):
    """jisu serve with a chat template file; chat() and stream() ask with TOOLS by default."""

    def __init__(self, jisu, name, model, template, kv_memory="64MiB"):
        self.model, self.template = model, template
        super().__init__("tool_calls_test_" + name, "--kv-memory", kv_memory, "--max-model-len",
                         8192, "--chat-template", template, "--served-model-name", "m",
                         model=model, jisu=jisu)
        self.client = self.openai_client(timeout=600)

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


class Server(ToolServer):
    """A scripted model (its greedy output is "".join(pieces)) with a chat template file or
    text."""

    def __init__(self, jisu, workdir, name, pieces, special=(), template=None,
                 template_text=None):
        model = write_scripted_model(os.path.join(workdir, name), pieces, special)
        if template is None:
            template = os.path.join(workdir, name + ".jinja")
            with open(template, "w") as f:
                f.write(template_text)
        super().__init__(jisu, name, model, template)


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


def check_both_ways(server, want_content, want_calls, id_len=None, finish="tool_calls", **kw):
    """The same calls and content, not streamed and streamed; returns the message."""
    r = server.chat(**kw)
    ch = r.choices[0]
    assert ch.finish_reason == finish, ch.finish_reason
    assert ch.message.content == want_content, ch.message.content
    for c in ch.message.tool_calls:
        assert c.type == "function", c
    check_calls(message_calls(ch.message), want_calls, id_len)
    content, calls, got_finish = server.stream(**kw)
    assert got_finish == finish, got_finish
    assert content == want_content, content
    check_calls(calls, want_calls, id_len)
    return ch.message


def next_turn(msg):
    """QUESTION, then `msg` (two calls) in OpenAI's shapes of a next turn: content null,
    arguments as JSON text, the calls' results as tool messages with their tool_call_id."""
    return QUESTION + [
        {"role": "assistant", "content": None,
         "tool_calls": [c.model_dump() for c in msg.tool_calls]},
        {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "18 C, rain"},
        {"role": "tool", "tool_call_id": msg.tool_calls[1].id, "content": "14:07"}]


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
        follow = next_turn(msg)
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


def test_required_and_named_keep_conforming_calls(jisu, workdir):
    """A model that writes calls as its family does passes the constraint unchanged; finish_reason
    is "tool_calls" for "required", "stop" for a named function (as OpenAI and vLLM)."""
    s = Server(jisu, workdir, "conforming", CONFORMING_PIECES, template_text=HERMES_LIKE)
    try:
        for tools in (TOOLS, TIGHT_TOOLS):
            check_both_ways(s, None, HERMES_CALLS, tool_choice="required", tools=tools)
            check_both_ways(s, None, HERMES_CALLS[:1], tool_choice="required", tools=tools,
                            parallel_tool_calls=False)
            check_both_ways(s, None, HERMES_CALLS[:1], finish="stop", tools=tools,
                            tool_choice=named("get_weather"))
        check_both_ways(s, None, HERMES_CALLS)  # auto
    finally:
        s.stop()


def check_forced(server, tools, function=None, **kw):
    """The only call of a constrained reply, not streamed and streamed, is of `function` (or
    of one of `tools`) and its arguments validate against the function's schema. A scripted
    model has no preference among the tokens the grammar allows once off its script, so whitespace
    may be long: max_tokens leaves room."""
    kw.setdefault("max_tokens", 1500)
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
    choice = named(function) if function else "required"
    finish = "stop" if function else "tool_calls"
    r = server.chat(tools=tools, tool_choice=choice, **kw)
    ch = r.choices[0]
    streamed = server.stream(tools=tools, tool_choice=choice, **kw)
    for content, calls, got_finish in ((ch.message.content, message_calls(ch.message),
                                        ch.finish_reason), streamed):
        assert (content, got_finish, len(calls)) == (None, finish, 1), (content, got_finish,
                                                                         calls)
        assert (calls[0]["name"] == function) if function else (calls[0]["name"] in schemas), calls
        jsonschema.validate(json.loads(calls[0]["arguments"]), schemas[calls[0]["name"]])
    return message_calls(ch.message)[0]


def test_constraint_forces_calls(jisu, workdir):
    """A model whose script is prose then calls of other functions is made to call the function
    named, or one when "required"; unconstrained it writes its script."""
    s = Server(jisu, workdir, "forced", HERMES_PIECES, template_text=HERMES_LIKE)
    try:
        assert s.chat(tools=TIGHT_TOOLS).choices[0].message.content == "Let me check."
        check_forced(s, TIGHT_TOOLS, "get_time")
        check_forced(s, TIGHT_TOOLS, "get_weather")
        check_forced(s, TIGHT_TOOLS, parallel_tool_calls=False)
        # A function without parameters: its arguments are {}.
        no_params = TIGHT_TOOLS + [{"type": "function", "function": {"name": "ping"}}]
        assert json.loads(check_forced(s, no_params, "ping")["arguments"]) == {}
    finally:
        s.stop()


def test_tool_choice_errors(jisu, workdir):
    s = Server(jisu, workdir, "choice_errors", CONFORMING_PIECES, template_text=HERMES_LIKE)
    try:
        bad = TOOLS + [{"type": "function", "function": {"name": "lookup", "parameters": {
            "type": "object", "properties": {"q": {"not": {"type": "string"}}}}}}]
        for choice in ("required", named("lookup")):
            message = bad_request(lambda: s.chat(tools=bad, tool_choice=choice),
                                  "tools[2].function.parameters")
            assert '"lookup"' in message and "'not'" in message, message
        # Only the named function's schema is compiled; "auto" compiles none.
        check_both_ways(s, None, HERMES_CALLS[:1], finish="stop", tools=bad,
                        tool_choice=named("get_weather"))
        assert s.chat(tools=bad).choices[0].finish_reason == "tool_calls"
        array = [{"type": "function", "function": {"name": "f", "parameters": {
            "type": "array"}}}]
        message = bad_request(lambda: s.chat(tools=array, tool_choice="required"),
                              "tools[0].function.parameters")
        assert "must be \"object\"" in message, message
        # One constraint per request.
        message = bad_request(lambda: s.chat(tool_choice="required",
                                             response_format={"type": "json_object"}),
                              "tool_choice")
        assert "response_format" in message, message
        bad_request(lambda: s.chat(tool_choice=named("nope")), "tool_choice.function.name")
        check_both_ways(s, None, HERMES_CALLS, tool_choice="required")  # still serving
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
        follow = next_turn(msg)
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
            # Forced calls in the family's syntax are read back by its parser, streamed too;
            # a script of that syntax passes unchanged.
            first = calls[0][0]
            call = check_forced(s, TIGHT_TOOLS, first)
            if not special and content is None:
                assert (call["name"], json.loads(call["arguments"])) == calls[0], (call, calls)
            check_forced(s, TIGHT_TOOLS, parallel_tool_calls=False)
        except Exception as e:
            raise AssertionError("%s (%s): %s; see %s" % (name, template, e, s.log_path)) from e
        finally:
            s.stop()


# Tools for a real model sampling freely under the constraint: enums, ranges, patterns, formats,
# nested objects, arrays, optional and nullable fields, no parameters. Strings are bounded: a
# 135M model sampled at 0.9 may otherwise write one until max_tokens (valid, but unfinished).
SAMPLED_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather forecast for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 24},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search_flights", "description": "Find flights between two airports.",
        "parameters": {"type": "object", "properties": {
            "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "date": {"type": "string", "format": "date"},
            "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
            "cabin": {"enum": ["economy", "business", "first"]}},
            "required": ["origin", "destination", "date"]}}},
    {"type": "function", "function": {
        "name": "add_contact", "description": "Save a contact.", "strict": True,
        "parameters": {"type": "object", "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 30},
            "emails": {"type": "array", "items": {"type": "string", "format": "email"},
                       "maxItems": 2},
            "address": {"type": "object", "properties": {
                "street": {"type": "string", "maxLength": 40},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["zip"], "additionalProperties": False},
            "vip": {"type": "boolean"},
            "note": {"type": ["string", "null"], "maxLength": 30}},
            "required": ["name", "address"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "get_time", "description": "The time now."}},
]
SAMPLED_QUESTION = [
    {"role": "system", "content": "You are a travel assistant. Use the tools."},
    {"role": "user", "content": "I fly from Paris to Tokyo on 2025-03-14 with my wife. What "
                                "will the weather be there? Also save Ana (ana@example.com)."}]


def test_sampled_calls_validate(jisu, workdir):
    """The demo model (the bundled tiny model without it) sampled freely, with several seeds,
    all requests at once (one continuous batch): every reply, streamed or not, is calls only,
    each of a declared function (the named one when named) with arguments that validate."""
    model = server_util.find_smollm2() or server_util.TINY
    template = os.path.join(workdir, "sampled.jinja")
    with open(template, "w") as f:
        f.write(HERMES_LIKE)  # ChatML, as SmolLM2's own template, with the tools rendered
    s = ToolServer(jisu, "sampled", model, template, kv_memory="512MiB")
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in SAMPLED_TOOLS}
    jobs = []
    for seed in (1, 2, 3):
        jobs += [("required", True, seed), ("required", False, seed)]
        jobs += [(named(n), True, seed) for n in schemas]
    jobs += [(c, p, 7) + ("stream",) for c, p, _ in jobs[:6]]

    def run(job):
        choice, parallel, seed = job[:3]
        kw = dict(messages=SAMPLED_QUESTION, tools=SAMPLED_TOOLS, tool_choice=choice,
                  parallel_tool_calls=parallel, temperature=0.9, seed=seed, max_tokens=1000)
        if len(job) > 3:
            return job, s.stream(**kw)
        ch = s.chat(**kw).choices[0]
        return job, (ch.message.content, message_calls(ch.message), ch.finish_reason)

    failures, num_calls, examples = [], 0, []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            for job, (content, calls, finish) in pool.map(run, jobs):
                function = None if job[0] == "required" else job[0]["function"]["name"]
                want = "stop" if function else "tool_calls"
                problem = None
                if content is not None or finish != want or not calls:
                    problem = "content %r, finish %s, %d calls" % (content, finish, len(calls))
                elif len(calls) > 1 and (function or not job[1]):
                    problem = "%d calls where one was allowed" % len(calls)
                for c in calls:
                    if problem:
                        break
                    if c["name"] not in schemas or function not in (None, c["name"]):
                        problem = "call of %r" % c["name"]
                        break
                    errors = list(jsonschema.Draft202012Validator(
                        schemas[c["name"]],
                        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
                        .iter_errors(json.loads(c["arguments"])))
                    if errors:
                        problem = "%s: %s" % (c["arguments"], errors[0].message)
                num_calls += len(calls)
                if len(examples) < 3 and calls:
                    examples.append("%s(%s)" % (calls[0]["name"], calls[0]["arguments"]))
                if problem:
                    failures.append("%s: %s" % (job, problem))
    finally:
        s.stop()
    print("  %d replies, %d calls, %d failures (%s)" % (len(jobs), num_calls, len(failures),
                                                      os.path.basename(model)))
    print("  e.g. " + "; ".join(examples))
    assert not failures, failures


def main():
    args = server_util.arg_parser().parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        return 1 if run_tests(globals(), args.k, args=(args.jisu, workdir)) else 0


if __name__ == "__main__":
    sys.exit(main())
