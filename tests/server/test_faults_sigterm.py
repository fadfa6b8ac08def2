#!/usr/bin/env python3
"""SIGTERM under load (issue 37): every request's outcome is counted, none is lost silently,
and the server exits 0. What `jisu serve` promises on SIGTERM (cmd_serve.cc, HttpServer::
Shutdown):

- from the signal on, every new generation request, on a new connection or on one it already
  holds (keep-alive), gets 503 `service_unavailable` with Retry-After and `Connection: close`;
  /health answers 503 "draining" so a load balancer stops sending;
- connections accepted but still waiting for a connection thread (more clients than
  --max-connections) get that 503 too once a thread is free: they are not closed unanswered;
- in-flight requests run to their end for up to --drain-timeout seconds: their answers are
  complete and equal the answers of the same greedy requests before the signal;
- past the drain timeout, what is still running is cancelled and told: a non-streamed request
  gets 503 "the request was cancelled: the server is shutting down", a streamed one a final
  chunk with finish_reason "abort" and then [DONE];
- then it stops listening (a new connection is refused) and exits with status 0.

Usage: tests/server/test_faults_sigterm.py [-k NAME]; exit status 0 when every scenario passed.
"""
import concurrent.futures
import http.client
import signal
import sys
import time
import urllib.error
import urllib.request

from fault_util import Server, report, run_request, tally
from server_util import arg_parser, run_tests


def body(i, tokens, stream):
    return {"prompt": "Draining request %d: class Worker%d(" % (i, i), "max_tokens": tokens,
            "temperature": 0, "ignore_eos": True, "stream": stream}


def wait_in_flight(server, n, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if server.metric("jisu:http_requests_in_flight") >= n:
            return
        time.sleep(0.02)
    raise AssertionError("only %s of %d requests in flight" % (
        server.metric("jisu:http_requests_in_flight"), n))


def keep_alive_connection(server):
    """A connection that has served one request and stays open (HTTP/1.1 keep-alive)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    first = run_request(server.port, body(999, 2, False), conn=conn)
    assert first.kind == "completed", first
    return conn


def sigterm_under_load(name, drain_timeout, n, tokens, reference=True):
    """Runs n requests (half streamed), signals once all are in flight, then sends late
    requests on new connections and on a kept-alive one; returns (outcomes, late, rc)."""
    server = Server("faults_" + name, "--kv-memory", "64MiB", "--max-model-len", "1024",
                    "--drain-timeout", drain_timeout)
    try:
        # The reference answers, from the same server before the signal.
        expected = None
        if reference:
            with concurrent.futures.ThreadPoolExecutor(n) as ex:
                ref = list(ex.map(lambda i: run_request(server.port, body(i, tokens, False)),
                                  range(n)))
            assert all(o.kind == "completed" for o in ref), ref
            expected = [o.text for o in ref]
        kept = [keep_alive_connection(server) for _ in range(2)]
        ex = concurrent.futures.ThreadPoolExecutor(n + 4)
        futures = [ex.submit(run_request, server.port, body(i, tokens, i % 2 == 0))
                   for i in range(n)]
        wait_in_flight(server, n)
        t_signal = time.time()
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)  # the signal thread starts the drain
        try:
            health = urllib.request.urlopen(server.url("/health"), timeout=10).status
        except urllib.error.HTTPError as e:
            health = e.code
        late = [ex.submit(run_request, server.port, body(100 + i, 4, False)) for i in range(4)]
        late += [ex.submit(run_request, server.port, body(200 + i, 4, False), conn=c)
                 for i, c in enumerate(kept)]
        outcomes = [f.result() for f in futures]
        late_outcomes = [f.result() for f in late]
        ex.shutdown()
        rc = server.proc.wait(timeout=float(drain_timeout) + 60)
        seconds = time.time() - t_signal
        assert health == 503, health  # draining: a load balancer stops sending
        return outcomes, expected, late_outcomes, rc, seconds, server
    finally:
        server.kill()


def scenario_sigterm_drain_completes():
    n, tokens = 16, 384
    outcomes, expected, late, rc, seconds, server = sigterm_under_load(
        "sigterm_drain", drain_timeout=60, n=n, tokens=tokens)
    counts = tally(outcomes, expected)
    late_counts = tally(late)
    report("sigterm_drain", counts, seconds, late=late_counts, exit_status=rc)
    assert counts["lost"] == 0 and counts["corrupted"] == 0, (counts, outcomes)
    assert counts["completed"] == n, outcomes  # all finish inside the drain
    # Sent during the drain, on new and on kept-alive connections: 503 with Retry-After.
    assert late_counts["lost"] == 0, late
    assert all(o.kind == "told" and o.detail.startswith("503") and
               o.detail.endswith("retry-after=1") for o in late), late
    assert rc == 0, rc
    assert "stopped" in server.log_text()
    after = run_request(server.port, body(300, 4, False))
    assert after.kind == "refused", after


def scenario_sigterm_drain_timeout():
    # Requests far longer than the 1 s drain: cancelled at its end, each one told.
    n, tokens = 8, 900
    outcomes, _, late, rc, seconds, server = sigterm_under_load(
        "sigterm_timeout", drain_timeout=1, n=n, tokens=tokens, reference=False)
    counts = tally(outcomes)
    late_counts = tally(late)
    report("sigterm_drain_timeout", counts, seconds, late=late_counts, exit_status=rc)
    assert counts["lost"] == 0 and counts["corrupted"] == 0, (counts, outcomes)
    assert counts["told"] == n, outcomes
    for i, o in enumerate(outcomes):
        if i % 2 == 0:
            assert o.detail == "finish_reason abort", o
        else:
            assert o.detail.startswith("503") and "shutting down" in o.detail, o
    assert late_counts["lost"] == 0, late
    assert rc == 0, rc
    assert seconds < 30, seconds


def scenario_sigterm_queued_connections():
    # More connections than connection threads (--max-connections 5): at the signal some are
    # accepted but still wait for a thread. They must be answered (503), not closed unanswered.
    server = Server("faults_sigterm_queued", "--kv-memory", "64MiB", "--max-model-len", "1024",
                    "--max-connections", "5", "--drain-timeout", "60")
    try:
        ex = concurrent.futures.ThreadPoolExecutor(16)
        first = [ex.submit(run_request, server.port, body(i, 600, i % 2 == 0)) for i in range(4)]
        wait_in_flight(server, 4)  # /metrics takes the fifth thread
        queued = [ex.submit(run_request, server.port, body(10 + i, 600, i % 2 == 0))
                  for i in range(12)]
        time.sleep(0.3)  # one takes the free thread, the others wait for one
        t_signal = time.time()
        server.proc.send_signal(signal.SIGTERM)
        outcomes = [f.result() for f in first + queued]
        ex.shutdown()
        rc = server.proc.wait(timeout=90)
        counts = tally(outcomes)
        report("sigterm_queued_connections", counts, time.time() - t_signal, exit_status=rc)
        assert counts["lost"] == 0, [o for o in outcomes if o.kind == "lost"]
        assert all(o.kind == "completed" for o in outcomes[:4]), outcomes[:4]
        assert counts["told"] >= 8, outcomes  # queued at the signal: 503 with Retry-After
        assert all(o.detail.startswith("503") and o.detail.endswith("retry-after=1")
                   for o in outcomes if o.kind == "told"), outcomes
        assert rc == 0, rc
    finally:
        server.kill()


def main():
    args = arg_parser(jisu=False).parse_args()
    return 1 if run_tests(globals(), args.k, prefix="scenario_") else 0


if __name__ == "__main__":
    sys.exit(main())
