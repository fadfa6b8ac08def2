#!/usr/bin/env python3
"""Soak: mixed load at a fixed rate for a set time against `jisu serve`, recording every
window (10 s by default) the server's RSS (from /proc/PID/status), its GPU memory (nvidia-smi,
where there is one), the requests started, completed and failed, and p50/p99 latency; writes
soak.csv, soak.png (matplotlib: bench/requirements-soak.txt, not needed by the tests) and
summary.json with the issue-37 targets checked.

The load is `jisu loadgen`'s mixed workload (chat, summarize, code; shared system prompt;
Poisson arrivals): one loadgen process per window, each starting its requests during its own
window at --rate (a different seed each), so arrivals stay a Poisson process across windows and
each window's latencies are those of the requests it started. A window's row is written when
its last request has ended.

  # a server of its own (the pid is known), 30 minutes at 2 requests/s:
  python3 bench/soak.py --serve "-m models/tiny-llama --kv-memory 256MiB" --rate 2 \\
      --duration 1800 --out bench/results/soak-cpu
  # or an already running server:
  python3 bench/soak.py --base-url http://127.0.0.1:8000 --pid 1234 --rate 2 --duration 600

Targets (issue 37) in summary.json: RSS growth after warm-up (--warmup) <= 2%, 0 errors, the
median of the last 5 minutes' per-window p99 e2e latencies within 20% of the first 5 minutes'
(the two halves of a run shorter than 10 minutes). Warm-up should cover the first use of every
connection thread (--max-connections, 512 by default): each touches its stack once, ~40 KiB of
RSS (measured on tiny-llama, 2026-12-06). The knee rate is where p99 starts to
climb with the rate: bench/serve_cpu.sh measures several rates.
"""
import argparse
import csv
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024.0


def gpu_mib(pid):
    """GPU memory the process holds (MiB), or None without nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return None
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True)
    total = 0.0
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid):
            total += float(parts[1])
    return total


def scrape(base_url, names):
    try:
        text = urllib.request.urlopen(base_url + "/metrics", timeout=10).read().decode()
    except Exception:
        return {n: None for n in names}
    out = {}
    for n in names:
        m = re.search(r"^%s ([0-9.eE+-]+)$" % re.escape(n), text, re.M)
        out[n] = float(m.group(1)) if m else None
    return out


def start_server(jisu, serve_args, log_path):
    port = free_port()
    log = open(log_path, "w")
    proc = subprocess.Popen([jisu, "serve", "--port", str(port)] + shlex.split(serve_args),
                            stdout=log, stderr=subprocess.STDOUT)
    base_url = "http://127.0.0.1:%d" % port
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(base_url + "/health", timeout=2).status == 200:
                return proc, base_url
        except Exception:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    sys.exit("the server did not become healthy; see %s" % log_path)


def loadgen_window(args, base_url, index, out_json):
    n = int(args.rate * args.window * 3) + 20  # more than the window can start
    cmd = [args.jisu, "loadgen", "--base-url", base_url, "--rate", str(args.rate),
           "--duration", str(args.window), "--num-requests", str(n),
           "--seed", str(args.seed + index), "--out", out_json,
           "--label", "soak window %d" % index] + shlex.split(args.loadgen_args)
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def summarize(rows, args):
    """The issue-37 targets over the recorded windows."""
    warm = max(1, int(round(args.warmup / args.window)))
    # p99 drift: the last 5 minutes against the first 5 (halves of a run shorter than 10).
    span_s = min(300.0, args.duration / 2)
    first5 = max(1, int(round(span_s / args.window)))
    after = [r for r in rows[warm:] if r["rss_mib"] is not None]
    rss_growth = None
    if len(after) >= 2:
        base = after[0]["rss_mib"]
        rss_growth = (max(r["rss_mib"] for r in after) - base) / base
    p99s = [r["p99_e2e_ms"] for r in rows if r["p99_e2e_ms"] is not None]
    first = sorted(p99s[:first5])
    last = sorted(p99s[-first5:])
    p99_first = first[len(first) // 2] if first else None
    p99_last = last[len(last) // 2] if last else None
    errors = sum(r["failed"] for r in rows)
    s = {
        "windows": len(rows),
        "window_s": args.window,
        "rate": args.rate,
        "requests_started": sum(r["started"] for r in rows),
        "requests_completed": sum(r["completed"] for r in rows),
        "errors": errors,
        "rss_mib_first": rows[0]["rss_mib"] if rows else None,
        "rss_mib_after_warmup": after[0]["rss_mib"] if after else None,
        "rss_mib_max_after_warmup": max((r["rss_mib"] for r in after), default=None),
        "rss_growth_after_warmup": rss_growth,
        "p99_span_s": span_s,
        "p99_e2e_ms_first_span_median": p99_first,
        "p99_e2e_ms_last_span_median": p99_last,
    }
    s["targets"] = {
        "rss_growth_le_2pct": rss_growth is not None and rss_growth <= 0.02,
        "zero_errors": errors == 0,
        "p99_last_within_20pct_of_first": (p99_first is not None and p99_last is not None
                                           and p99_last <= 1.2 * p99_first),
    }
    return s


def plot(rows, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing (pip install -r bench/requirements-soak.txt): no plot")
        return False
    t = [r["t_s"] / 60 for r in rows]
    fig, ax = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    ax[0].plot(t, [r["rss_mib"] for r in rows], label="RSS")
    if any(r["gpu_mib"] is not None for r in rows):
        ax[0].plot(t, [r["gpu_mib"] for r in rows], label="GPU memory")
    ax[0].set_ylabel("MiB")
    ax[0].legend(loc="lower right")
    ax[1].plot(t, [r["p50_e2e_ms"] for r in rows], label="e2e p50")
    ax[1].plot(t, [r["p99_e2e_ms"] for r in rows], label="e2e p99")
    ax[1].plot(t, [r["p99_ttft_ms"] for r in rows], label="TTFT p99", linestyle=":")
    ax[1].set_ylabel("ms")
    ax[1].legend(loc="upper left")
    ax[2].plot(t, [r["completed"] for r in rows], label="completed")
    ax[2].plot(t, [r["failed"] for r in rows], label="failed", color="red")
    ax[2].set_ylabel("requests / window")
    ax[2].legend(loc="upper left")
    ax[3].plot(t, [r["output_tok_s"] for r in rows])
    ax[3].set_ylabel("output tok/s")
    ax[3].set_xlabel("minutes")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


# not_started: requests of the window's set past its end (loadgen --duration), not errors.
FIELDS = ["window", "t_s", "rss_mib", "gpu_mib", "kv_blocks_in_use", "requests_running",
          "started", "completed", "failed", "not_started", "first_error", "p50_e2e_ms",
          "p99_e2e_ms", "p50_ttft_ms", "p99_ttft_ms", "output_tok_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jisu", default=os.path.join(ROOT, "build", "jisu"))
    ap.add_argument("--serve", help="start `jisu serve` with these arguments (quoted)")
    ap.add_argument("--base-url", help="a running server instead (with --pid)")
    ap.add_argument("--pid", type=int, help="the running server's process id (RSS)")
    ap.add_argument("--rate", type=float, help="requests per second")
    ap.add_argument("--duration", type=float, help="seconds of load")
    ap.add_argument("--window", type=float, default=10, help="seconds per recorded window")
    ap.add_argument("--warmup", type=float, default=60,
                    help="seconds excluded from the RSS growth target")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loadgen-args", default="", help="more `jisu loadgen` arguments (quoted)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                  "soak-" + time.strftime("%Y-%m-%d")))
    ap.add_argument("--label", default="")
    ap.add_argument("--plot-only", action="store_true",
                    help="draw soak.png from --out's soak.csv and summary.json (a run made "
                    "where matplotlib is missing, such as the GPU machine)")
    args = ap.parse_args()
    if args.plot_only:
        return replot(args.out)
    if args.rate is None or args.duration is None:
        sys.exit("--rate and --duration are needed")
    if bool(args.serve) == bool(args.base_url):
        sys.exit("give either --serve or --base-url (with --pid)")
    os.makedirs(args.out, exist_ok=True)
    proc = None
    if args.serve:
        proc, base_url = start_server(args.jisu, args.serve, os.path.join(args.out, "serve.log"))
        pid = proc.pid
    else:
        base_url, pid = args.base_url.rstrip("/"), args.pid
        if pid is None:
            sys.exit("--base-url needs --pid (the server's RSS is read from /proc)")
    tmp = tempfile.mkdtemp(prefix="soak-")
    num_windows = max(1, int(round(args.duration / args.window)))
    pending = {}  # window -> (process, json path, sample)
    rows = []
    csv_path = os.path.join(args.out, "soak.csv")
    t0 = time.time()
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()

        def collect(block):
            for w in sorted(pending):
                p, path, sample = pending[w]
                if not block and p.poll() is None:
                    continue
                _, err = p.communicate()
                del pending[w]
                try:
                    with open(path) as rf:
                        rep = json.load(rf)
                except (OSError, ValueError):
                    rep = {"started": 0, "completed": 0, "failed": 0, "not_started": 0,
                           "first_error": "loadgen failed: " + err.strip()[-200:]}
                row = dict(sample)
                row.update({
                    "started": rep.get("started", 0), "completed": rep.get("completed", 0),
                    "failed": rep.get("failed", 0), "not_started": rep.get("not_started", 0),
                    "first_error": rep.get("first_error", ""),
                    "p50_e2e_ms": rep.get("e2e_ms", {}).get("p50"),
                    "p99_e2e_ms": rep.get("e2e_ms", {}).get("p99"),
                    "p50_ttft_ms": rep.get("ttft_ms", {}).get("p50"),
                    "p99_ttft_ms": rep.get("ttft_ms", {}).get("p99"),
                    "output_tok_s": rep.get("output_token_throughput"),
                })
                rows.append(row)
                writer.writerow(row)
                f.flush()
                print("  window %3d  t %6.0fs  RSS %7.1f MiB  started %3d  completed %3d  "
                      "failed %d  p50 %s ms  p99 %s ms" % (
                          w, row["t_s"], row["rss_mib"] or 0, row["started"], row["completed"],
                          row["failed"], _ms(row["p50_e2e_ms"]), _ms(row["p99_e2e_ms"])),
                      flush=True)

        try:
            for w in range(num_windows):
                path = os.path.join(tmp, "w%05d.json" % w)
                p = loadgen_window(args, base_url, w, path)
                wake = t0 + (w + 1) * args.window
                while time.time() < wake:
                    collect(block=False)
                    time.sleep(min(0.5, max(0.0, wake - time.time())))
                m = scrape(base_url, ["jisu:kv_blocks_in_use", "vllm:num_requests_running"])
                sample = {"window": w, "t_s": round(time.time() - t0, 1),
                          "rss_mib": round(rss_mib(pid), 1), "gpu_mib": gpu_mib(pid),
                          "kv_blocks_in_use": m["jisu:kv_blocks_in_use"],
                          "requests_running": m["vllm:num_requests_running"]}
                pending[w] = (p, path, sample)
            collect(block=True)
        finally:
            for p, _, _ in pending.values():
                p.kill()
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
    rows.sort(key=lambda r: r["window"])
    summary = summarize(rows, args)
    summary.update({"label": args.label, "serve": args.serve, "base_url": base_url,
                    "loadgen_args": args.loadgen_args, "duration_s": args.duration,
                    "host": os.uname().nodename, "cpus": os.cpu_count(),
                    "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")})
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    title = "jisu soak: %.2f req/s for %.0f s%s" % (args.rate, args.duration,
                                                     " (%s)" % args.label if args.label else "")
    plot(rows, os.path.join(args.out, "soak.png"), title)
    print(json.dumps(summary, indent=2))
    return 0


def replot(out):
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    rows = []
    with open(os.path.join(out, "soak.csv")) as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("", None) and k != "first_error" else
                             (v if k == "first_error" else None)) for k, v in r.items()})
    title = "jisu soak: %.2f req/s for %.0f s%s" % (
        summary["rate"], summary["duration_s"],
        " (%s)" % summary["label"] if summary.get("label") else "")
    return 0 if plot(rows, os.path.join(out, "soak.png"), title) else 1


def _ms(v):
    return "%.0f" % v if v is not None else "-"


if __name__ == "__main__":
    sys.exit(main())
