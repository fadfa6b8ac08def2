#!/usr/bin/env python3
"""`jisu loadgen` against an https endpoint.

Makes a self-signed certificate for 127.0.0.1 with the openssl command, serves an
OpenAI-style streaming /v1/completions and /v1/models over TLS from Python's standard library,
and checks that loadgen (1) refuses the server when the certificate is not trusted, (2) measures
it when the certificate is trusted through SSL_CERT_FILE (verification on, host name checked),
and (3) measures it with --insecure.
Usage: tests/server/test_loadgen_tls.py [--jisu build/jisu]
Exit status 0 when every check passed.
"""
import argparse
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENS = ["Hello", ",", " TLS", " world"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json({"object": "list", "data": [{"id": "tls-model", "object": "model"}]})
        else:
            self.send_error(404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if self.path != "/v1/completions" or not body.get("stream"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for i, tok in enumerate(TOKENS):
            last = i == len(TOKENS) - 1
            chunk = {"id": "c", "object": "text_completion", "created": 0, "model": "tls-model",
                     "choices": [{"index": 0, "text": tok,
                                  "finish_reason": "length" if last else None}]}
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"id": "c", "object": "text_completion", "created": 0, "model": "tls-model",
                     "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": len(TOKENS),
                                              "total_tokens": 7 + len(TOKENS)}}
            self.wfile.write(b"data: " + json.dumps(usage).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def run_loadgen(jisu, port, out, extra=(), env=None):
    cmd = [jisu, "loadgen", "--base-url", "https://127.0.0.1:%d" % port, "--endpoint",
           "completions", "--num-requests", "6", "--concurrency", "3", "--seed", "1",
           "--out", out] + list(extra)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jisu", default=os.path.join(ROOT, "build", "jisu"))
    args = ap.parse_args()
    if shutil.which("openssl") is None:
        print("SKIP test_loadgen_tls: no openssl command (scripts/setup.sh installs it)")
        return 0
    tmp = tempfile.mkdtemp(prefix="jisu_tls_")
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()

    failures = 0

    def check(name, ok, detail=""):
        nonlocal failures
        print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
        failures += 0 if ok else 1

    def completed(out):
        with open(out) as f:
            report = json.load(f)
        summary = report.get("summary", report)
        return summary.get("completed"), summary.get("failed"), summary.get("output_tokens")

    untrusted = run_loadgen(args.jisu, port, os.path.join(tmp, "untrusted.json"))
    said = untrusted.stdout + untrusted.stderr
    check("untrusted certificate is refused",
          untrusted.returncode != 0 and "certificate is not trusted" in said,
          "rc %d: %s" % (untrusted.returncode, said[-300:]))

    env = dict(os.environ, SSL_CERT_FILE=cert)
    trusted = run_loadgen(args.jisu, port, os.path.join(tmp, "trusted.json"), env=env)
    ok = trusted.returncode == 0
    check("trusted certificate (SSL_CERT_FILE) is measured", ok,
          trusted.stdout[-400:] + trusted.stderr[-400:])
    if ok:
        c, f, toks = completed(os.path.join(tmp, "trusted.json"))
        check("6 requests completed over TLS", c == 6 and f == 0 and toks == 6 * len(TOKENS),
              "completed %s failed %s output tokens %s" % (c, f, toks))

    insecure = run_loadgen(args.jisu, port, os.path.join(tmp, "insecure.json"), ["--insecure"])
    check("--insecure skips verification", insecure.returncode == 0,
          insecure.stdout[-400:] + insecure.stderr[-400:])

    server.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
