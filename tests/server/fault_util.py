"""Shared pieces of the fault tests (tests/server/test_faults*.py): a `jisu serve` process on a
free port, /metrics readers, and a classifier that files every request under one outcome.

Outcomes: a request either `completed` (200 and the whole answer: a finish reason and, when
streamed, [DONE]), was `told` (a clear error: an HTTP error status with an OpenAI error body, an
error event, or the stream's finish_reason "abort"), was `refused` (the connection was refused
before the request was sent, so the server never saw it), or is `lost`: anything else (a reset
or a stream cut short without a finish). A completed request whose text differs from the
reference run is `corrupted`. The fault tests assert lost == corrupted == 0.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JISU = os.path.join(ROOT, "build", "jisu")
TINY = os.path.join(ROOT, "models", "tiny-llama")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`jisu serve` with extra flags; its log goes to build/<name>.log."""

    def __init__(self, name, *flags, model=TINY):
        self.port = free_port()
        self.log_path = os.path.join(ROOT, "build", name + ".log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [JISU, "serve", "-m", model, "--port", str(self.port)] + [str(f) for f in flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while True:
            try:
                if urllib.request.urlopen(self.url("/health"), timeout=2).status == 200:
                    break
            except Exception:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.kill()
                raise SystemExit("%s did not become healthy; see %s" % (name, self.log_path))
            time.sleep(0.1)

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def metrics(self):
        return urllib.request.urlopen(self.url("/metrics"), timeout=10).read().decode()

    def metric(self, name, labels=""):
        m = re.search(r"^%s(\{[^}]*%s[^}]*\})? ([0-9.eE+-]+)$" % (re.escape(name),
                                                               re.escape(labels)),
                      self.metrics(), re.M)
        assert m, "metric %s%s missing" % (name, labels)
        return float(m.group(2))

    def cancelled(self):
        return self.metric("jisu:requests_finished_total", 'finished_reason="cancelled"')

    def wait_idle(self, seconds=30):
        """Waits until nothing runs or waits and no KV block is held; returns the blocks in use."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if (self.metric("jisu:kv_blocks_in_use") == 0
                    and self.metric("vllm:num_requests_running") == 0
                    and self.metric("vllm:num_requests_waiting") == 0):
                break
            time.sleep(0.05)
        return self.metric("jisu:kv_blocks_in_use")

    def assert_healthy(self):
        """/health 200, no KV block held once idle, and a normal request succeeds."""
        assert urllib.request.urlopen(self.url("/health"), timeout=10).status == 200
        blocks = self.wait_idle()
        assert blocks == 0, "KV blocks still in use: %s" % blocks
        status, body = post(self.port, "/v1/completions",
                            {"prompt": "After the fault", "max_tokens": 4, "temperature": 0,
                             "ignore_eos": True})
        assert status == 200, (status, body)
        assert body["usage"]["completion_tokens"] == 4, body

    def terminate(self, timeout=60):
        """SIGTERM; returns the exit status (or 'timeout' after killing it)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return "timeout"

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def post(port, path, body, timeout=120):
    """One non-streaming request; (status, parsed JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


class Outcome:
    def __init__(self, kind, text="", detail="", usage=None):
        self.kind = kind  # completed | told | refused | lost
        self.text = text
        self.detail = detail
        self.usage = usage  # the non-streamed answer's usage

    def __repr__(self):
        return "Outcome(%s, %r, %s)" % (self.kind, self.text[:40], self.detail[:200])


def run_request(port, body, timeout=300, conn=None):
    """Sends one /v1/completions request (streamed when body["stream"]) and classifies it.

    `conn` reuses an open keep-alive connection instead of a new one."""
    own = conn is None
    try:
        if own:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("POST", "/v1/completions", json.dumps(body),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            err = json.loads(resp.read())["error"]
            ok = bool(err["message"]) and bool(err["type"])
            return Outcome("told" if ok else "lost", detail="%d %s retry-after=%s" % (
                resp.status, err, resp.getheader("Retry-After")))
        if not body.get("stream"):
            r = json.loads(resp.read())
            choice = r["choices"][0]
            if choice["finish_reason"] not in ("stop", "length"):
                return Outcome("lost", detail="finish_reason %r" % choice["finish_reason"])
            return Outcome("completed", choice["text"], usage=r["usage"])
        return _read_stream(resp)
    except ConnectionRefusedError as e:
        return Outcome("refused", detail=repr(e))
    except Exception as e:  # reset, cut short, bad JSON: the client cannot tell what happened
        return Outcome("lost", detail=repr(e))
    finally:
        if own and conn is not None:
            conn.close()


def _read_stream(resp):
    text, finish, done = [], None, False
    for line in resp:
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        if line == b"data: [DONE]":
            done = True
            break
        event = json.loads(line[6:])
        if "error" in event:
            return Outcome("told", "".join(text), detail=str(event["error"]))
        for ch in event.get("choices", []):
            text.append(ch.get("text") or "")
            finish = ch.get("finish_reason") or finish
    if finish == "abort":
        return Outcome("told", "".join(text), detail="finish_reason abort")
    if not done or finish not in ("stop", "length"):
        return Outcome("lost", "".join(text), detail="done=%s finish=%s" % (done, finish))
    return Outcome("completed", "".join(text))


def tally(outcomes, expected=None):
    """Counts per outcome; with `expected` (texts, same order), completed ones that differ are
    counted as corrupted."""
    counts = {"completed": 0, "told": 0, "refused": 0, "lost": 0, "corrupted": 0}
    for i, o in enumerate(outcomes):
        counts[o.kind] += 1
        if o.kind == "completed" and expected is not None and o.text != expected[i]:
            counts["corrupted"] += 1
    return counts


def report(name, counts, seconds, **extra):
    parts = ["%s %s" % (k, v) for k, v in counts.items()]
    parts += ["%s %s" % (k, v) for k, v in extra.items()]
    print("  [%s] %s; %.1fs" % (name, ", ".join(parts), seconds), flush=True)
