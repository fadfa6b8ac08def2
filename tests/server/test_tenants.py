#!/usr/bin/env python3
"""End-to-end tests of API keys, tenants, per-key limits, request-body limits and HTTPS.

Starts ./build/jisu serve with an --api-keys file (bundled tiny-llama model) and drives it with
the official `openai` client and raw sockets: 401 without or with a wrong key, 403 on /metrics
for a key not marked `metrics`, 429 with Retry-After over a key's requests per minute, tokens
per minute and concurrency, concurrency slots freed on every way a request ends (finish, 400
after admission, client disconnect mid-stream and while waiting), tenants that never hit each
other's cached prompt blocks, 413 / 411 / 415 for oversized, unsized or compressed bodies
(without the server reading them into memory), then HTTPS with a self-signed certificate made
by the openssl command (openai client and curl verify it) and clear startup errors for bad
key files and bad certificates.
Usage: tests/server/test_tenants.py [--jisu build/jisu] [-k NAME]
Exit status 0 when every test passed.
"""
import concurrent.futures
import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib

import httpx2
import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import TINY as MODEL, Server, arg_parser, run_against  # noqa: E402
STATE = {}

KEYS = {  # name: (key, line attributes)
    "ops": ("sk-ops-0000000000000000", "tenant=ops metrics"),
    "acme": ("sk-acme-1111111111111111", "tenant=acme"),
    "beta": ("sk-beta-2222222222222222", "tenant=beta"),
    "rpm": ("sk-rpm-33333333333333333", "tenant=rpm rpm=3"),
    "tpm": ("sk-tpm-44444444444444444", "tenant=tpm tpm=300"),
    "conc": ("sk-conc-5555555555555555", "tenant=conc concurrency=2"),
}


def key(name):
    return KEYS[name][0]


def base():
    return "http://127.0.0.1:%d" % STATE["port"]


def client(name, **kw):
    return openai.OpenAI(base_url=base() + "/v1", api_key=key(name) if name else "",
                         max_retries=0, timeout=120, **kw)


def get(path, name=None):
    """GET with an optional key; returns (status, body text)."""
    req = urllib.request.Request(base() + path)
    if name:
        req.add_header("Authorization", "Bearer " + key(name))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(name, labels=""):
    code, text = get("/metrics", "ops")
    assert code == 200, code
    m = re.search(r"^%s(\{[^}]*%s[^}]*\})? ([0-9.eE+-]+)$" % (re.escape(name), re.escape(labels)),
                  text, re.M)
    assert m, "metric %s missing" % name
    return float(m.group(2))


def wait_idle(seconds=30):
    """Until no generation request is being served (every lease released)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if metric("jisu:http_requests_in_flight") == 0 and metric("vllm:num_requests_running") == 0:
            return
        time.sleep(0.05)
    raise AssertionError("requests still in flight after %ds" % seconds)


# ---- keys and tenants ------------------------------------------------------------------------

def test_401_without_or_with_a_wrong_key():
    # No Authorization header at all.
    for path, body in (("/v1/models", None), ("/v1/completions", b'{"prompt": "Hi"}')):
        req = urllib.request.Request(base() + path, data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("no 401 for " + path)
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code
            assert json.loads(e.read())["error"]["code"] == "invalid_api_key"
    # An empty and a wrong key, through the openai client.
    for wrong in ("sk-wrong-key-000000000", key("acme")[:-1]):
        c = openai.OpenAI(base_url=base() + "/v1", api_key="x", max_retries=0,
                          default_headers={"Authorization": "Bearer " + wrong})
        try:
            c.completions.create(model="tiny-llama", prompt="Hi", max_tokens=1)
            raise AssertionError("no 401")
        except openai.AuthenticationError as e:
            assert e.status_code == 401 and e.code == "invalid_api_key", e
            assert e.response.headers.get("www-authenticate") == "Bearer"
        try:
            c.models.list()
            raise AssertionError("no 401")
        except openai.AuthenticationError as e:
            assert e.status_code == 401
    # A key's prefix, or the key without "Bearer", is no key.
    for header in ("Bearer ", key("acme"), "Bearer " + key("acme") + "x"):
        req = urllib.request.Request(base() + "/v1/models", headers={"Authorization": header})
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("accepted %r" % header)
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code
    r = client("acme").completions.create(model="tiny-llama", prompt="Hi", max_tokens=2,
                                          temperature=0)
    assert r.usage.completion_tokens == 2
    assert client("beta").models.list().data[0].id == "tiny-llama"
    assert get("/health") == (200, "ok\n")


def test_metrics_need_a_metrics_key():
    assert get("/metrics")[0] == 401
    code, body = get("/metrics", "acme")
    assert code == 403 and json.loads(body)["error"]["code"] == "permission_denied", (code, body)
    code, body = get("/metrics", "ops")
    assert code == 200 and "jisu:http_requests_in_flight" in body


def test_429_over_requests_per_minute():
    c = client("rpm")
    for i in range(3):
        c.completions.create(model="tiny-llama", prompt="Hi %d" % i, max_tokens=1)
    try:
        c.completions.create(model="tiny-llama", prompt="Hi", max_tokens=1)
        raise AssertionError("no 429")
    except openai.RateLimitError as e:
        assert e.code == "rate_limit_exceeded" and e.type == "requests", e.body
        retry = int(e.response.headers["retry-after"])
        # 3 per minute: one more every 20 s; the bucket refilled a little while the 3 ran.
        assert 1 <= retry <= 20, retry
        assert "requests per minute" in e.body["message"], e.body
    # Other keys are not limited by this one.
    client("acme").completions.create(model="tiny-llama", prompt="Hi", max_tokens=1)


def test_429_over_tokens_per_minute():
    c = client("tpm")
    # The bucket refills from when the first request was charged, which is after this.
    t_start = time.time()
    first = c.completions.create(model="tiny-llama", prompt="word " * 150, max_tokens=40,
                                 temperature=0, extra_body={"ignore_eos": True})
    used = first.usage.prompt_tokens + first.usage.completion_tokens
    assert first.usage.completion_tokens == 40 and 150 <= used < 300, first.usage
    try:
        c.completions.create(model="tiny-llama", prompt="word " * 150, max_tokens=1)
        raise AssertionError("no 429")
    except openai.RateLimitError as e:
        elapsed = time.time() - t_start
        assert e.type == "tokens" and e.code == "rate_limit_exceeded", e.body
        retry = int(e.response.headers["retry-after"])
        # The bucket holds 300 - used (+5 tokens per second since); the prompt needs P tokens.
        need = first.usage.prompt_tokens - (300 - used)
        want = need / 5.0  # seconds at 300 tokens per minute
        assert want - elapsed - 1 <= retry <= want + 1, (retry, want, elapsed)
    try:
        c.completions.create(model="tiny-llama", prompt="word " * 400, max_tokens=1)
        raise AssertionError("no 429")
    except openai.RateLimitError as e:
        assert "retry-after" not in e.response.headers, e.response.headers  # it never fits
        assert "Request too large" in e.body["message"], e.body


def _long(name, n=8, tokens=900):
    """A non-streaming request that keeps the engine busy a while: returns its HTTP status."""
    try:
        client(name).completions.create(model="tiny-llama", prompt="Once", max_tokens=tokens, n=n,
                                        temperature=0, extra_body={"ignore_eos": True})
        return 200
    except openai.APIStatusError as e:
        return e.status_code


def _wait_running(at_least, seconds=30):
    deadline = time.time() + seconds
    while metric("vllm:num_requests_running") + metric("vllm:num_requests_waiting") < at_least:
        assert time.time() < deadline, "requests did not start"
        time.sleep(0.01)


def _exactly_two_slots():
    """With 2 long requests of key `conc` in flight, a third is refused; both complete."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        running = [pool.submit(_long, "conc") for _ in range(2)]
        _wait_running(16)
        try:
            client("conc").completions.create(model="tiny-llama", prompt="x", max_tokens=1)
            refused = None
        except openai.RateLimitError as e:
            refused = e
        statuses = [f.result() for f in running]
    assert statuses == [200, 200], statuses
    assert refused is not None, "a third concurrent request was let in"
    assert refused.response.headers["retry-after"] == "1", refused.response.headers
    assert "concurrent" in refused.body["message"], refused.body


def _drop_mid_stream(i):
    conn = http.client.HTTPConnection("127.0.0.1", STATE["port"], timeout=60)
    body = json.dumps({"prompt": "Drop %d" % i, "max_tokens": 900, "stream": True,
                       "ignore_eos": True})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json",
                                                   "Authorization": "Bearer " + key("conc")})
    resp = conn.getresponse()
    assert resp.status == 200, resp.status
    resp.fp.readline()  # generation has started
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def _drop_while_waiting(i):
    conn = http.client.HTTPConnection("127.0.0.1", STATE["port"], timeout=60)
    body = json.dumps({"prompt": "Wait %d" % i, "max_tokens": 900, "n": 4, "ignore_eos": True})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json",
                                                   "Authorization": "Bearer " + key("conc")})
    _wait_running(4)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def test_concurrency_slots_are_freed_on_every_exit_path():
    wait_idle()
    _exactly_two_slots()  # finishing frees the slots
    c = client("conc")
    for _ in range(5):  # 400 after admission: a bad field, a prompt over the context
        for kwargs in ({"temperature": -1}, {"prompt": "word " * 3000}):
            try:
                c.completions.create(**{"model": "tiny-llama", "prompt": "x", "max_tokens": 1,
                                        **kwargs})
                raise AssertionError("no 400")
            except openai.BadRequestError:
                pass
    for i in range(3):  # clients gone mid-stream, two at a time
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(_drop_mid_stream, range(2 * i, 2 * i + 2)))
        wait_idle()
    for i in range(2):  # a non-streamed request whose client left while it ran
        _drop_while_waiting(i)
        wait_idle()
    cancelled = metric("jisu:requests_finished_total", 'finished_reason="cancelled"')
    assert cancelled >= 6 + 8, cancelled
    _exactly_two_slots()  # a leaked slot would refuse one of the two, an extra one let a third in


def test_tenants_never_hit_each_others_cache():
    system = "You are a careful assistant. " * 40  # about 250 tokens: several full KV blocks
    def ask(name):
        return client(name).chat.completions.create(
            model="tiny-llama", max_tokens=1, temperature=0, user="shared-user-label",
            messages=[{"role": "system", "content": system}, {"role": "user", "content": "Hi"}])
    first = ask("acme")
    assert first.usage.prompt_tokens > 200, first.usage
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    other = ask("beta")  # same prompt, same `user` field, another key's tenant
    assert other.usage.prompt_tokens_details.cached_tokens == 0, other.usage
    again = ask("acme")
    assert again.usage.prompt_tokens_details.cached_tokens >= 192, again.usage


def _raw(request_bytes, read_timeout=30):
    """Sends bytes on a fresh connection; returns (status, headers text, body text)."""
    s = socket.create_connection(("127.0.0.1", STATE["port"]))
    s.settimeout(read_timeout)
    try:
        s.sendall(request_bytes)
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            m = re.search(rb"Content-Length: (\d+)", head)
            if m and len(body) >= int(m.group(1)):
                break
    except ConnectionResetError:
        pass
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    return status, head.decode(errors="replace"), body.decode(errors="replace")


def _peak_rss_kib():
    return int(re.search(r"VmHWM:\s+(\d+)", open("/proc/%d/status" % STATE["pid"]).read()).group(1))


def test_body_limits_413_411_415():
    auth = b"Authorization: Bearer " + key("acme").encode() + b"\r\n"
    # Over --max-body-bytes (1 MiB here), through the openai client.
    try:
        client("acme").completions.create(model="tiny-llama", prompt="x" * (2 << 20), max_tokens=1)
        raise AssertionError("no 413")
    except openai.APIStatusError as e:
        assert e.status_code == 413 and "too large" in e.body["message"], e
    peak = _peak_rss_kib()
    # A chunked body of 64 MiB: refused before it is read.
    chunk = b"x" * (1 << 20)
    body = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(64)) + b"0\r\n\r\n"
    status, head, text = _raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + auth +
                              b"Content-Type: application/json\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n" + body)
    assert status == 411 and json.loads(text)["error"]["code"] == "length_required", (status, text)
    assert "Connection: close" in head, head
    # A gzip body of 1 MiB that inflates to 1 GiB: refused before it is inflated.
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = c.compress(b" " * (1 << 30)) + c.flush()
    assert len(bomb) < (1 << 20)
    status, head, text = _raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + auth +
                              b"Content-Type: application/json\r\nContent-Encoding: gzip\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(bomb) + bomb)
    assert status == 415, (status, text)
    assert json.loads(text)["error"]["code"] == "unsupported_content_encoding", text
    # A body without a length (read until the client closes): refused.
    status, _, text = _raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + auth +
                           b"Content-Type: application/json\r\n\r\n{\"prompt\": \"x\"}")
    assert status == 411, (status, text)
    grown_mib = (_peak_rss_kib() - peak) / 1024
    assert grown_mib < 32, "the refused bodies were read into memory: +%.0f MiB" % grown_mib
    # Keep-alive still works for well-formed requests on one connection.
    conn = http.client.HTTPConnection("127.0.0.1", STATE["port"], timeout=30)
    for _ in range(3):
        conn.request("POST", "/v1/completions", json.dumps({"prompt": "Hi", "max_tokens": 1}),
                     {"Content-Type": "application/json", "Authorization": "Bearer " + key("acme")})
        r = conn.getresponse()
        assert r.status == 200, r.status
        r.read()
    conn.close()
    assert get("/health")[0] == 200


# ---- HTTPS and startup errors (their own servers) --------------------------------------------

def _openssl_cert(directory, name, cn="127.0.0.1"):
    cert, pkey = os.path.join(directory, name + ".crt"), os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=" + cn, "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", pkey, "-out", cert], check=True, capture_output=True)
    return cert, pkey


def test_https_with_a_self_signed_certificate():
    with tempfile.TemporaryDirectory() as d:
        cert, pkey = _openssl_cert(d, "server")
        ctx = ssl.create_default_context(cafile=cert)
        server = Server("serve_tls_test", "--kv-memory", "128MiB", "--tls-cert", cert,
                        "--tls-key", pkey, "--api-keys", STATE["keys_file"], jisu=STATE["jisu"],
                        tls_context=ctx)
        url, port = server.url(), server.port
        try:
            c = openai.OpenAI(base_url=url + "/v1", api_key=key("acme"), max_retries=0,
                              http_client=httpx2.Client(verify=ctx, timeout=60))
            r = c.chat.completions.create(model="tiny-llama", max_tokens=3, temperature=0,
                                          messages=[{"role": "user", "content": "Hello"}])
            assert r.choices[0].finish_reason in ("stop", "length")
            assert r.usage.completion_tokens > 0
            stream = c.completions.create(model="tiny-llama", prompt="Once", max_tokens=4,
                                          stream=True, extra_body={"ignore_eos": True})
            assert sum(1 for ch in stream if ch.choices and ch.choices[0].text) >= 1
            try:
                openai.OpenAI(base_url=url + "/v1", api_key="sk-wrong-0000000000000", max_retries=0,
                              http_client=httpx2.Client(verify=ctx)).models.list()
                raise AssertionError("no 401 over https")
            except openai.AuthenticationError:
                pass
            out = subprocess.run(["curl", "-sS", "--cacert", cert, url + "/health"],
                                 capture_output=True, text=True, timeout=30)
            assert out.returncode == 0 and out.stdout == "ok\n", (out.returncode, out.stderr)
            # Without trusting the certificate, curl refuses it; plain http gets no answer.
            out = subprocess.run(["curl", "-sS", url + "/health"], capture_output=True, text=True,
                                 timeout=30)
            assert out.returncode == 60, (out.returncode, out.stderr)  # peer certificate not OK
            out = subprocess.run(["curl", "-sS", "-m", "10", "http://127.0.0.1:%d/health" % port],
                                 capture_output=True, text=True, timeout=30)
            assert out.returncode != 0 and "ok" not in out.stdout, out
            # TLS 1.1 is refused.
            out = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port,
                                  "-tls1_1"], input="", capture_output=True, text=True, timeout=30)
            assert out.returncode != 0, out.stdout[-500:]
        finally:
            rc = server.terminate()
        assert rc == 0, rc


def _startup_error(args):
    out = subprocess.run([STATE["jisu"], "serve", "-m", MODEL, "--port", "0"] + args,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0, out
    return out.stderr


def test_bad_files_are_clear_startup_errors():
    with tempfile.TemporaryDirectory() as d:
        cert, pkey = _openssl_cert(d, "a")
        cert_b, pkey_b = _openssl_cert(d, "b")
        garbage = os.path.join(d, "garbage.pem")
        with open(garbage, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
        cases = [
            (["--tls-cert", os.path.join(d, "missing.crt"), "--tls-key", pkey],
             "--tls-cert %s: No such file" % os.path.join(d, "missing.crt")),
            (["--tls-cert", garbage, "--tls-key", pkey],
             "--tls-cert %s: not a usable PEM certificate" % garbage),
            (["--tls-cert", cert, "--tls-key", garbage],
             "--tls-key %s: not a usable PEM" % garbage),
            (["--tls-cert", cert, "--tls-key", pkey_b],
             "--tls-key %s: not a usable PEM private key (or not the key of --tls-cert)" % pkey_b),
            (["--tls-cert", cert], "--tls-cert and --tls-key go together"),
        ]
        keys = os.path.join(d, "keys.txt")
        with open(keys, "w") as f:
            f.write("# keys\n%s tenant=acme\n%s tenant=beta rpm=ten\n" % (key("acme"), key("beta")))
        cases.append((["--api-keys", keys], "%s:3: rpm: must be an integer" % keys))
        cases.append((["--api-keys", keys, "--api-key", "x"], "cannot be combined"))
        cases.append((["--prefix-cache-scope", "all"], "--prefix-cache-scope must be"))
        for args, want in cases:
            t0 = time.time()
            err = _startup_error(args)
            assert want in err, (args, err)
            assert key("beta") not in err and key("acme") not in err, err  # keys never printed
            assert time.time() - t0 < 30  # refused before loading the model


# ---- runner ----------------------------------------------------------------------------------

def main():
    args = arg_parser().parse_args()
    STATE["jisu"] = args.jisu
    keys_dir = tempfile.TemporaryDirectory()
    STATE["keys_file"] = os.path.join(keys_dir.name, "keys.txt")
    with open(STATE["keys_file"], "w") as f:
        f.write("# test keys\n")
        for k, attrs in KEYS.values():
            f.write("%s %s\n" % (k, attrs))
    server = Server("serve_tenants_test", "--kv-memory", "128MiB", "--api-keys",
                    STATE["keys_file"], "--max-body-bytes", 1 << 20, jisu=args.jisu)
    STATE["port"], STATE["pid"] = server.port, server.proc.pid
    return run_against(server, globals(), args.k)


if __name__ == "__main__":
    sys.exit(main())
