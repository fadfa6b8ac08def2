#!/usr/bin/env python3
"""Structured output end to end: `jisu serve` on the bundled SmolLM2 with the official `openai`
client, checked by the `jsonschema` package.

The suite (tests/data/grammar/schemas.json, >= 30 realistic schemas: nested objects, arrays,
enums, $ref and recursion, patterns, formats, optional and nullable fields, unions) is sent as
response_format json_schema, greedy and sampled with several seeds, all at once (one continuous
batch). Every output must finish with "stop", parse as JSON and validate against its schema:
max_tokens is large enough for every schema to finish, so "length" is a failure here. The
suite's strings and map keys have length bounds and its open-ended schemas prompts that show
the expected shape: with the 135M model, sampled at 0.8, an unbounded string or map otherwise
sometimes loops until max_tokens (the grammar keeps it valid, but unfinished). Then the
other spellings (json_object, /v1/completions, vLLM's guided_*, llama.cpp's grammar, the jisu
vendor object, streaming) and the 400s a bad constraint gets.

Usage: tests/server/test_structured_output.py [--jisu build/jisu] [--model M] [-k NAME]
Exit status 0 when every test passed.
"""
import concurrent.futures
import json
import os
import re
import sys
import urllib.request

import jsonschema
import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import ROOT, Server, arg_parser, run_against  # noqa: E402
STATE = {}
SUITE = os.path.join(ROOT, "tests", "data", "grammar", "schemas.json")
MAX_TOKENS = 1500
SEEDS = (1, 2)


def base():
    return "http://127.0.0.1:%d" % STATE["port"]


def client():
    return openai.OpenAI(base_url=base() + "/v1", api_key="unused", max_retries=0, timeout=600)


def validator(schema):
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def messages(entry):
    return [{"role": "system", "content": "You answer with JSON only."},
            {"role": "user", "content": entry["prompt"] + "\nJSON schema: " +
             json.dumps(entry["schema"])}]


def run_schema(entry, temperature, seed):
    r = client().chat.completions.create(
        model="", messages=messages(entry), temperature=temperature, seed=seed,
        max_tokens=MAX_TOKENS,
        response_format={"type": "json_schema", "json_schema": {
            "name": entry["name"], "schema": entry["schema"],
            "strict": entry.get("strict", True)}})
    choice = r.choices[0]
    return entry, temperature, seed, choice.finish_reason, choice.message.content, \
        r.usage.completion_tokens


def test_schema_suite():
    suite = json.load(open(SUITE))["schemas"]
    assert len(suite) >= 30, len(suite)
    jobs = []
    for entry in suite:
        validator(entry["schema"]).check_schema(entry["schema"])
        jobs.append((entry, 0.0, None))
        jobs += [(entry, 0.8, s) for s in SEEDS]
    failures = []
    tokens = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        for entry, temp, seed, finish, text, n in pool.map(lambda j: run_schema(*j), jobs):
            tokens += n
            where = "%s (temperature %s, seed %s)" % (entry["name"], temp, seed)
            if finish != "stop":
                failures.append("%s: finish_reason %s after %d tokens: %r" % (where, finish, n,
                                                                             text[-200:]))
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                failures.append("%s: not JSON (%s): %r" % (where, e, text))
                continue
            errors = list(validator(entry["schema"]).iter_errors(value))
            if errors:
                failures.append("%s: invalid: %s: %r" % (where, errors[0].message, text))
    print("  %d outputs (%d schemas x greedy + %d seeds), %d tokens, %d failures" %
          (len(jobs), len(suite), len(SEEDS), tokens, len(failures)))
    for f in failures:
        print("   ", f)
    assert not failures


def test_json_object_and_completions():
    c = client()
    r = c.chat.completions.create(model="", messages=[{"role": "user", "content":
                                                       "Give a dog's name and age in JSON."}],
                                  temperature=0, max_tokens=MAX_TOKENS,
                                  response_format={"type": "json_object"})
    assert r.choices[0].finish_reason == "stop", r
    assert isinstance(json.loads(r.choices[0].message.content), dict)
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}},
              "required": ["answer"], "additionalProperties": False}
    r = c.completions.create(model="", prompt="Q: What is 6 times 7?\nA (JSON):", temperature=0,
                             max_tokens=200, extra_body={"response_format": {
                                 "type": "json_schema", "json_schema": {"name": "a",
                                                                        "schema": schema}}})
    assert r.choices[0].finish_reason == "stop", r
    validator(schema).validate(json.loads(r.choices[0].text))


def test_other_spellings():
    c = client()
    msgs = [{"role": "user", "content": "Pick a color."}]
    r = c.chat.completions.create(model="", messages=msgs, temperature=0,
                                  extra_body={"guided_choice": ["red", "green", "blue"]})
    assert r.choices[0].message.content in ("red", "green", "blue"), r
    r = c.chat.completions.create(model="", messages=[{"role": "user", "content":
                                                       "Give me a phone number."}],
                                  temperature=0.7, seed=3, max_tokens=50,
                                  extra_body={"guided_regex": r"\(\d{3}\) \d{3}-\d{4}"})
    assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", r.choices[0].message.content), r
    gbnf = 'root ::= "The answer is " [0-9]+ "."'
    for extra in ({"grammar": gbnf}, {"guided_grammar": gbnf}, {"jisu": {"grammar": gbnf}}):
        r = c.chat.completions.create(model="", messages=msgs, temperature=0, max_tokens=50,
                                      extra_body=extra)
        assert re.fullmatch(r"The answer is [0-9]+\.", r.choices[0].message.content), (extra, r)
    schema = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9},
              "minItems": 2, "maxItems": 4}
    for extra in ({"guided_json": schema}, {"json_schema": schema},
                  {"structured_outputs": {"json": json.dumps(schema)}}):
        r = c.chat.completions.create(model="", messages=msgs, temperature=0, max_tokens=100,
                                      extra_body=extra)
        validator(schema).validate(json.loads(r.choices[0].message.content))


def test_streaming_json_schema():
    entry = json.load(open(SUITE))["schemas"][0]
    stream = client().chat.completions.create(
        model="", messages=messages(entry), temperature=0, max_tokens=MAX_TOKENS, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "p",
                                                                "schema": entry["schema"]}})
    text, finish = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop", (finish, text)
    validator(entry["schema"]).validate(json.loads(text))


def test_logit_bias():
    c = client()

    def complete(bias):
        r = c.completions.create(model="", prompt="The capital of France is", temperature=0,
                                 max_tokens=1, logit_bias=bias)
        return r.choices[0].text

    forced_a = complete({"100": 100})
    forced_b = complete({"200": 100})
    assert forced_a != forced_b, (forced_a, forced_b)
    assert complete({"100": 100, "200": -100}) == forced_a
    plain = complete({})
    assert complete({"100": -100, "200": -100}) == plain or plain in (forced_a, forced_b)


def expect_400(body, param, message_part):
    req = urllib.request.Request(base() + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=60)
    except urllib.error.HTTPError as e:
        assert e.code == 400, e.code
        err = json.loads(e.read())["error"]
        assert err["param"] == param, err
        assert message_part in err["message"], err
        return
    raise AssertionError("expected a 400 for %s" % body)


def test_bad_constraints_are_400s():
    msgs = [{"role": "user", "content": "hi"}]
    expect_400({"messages": msgs, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"a": {"not": {}}}}}}},
        "response_format.json_schema.schema", "json_schema at #/properties/a: keyword 'not'")
    expect_400({"messages": msgs, "response_format": {"type": "yaml"}}, "response_format.type",
               "must be")
    expect_400({"messages": msgs, "guided_regex": "(a"}, "guided_regex", "regex at offset")
    expect_400({"messages": msgs, "grammar": "root ::= [a-\nx ::= \"y\""}, "grammar",
               "GBNF line 1")
    expect_400({"messages": msgs, "guided_grammar": "root ::= root \"a\" | \"b\""},
               "guided_grammar", "left-recursive")
    expect_400({"messages": msgs, "functions": [{"name": "f", "parameters": {}}]}, "functions",
               "not supported")
    expect_400({"messages": msgs, "logit_bias": {"9999999": 5}}, "logit_bias",
               "not below the vocabulary size")
    expect_400({"messages": msgs, "logit_bias": {"12": 500}}, "logit_bias", "[-100, 100]")


def main():
    ap = arg_parser()
    ap.add_argument("--model", default="", help="default: the bundled SmolLM2")
    args = ap.parse_args()
    server = Server("serve_structured_test", "--kv-memory", "1GiB", "--max-body-bytes", 1 << 20,
                    model=args.model or None, jisu=args.jisu)
    STATE["port"] = server.port
    return run_against(server, globals(), args.k)


if __name__ == "__main__":
    sys.exit(main())
