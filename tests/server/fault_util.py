"""Shared pieces of the fault tests (tests/server/test_faults*.py): a classifier that files every
request under one outcome (the server process itself is server_util.Server).

Outcomes: a request either `completed` (200 and the whole answer: a finish reason and, when
streamed, [DONE]), was `told` (a clear error: an HTTP error status with an OpenAI error body, an
error event, or the stream's finish_reason "abort"), was `refused` (the connection was refused
before the request was sent, so the server never saw it), or is `lost`: anything else (a reset
or a stream cut short without a finish). A completed request whose text differs from the
reference run is `corrupted`. The fault tests assert lost == corrupted == 0.
"""
import http.client
import json

from server_util import JISU, ROOT, TINY, Server, free_port, post  # noqa: F401 (re-exported)


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
