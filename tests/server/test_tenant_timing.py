#!/usr/bin/env python3
"""Tenant B cannot tell from time to first token whether tenant A cached a prompt
(CVE-2025-46570's lesson), while A's own repeated prompt is still served from the cache.

Runs `jisu serve` on the bundled SmolLM2-135M-Instruct with an --api-keys file of two tenants,
A and B, and the default prefix-cache scope (a keys file makes it `tenant`). Each trial takes a
fresh system prompt P of about 700 tokens (random words; system messages are the blocks the
default `shared` mode keeps after a request) and, in random order across trials, one of two
conditions:
  hit:  A sends P (so P's blocks are cached for A), then B sends P;
  miss: A sends another fresh prompt of the same length, then B sends P.
Then A sends P again. Every request streams one token; TTFT is the time from sending the request
to the first streamed chunk. B's TTFT is divided by the trial's cold TTFT (A's first send, a
prompt of the same length just before), which cancels how loaded the machine is at the moment.

The test (N trials per condition) passes when
  1. B cannot tell: the medians of B's normalized TTFT under hit and under miss are within 25%
     of each other, and a two-sided Mann-Whitney rank-sum test (p by 20,000 random
     relabelings) gives p >= 0.001 (a clean run fails by chance 1 time in 1,000); B's usage
     never reports cached tokens;
  2. A keeps its hits: the median of A's repeat is at least 5x faster than the median TTFT of a
     cold prompt (A's first sends, hit trials), and the repeat reports >= 640 cached tokens.
3. The same procedure can see a leak: against a server started with --prefix-cache-scope global
   (the opt-in to share across tenants), B's hit median must be at most half its miss median
   with p < 0.01 — so a failure of check 1 would have been caught. This check runs at most 6
   trials per condition (a leak is far from subtle: 6 against 6 reach p < 0.003).
Usage: tests/server/test_tenant_timing.py [--jisu build/jisu] [--trials 10] [--json out.json]
Exit status 0 when every check passed.
"""
import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import ROOT, Server  # noqa: E402
KEY_A = "sk-tenant-a-0123456789abcdef"
KEY_B = "sk-tenant-b-fedcba9876543210"
WORDS = ("river stone cloud amber lantern orchard meadow copper violet harbor summit thistle "
         "glacier ember willow falcon prairie cobalt juniper canyon marble sparrow tundra velvet "
         "walnut quartz saffron beacon crimson delta fjord granite hollow indigo jasmine kestrel "
         "lagoon mosaic nectar oasis pebble quill raven sierra timber umber vapor zephyr").split()


def fresh_prompt(rng, num_words=520):
    return " ".join(rng.choice(WORDS) for _ in range(num_words)) + "."


def ttft(port, key, system):
    """Streams one token; returns (seconds to the first chunk, cached prompt tokens)."""
    body = json.dumps({"max_tokens": 1, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True},
                       "messages": [{"role": "system", "content": system},
                                    {"role": "user", "content": "Summarize."}]})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body,
                 {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    resp = conn.getresponse()
    assert resp.status == 200, (resp.status, resp.read())
    first, usage = None, None
    for line in resp:
        if not line.startswith(b"data: "):
            continue
        if first is None:
            first = time.perf_counter() - t0
        if line.strip() == b"data: [DONE]":
            break
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]
    conn.close()
    return first, usage["prompt_tokens_details"]["cached_tokens"], usage["prompt_tokens"]


def rank_sum_permutation_p(x, y, rounds, rng):
    """Two-sided p of the Mann-Whitney rank-sum test, by random relabeling of the pooled
    samples: how often a random split of the ranks is at least as far from the expected rank
    sum as the observed one."""
    pooled = sorted((v, i) for i, v in enumerate(list(x) + list(y)))
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(pooled):  # ties share their mean rank
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[pooled[k][1]] = (i + j) / 2.0 + 1
        i = j + 1
    expected = len(x) * (len(pooled) + 1) / 2.0
    observed = abs(sum(ranks[:len(x)]) - expected)
    hits = 0
    for _ in range(rounds):
        rng.shuffle(ranks)
        hits += abs(sum(ranks[:len(x)]) - expected) >= observed - 1e-9
    return (hits + 1) / (rounds + 1)


def run_trials(jisu, scope_args, trials, seed, log_name):
    keys = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    keys.write("%s tenant=A\n%s tenant=B\n" % (KEY_A, KEY_B))
    keys.close()
    rng = random.Random(seed)
    results = {"hit": [], "miss": [], "hit_ratio": [], "miss_ratio": [], "a_first": [],
               "a_repeat": [], "b_cached": [], "a_repeat_cached": [], "prompt_tokens": []}
    try:
        server = Server(log_name, "--api-keys", keys.name, "--kv-memory", "1GiB",
                        "--max-batch-tokens", "2048", *scope_args, model=None, jisu=jisu,
                        start_timeout=180)
    except BaseException:
        os.unlink(keys.name)
        raise
    port = server.port
    try:
        ttft(port, KEY_A, fresh_prompt(rng))  # warm-up: first-use allocations, page faults
        conditions = ["hit"] * trials + ["miss"] * trials
        rng.shuffle(conditions)
        for condition in conditions:
            p = fresh_prompt(rng)
            first, _, n = ttft(port, KEY_A, p if condition == "hit" else fresh_prompt(rng))
            b, b_cached, _ = ttft(port, KEY_B, p)
            results[condition].append(b)
            results[condition + "_ratio"].append(b / first)
            results["b_cached"].append(b_cached)
            results["prompt_tokens"].append(n)
            if condition == "hit":
                repeat, cached, _ = ttft(port, KEY_A, p)
                results["a_first"].append(first)
                results["a_repeat"].append(repeat)
                results["a_repeat_cached"].append(cached)
    finally:
        rc = server.terminate()
        os.unlink(keys.name)
    assert rc == 0, "server exit status %s" % rc
    med = {k: statistics.median(v) for k, v in results.items() if v}
    results["p_value"] = rank_sum_permutation_p(results["hit_ratio"], results["miss_ratio"],
                                                   20000, random.Random(seed + 1))
    results["b_ratio"] = med["hit_ratio"] / med["miss_ratio"]
    results["a_speedup"] = med["a_first"] / med["a_repeat"]
    print("  %s: prompt %d tokens, %d trials per condition; B's TTFT / the trial's cold TTFT: "
          "median hit %.3f, miss %.3f (ratio %.3f, rank-sum p %.3f); B's TTFT median hit "
          "%.0f ms, miss %.0f ms; A cold %.0f ms, repeat %.0f ms (%.1fx), repeat cached %d tokens"
          % (" ".join(scope_args) or "default scope", med["prompt_tokens"], trials,
             med["hit_ratio"], med["miss_ratio"], results["b_ratio"], results["p_value"],
             1e3 * med["hit"], 1e3 * med["miss"], 1e3 * med["a_first"], 1e3 * med["a_repeat"],
             results["a_speedup"], min(results["a_repeat_cached"])), flush=True)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jisu", default=os.path.join(ROOT, "build", "jisu"))
    ap.add_argument("--trials", type=int, default=10, help="trials per condition")
    ap.add_argument("--seed", type=int, default=20250546570 % 2**31)
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args()
    failures = []

    isolated = run_trials(args.jisu, [], args.trials, args.seed, "serve_timing_tenant")
    if not min(isolated["prompt_tokens"]) >= 680:
        failures.append("prompts shorter than 680 tokens")
    if not abs(isolated["b_ratio"] - 1) <= 0.25:
        failures.append("B's hit/miss TTFT medians differ by more than 25%%: ratio %.3f"
                        % isolated["b_ratio"])
    if not isolated["p_value"] >= 0.001:
        failures.append("B's TTFT tells hit from miss: permutation p %.4f" % isolated["p_value"])
    if any(isolated["b_cached"]):
        failures.append("B was served cached tokens: %s" % isolated["b_cached"])
    if not isolated["a_speedup"] >= 5:
        failures.append("A's repeat is only %.2fx faster than a cold prompt"
                        % isolated["a_speedup"])
    if not min(isolated["a_repeat_cached"]) >= 640:
        failures.append("A's repeat reused too few tokens: %s" % isolated["a_repeat_cached"])

    shared = run_trials(args.jisu, ["--prefix-cache-scope", "global"], min(args.trials, 6),
                        args.seed, "serve_timing_global")
    if not (shared["b_ratio"] <= 0.5 and shared["p_value"] < 0.01):
        failures.append("with --prefix-cache-scope global the test does not see the leak "
                        "(ratio %.3f, p %.4f): it has no power" % (shared["b_ratio"],
                                                                 shared["p_value"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tenant": isolated, "global": shared, "trials": args.trials}, f, indent=1)
    for f in failures:
        print("FAIL " + f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
