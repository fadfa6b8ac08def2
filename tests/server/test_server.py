#!/usr/bin/env python3
"""End-to-end tests of `jisu serve` with real clients: curl and the official `openai` package.

Starts ./build/jisu serve on a free loopback port with the bundled tiny-llama model, waits for
/health, runs every test_* function, then sends SIGTERM and checks that the server exits 0.
Usage: tests/server/test_server.py [--jisu build/jisu] [--model models/tiny-llama]
Exit status 0 when every test passed.
"""
import concurrent.futures
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import TINY, Server, arg_parser, run_against  # noqa: E402
STATE = {}


def base():
    return "http://127.0.0.1:%d" % STATE["port"]


def curl(path, body=None, extra=()):
    """Runs curl; returns (status, body text)."""
    cmd = ["curl", "-sS", "-N", "-o", "-", "-w", "\n%{http_code}", base() + path]
    if body is not None:
        data = body if isinstance(body, str) else json.dumps(body)
        cmd += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
    else:
        data = None
    cmd += list(extra)
    out = subprocess.run(cmd, input=data, capture_output=True, text=True, timeout=120).stdout
    text, _, code = out.rpartition("\n")
    return int(code), text


def client():
    return openai.OpenAI(base_url=base() + "/v1", api_key="unused", max_retries=0, timeout=120)


def metric(name, labels=""):
    text = urllib.request.urlopen(base() + "/metrics", timeout=10).read().decode()
    m = re.search(r"^%s(\{[^}]*%s[^}]*\})? ([0-9.eE+-]+)$" % (re.escape(name), re.escape(labels)),
                  text, re.M)
    assert m, "metric %s missing" % name
    return float(m.group(2))


def sse_events(text):
    return [line[6:] for line in text.splitlines() if line.startswith("data: ")]


# ---- curl -----------------------------------------------------------------------------------

def test_health_models_metrics():
    code, body = curl("/health")
    assert code == 200, (code, body)
    code, body = curl("/v1/models")
    models = json.loads(body)
    assert code == 200 and models["object"] == "list"
    assert models["data"][0]["id"] == "tiny-llama", models
    code, body = curl("/metrics")
    assert code == 200
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting",
                 "vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"):
        assert re.search(r"^%s[{ ]" % re.escape(name), body, re.M), name


def test_curl_chat_and_completion():
    code, body = curl("/v1/chat/completions", {
        "model": "tiny-llama", "max_tokens": 8, "temperature": 0,
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "Hello"}]})
    assert code == 200, body
    r = json.loads(body)
    assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-")
    assert r["choices"][0]["message"]["role"] == "assistant"
    assert r["choices"][0]["finish_reason"] in ("stop", "length")
    u = r["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    assert "cached_tokens" in u["prompt_tokens_details"]
    code, body = curl("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 5,
                                          "temperature": 0, "ignore_eos": True})
    r = json.loads(body)
    assert code == 200 and r["object"] == "text_completion", body
    assert r["usage"]["completion_tokens"] == 5 and r["choices"][0]["finish_reason"] == "length"


def test_curl_streaming():
    code, body = curl("/v1/chat/completions", {
        "max_tokens": 6, "temperature": 0, "stream": True, "ignore_eos": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "Tell me a story"}]})
    assert code == 200, body
    events = sse_events(body)
    assert events[-1] == "[DONE]", events[-3:]
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 6
    finishes = [c["choices"][0]["finish_reason"] for c in chunks[:-1]]
    assert finishes[-1] == "length" and all(f is None for f in finishes[:-1])


def test_curl_errors_leave_server_healthy():
    long_prompt = "word " * 5000
    cases = [
        ("/v1/chat/completions", "{not json", 400),
        ("/v1/chat/completions", "[1, 2]", 400),
        ("/v1/chat/completions", {"messages": "hi"}, 400),
        ("/v1/chat/completions", {"messages": []}, 400),
        ("/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]}, 400),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": 5}]}, 400),
        ("/v1/completions", {"prompt": "x", "temperature": "hot"}, 400),
        ("/v1/completions", {"prompt": "x", "temperature": -1}, 400),
        ("/v1/completions", {"prompt": "x", "top_p": 0}, 400),
        ("/v1/completions", {"prompt": "x", "max_tokens": 0}, 400),
        ("/v1/completions", {"prompt": "x", "n": 1000}, 400),
        ("/v1/completions", {"prompt": "x", "stop": 3}, 400),
        ("/v1/completions", {"prompt": "x", "logprobs": 99}, 400),
        ("/v1/completions", {"prompt": [1, 2, 10**9]}, 400),
        ("/v1/completions", {"prompt": long_prompt}, 400),
        ("/v1/completions", {"prompt": "x", "model": "gpt-4"}, 404),
        ("/v1/completions", {}, 400),
        ("/v1/nothing", {"prompt": "x"}, 404),
    ]
    for path, body, want in cases:
        code, text = curl(path, body)
        assert code == want, (path, body if len(str(body)) < 200 else "...", code, text)
        err = json.loads(text)["error"]
        assert err["message"] and err["type"], err
        assert "param" in err and "code" in err
    # A body over --max-body-bytes (1 MiB in this test).
    code, text = curl("/v1/completions", "x" * (2 << 20))
    assert code == 413, code
    code, _ = curl("/health")
    assert code == 200


# ---- openai client ---------------------------------------------------------------------------

def test_openai_chat():
    r = client().chat.completions.create(
        model="tiny-llama", temperature=0, max_tokens=10,
        messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    assert isinstance(r.choices[0].message.content, str)
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.usage.prompt_tokens_details.cached_tokens >= 0


def test_openai_completion_and_stop():
    c = client()
    full = c.completions.create(model="tiny-llama", prompt="Once upon a time", max_tokens=20,
                                temperature=0, extra_body={"ignore_eos": True})
    text = full.choices[0].text
    assert full.usage.completion_tokens == 20
    # Stop at a piece of text the greedy run produced: the output ends right before it.
    probe = text[len(text) // 2:len(text) // 2 + 3]
    if probe.strip():
        stopped = c.completions.create(model="tiny-llama", prompt="Once upon a time",
                                       max_tokens=20, temperature=0, stop=[probe])
        assert stopped.choices[0].finish_reason == "stop", stopped
        assert stopped.choices[0].text == text[:text.index(probe)], (stopped, text, probe)


# A system prompt of several KV blocks: in the default `shared` prefix-cache mode its blocks are
# kept and reused by the next request with the same system prompt.
COUNT_MESSAGES = [
    {"role": "system", "content": "You are a careful assistant who counts slowly and clearly, "
                                  "one number per line, without skipping any number at all, "
                                  "and who never adds commentary before or after the numbers."},
    {"role": "user", "content": "Count to ten"}]


def test_openai_streaming_include_usage():
    c = client()
    stream = c.chat.completions.create(
        model="tiny-llama", temperature=0, max_tokens=12, stream=True,
        stream_options={"include_usage": True}, extra_body={"ignore_eos": True},
        messages=COUNT_MESSAGES)
    pieces, usage, finish = [], None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            if ch.delta.content:
                pieces.append(ch.delta.content)
            if ch.finish_reason:
                finish = ch.finish_reason
    assert usage is not None and usage.completion_tokens == 12, usage
    assert finish == "length"
    whole = c.chat.completions.create(
        model="tiny-llama", temperature=0, max_tokens=12, extra_body={"ignore_eos": True},
        messages=COUNT_MESSAGES)
    assert "".join(pieces) == whole.choices[0].message.content
    # The second request found the system prompt's blocks in the prefix cache.
    assert whole.usage.prompt_tokens_details.cached_tokens > 0, whole.usage


def test_openai_n_and_seed():
    c = client()
    r = c.completions.create(model="tiny-llama", prompt="The weather today", max_tokens=8,
                             n=3, temperature=1.0, seed=123)
    assert len(r.choices) == 3 and [ch.index for ch in r.choices] == [0, 1, 2]
    assert r.usage.completion_tokens > 0
    again = c.completions.create(model="tiny-llama", prompt="The weather today", max_tokens=8,
                                 n=3, temperature=1.0, seed=123)
    assert [ch.text for ch in r.choices] == [ch.text for ch in again.choices]
    chat = c.chat.completions.create(model="tiny-llama", n=2, max_tokens=4, temperature=0,
                                     messages=[{"role": "user", "content": "Hi"}])
    assert len(chat.choices) == 2
    assert chat.choices[0].message.content == chat.choices[1].message.content  # greedy


def test_openai_logprobs():
    c = client()
    r = c.chat.completions.create(model="tiny-llama", max_tokens=5, temperature=0,
                                  logprobs=True, top_logprobs=3, extra_body={"ignore_eos": True},
                                  messages=[{"role": "user", "content": "Hi"}])
    content = r.choices[0].logprobs.content
    assert len(content) == 5
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == 3
        # Greedy: the chosen token is the most likely one.
        assert abs(t.top_logprobs[0].logprob - t.logprob) < 1e-5
        assert t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob
    r = c.completions.create(model="tiny-llama", prompt="Hello", max_tokens=4, temperature=0,
                             logprobs=2, extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == 4 and len(lp.token_logprobs) == 4 and len(lp.top_logprobs) == 4
    assert all(len(t) <= 2 for t in lp.top_logprobs)


def test_openai_error_statuses():
    c = client()
    try:
        c.chat.completions.create(model="no-such-model", max_tokens=2,
                                  messages=[{"role": "user", "content": "x"}])
        raise AssertionError("expected NotFoundError")
    except openai.NotFoundError as e:
        assert e.status_code == 404
    try:
        c.chat.completions.create(model="tiny-llama", max_tokens=2, temperature=5,
                                  messages=[{"role": "user", "content": "x"}])
        raise AssertionError("expected BadRequestError")
    except openai.BadRequestError as e:
        assert e.status_code == 400 and "temperature" in str(e)


def test_openai_jisu_options():
    # The vendor object travels through the official client's extra_body; each matmul path is
    # deterministic, and a path or a placement are per request, so they mix in one server.
    c = client()

    def ask(options, stream=False):
        kw = dict(model="tiny-llama", prompt="The weather today is", max_tokens=8, temperature=0,
                  extra_body={"ignore_eos": True, "jisu": options})
        if not stream:
            return c.completions.create(**kw).choices[0].text
        return "".join(ch.choices[0].text for ch in c.completions.create(stream=True, **kw)
                       if ch.choices)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        texts = list(pool.map(ask, [{"matmul": "float", "sampling": "host"},
                                    {"matmul": "int8"},
                                    {"matmul": "float", "attention": "dense", "weights": ""},
                                    {"matmul": "int8", "speculative": 0}]))
    assert texts[0] == texts[2] and texts[1] == texts[3], texts
    assert ask({"matmul": "float"}, stream=True) == texts[0]
    assert ask({}) == ask({"matmul": "auto", "sampling": "auto", "speculative": "auto"})
    r = c.chat.completions.create(model="tiny-llama", max_tokens=3, temperature=0,
                                  messages=[{"role": "user", "content": "Hi"}],
                                  extra_body={"jisu": {"matmul": "int8", "sampling": "device"}})
    assert r.choices[0].finish_reason in ("stop", "length")


def test_openai_jisu_option_errors():
    c = client()
    for options, param in [({"fast": True}, "jisu.fast"),
                           ({"matmul": "fp8"}, "jisu.matmul"),
                           ({"sampling": 1}, "jisu.sampling"),
                           ({"speculative": 100}, "jisu.speculative"),
                           ({"speculative": 2}, "jisu.speculative"),  # no drafter here
                           ({"weights": "w8a8"}, "jisu.weights"),  # not loaded
                           ("float", "jisu")]:
        try:
            c.completions.create(model="tiny-llama", prompt="x", max_tokens=2,
                                 extra_body={"jisu": options})
            raise AssertionError("expected BadRequestError for %r" % (options,))
        except openai.BadRequestError as e:
            assert e.status_code == 400, e
            assert e.body["param"] == param, (options, e.body)
            assert param in e.body["message"], e.body
    assert curl("/health")[0] == 200


# ---- concurrency and disconnects -----------------------------------------------------------

def _greedy(i):
    return client().completions.create(
        model="tiny-llama", prompt="Story number %d: once upon a time" % (i % 16), max_tokens=16,
        temperature=0, extra_body={"ignore_eos": True}).choices[0].text


def test_concurrent_equals_sequential():
    sequential = [_greedy(i) for i in range(16)]
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        parallel = list(pool.map(_greedy, range(64)))
    for i, text in enumerate(parallel):
        assert text == sequential[i % 16], (i, text, sequential[i % 16])


def _as_user(i):
    r = client().chat.completions.create(
        model="tiny-llama", max_tokens=2, temperature=0, user="user-%d" % i,
        messages=[{"role": "system", "content": "You are a terse assistant."},
                  {"role": "user", "content": "Say hi %d" % (i % 5)}])
    return r.usage.prompt_tokens


def test_many_users_are_tenants():
    # Regression: user names once became huge tenant ids and the per-tenant state took GBs.
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        prompts = list(pool.map(_as_user, range(200)))
    assert all(p > 0 for p in prompts)
    assert curl("/health")[0] == 200
    text = urllib.request.urlopen(base() + "/metrics", timeout=10).read().decode()
    tenants = set(re.findall(r'^jisu:tenant_prompt_tokens_total\{tenant="([^"]+)"\}', text, re.M))
    assert len(tenants) >= 2 and "other" in tenants, sorted(tenants)
    rss_kib = int(re.search(r"VmRSS:\s+(\d+)", open("/proc/%d/status" % STATE["pid"]).read()).group(1))
    assert rss_kib < 2 * 1024 * 1024, rss_kib


def _drop_mid_stream(i):
    conn = http.client.HTTPConnection("127.0.0.1", STATE["port"], timeout=60)
    body = json.dumps({"prompt": "Drop %d" % i, "max_tokens": 400, "stream": True,
                       "ignore_eos": True, "temperature": 0})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    resp.fp.readline()  # the first chunk: generation has started
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def _wait_until_idle(kv_blocks_baseline, seconds=20):
    """Waits until nothing runs and the KV blocks in use are back to the baseline."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if (metric("jisu:kv_blocks_in_use") == kv_blocks_baseline
                and metric("vllm:num_requests_running") == 0):
            break
        time.sleep(0.1)
    assert metric("jisu:kv_blocks_in_use") == kv_blocks_baseline, "KV blocks not freed"


def test_disconnect_frees_kv():
    baseline = metric("jisu:kv_blocks_in_use")
    cancelled = metric("jisu:requests_finished_total", 'finished_reason="cancelled"')
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(_drop_mid_stream, range(8)))
    _wait_until_idle(baseline)
    assert metric("vllm:num_requests_running") == 0
    # Each dropped stream was cancelled (not run on to its 400 tokens).
    assert metric("jisu:requests_finished_total", 'finished_reason="cancelled"') == cancelled + 8
    code, _ = curl("/health")
    assert code == 200


def _stream_once(i, tokens):
    """One streaming request on its own connection; returns (ok, chunks, ttft, seconds)."""
    t0 = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", STATE["port"], timeout=300)
    body = json.dumps({"prompt": "Stream %d says" % i, "max_tokens": tokens, "stream": True,
                       "ignore_eos": True, "temperature": 0})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        return False, 0, 0, 0
    chunks, ttft, done = 0, None, False
    for line in resp:
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        if line == b"data: [DONE]":
            done = True
            break
        if ttft is None:
            ttft = time.time() - t0
        chunks += 1
    conn.close()
    return done and chunks == tokens, chunks, ttft or 0, time.time() - t0


def test_server_cpu_metrics_grow():
    stages = ("http", "parse", "prepare", "submit", "stream", "write", "respond")
    series = lambda st: metric("jisu:server_cpu_seconds_total", 'stage="%s"' % st)
    before = {st: series(st) for st in stages}
    process_before = metric("process_cpu_seconds_total")
    code, _ = curl("/v1/completions", {"prompt": "Count", "max_tokens": 8, "stream": True,
                                       "ignore_eos": True})
    assert code == 200
    code, _ = curl("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                            "max_tokens": 8, "ignore_eos": True})
    assert code == 200
    time.sleep(0.2)  # flushed by the logger, after the answer was written
    after = {st: series(st) for st in stages}
    grown = [st for st in stages if after[st] > before[st]]
    assert grown == list(stages), (before, after)
    assert metric("process_cpu_seconds_total") > process_before
    # Small next to the process: a few requests cost milliseconds of server CPU.
    assert sum(after.values()) < metric("process_cpu_seconds_total")


def _drop_while_waiting(i):
    conn = http.client.HTTPConnection("127.0.0.1", STATE["port"], timeout=60)
    body = json.dumps({"prompt": "Wait %d" % i, "max_tokens": 400, "n": 4, "ignore_eos": True,
                       "temperature": 0})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    deadline = time.time() + 10  # wait until generating (no response byte comes before the end)
    while metric("vllm:num_requests_running") < 4 and time.time() < deadline:
        time.sleep(0.01)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def test_non_streaming_disconnect_cancels():
    baseline = metric("jisu:kv_blocks_in_use")
    cancelled = metric("jisu:requests_finished_total", 'finished_reason="cancelled"')
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(_drop_while_waiting, range(4)))
    _wait_until_idle(baseline)
    now = metric("jisu:requests_finished_total", 'finished_reason="cancelled"')
    assert now - cancelled == 16, (cancelled, now)


def test_256_concurrent_streams():
    n, tokens = 256, 16
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        results = list(pool.map(lambda i: _stream_once(i, tokens), range(n)))
    wall = time.time() - t0
    errors = sum(1 for ok, *_ in results if not ok)
    ttfts = sorted(r[2] for r in results)
    print("  256 streams x %d tokens: %d errors, wall %.2fs, %.0f tok/s, TTFT p50 %.2fs "
          "p99 %.2fs" % (tokens, errors, wall, n * tokens / wall, ttfts[n // 2],
                         ttfts[int(n * 0.99)]), flush=True)
    assert errors == 0, errors


# ---- runner ---------------------------------------------------------------------------------

def main():
    ap = arg_parser()
    ap.add_argument("--model", default=TINY)
    args = ap.parse_args()
    server = Server("serve_test", "--kv-memory", "128MiB", "--max-body-bytes", 1 << 20,
                    model=args.model, jisu=args.jisu)
    STATE["port"], STATE["pid"] = server.port, server.proc.pid
    return run_against(server, globals(), args.k)


if __name__ == "__main__":
    sys.exit(main())
