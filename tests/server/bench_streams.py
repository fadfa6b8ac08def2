#!/usr/bin/env python3
"""Benchmark (not a test): N concurrent streaming /v1/completions clients against a running
server, each with a random token-id prompt of P tokens and G generated tokens (ignore_eos).
Prints output tokens/s, errors and TTFT, to set against `jisu bench-engine -c N -p P -n G`
(same engine work without HTTP) for the server-overhead estimate.
Usage: bench_streams.py PORT [N] [P] [G]
"""
import concurrent.futures
import http.client
import json
import random
import sys
import time


def one(port, i, p, g):
    rng = random.Random(i)
    prompt = [rng.randrange(3, 8000) for _ in range(p)]
    t0 = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions",
                 json.dumps({"prompt": prompt, "max_tokens": g, "stream": True,
                             "ignore_eos": True, "temperature": 0,
                             "stream_options": {"include_usage": True}}),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        return False, 0, 0
    ttft, tokens, done = None, 0, False
    for line in resp:
        if not line.startswith(b"data: "):
            continue
        if line.strip() == b"data: [DONE]":
            done = True
            break
        ev = json.loads(line[6:])
        if ev.get("usage"):
            tokens = ev["usage"]["completion_tokens"]
        elif ttft is None:
            ttft = time.time() - t0
    conn.close()
    return done and tokens == g, tokens, ttft or 0


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    p = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    g = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        res = list(pool.map(lambda i: one(port, i, p, g), range(n)))
    wall = time.time() - t0
    errors = sum(1 for ok, _, _ in res if not ok)
    tokens = sum(t for _, t, _ in res)
    ttft = sorted(r[2] for r in res)
    print(json.dumps({"streams": n, "prompt_tokens": p, "gen_tokens": g, "errors": errors,
                      "wall_s": round(wall, 3), "output_tok_per_s": round(tokens / wall, 1),
                      "ttft_p50_s": round(ttft[n // 2], 3), "ttft_max_s": round(ttft[-1], 3)}))


if __name__ == "__main__":
    main()
