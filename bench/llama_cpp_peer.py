#!/usr/bin/env python3
"""Times llama.cpp on a GGUF file, as `jisu bench` times jisu, so the two can be compared in one
sitting on the same file and thread count.

Uses llama.cpp through the `llama-cpp-python` package (PyPI; it compiles llama.cpp when it is
installed), driven through its low-level C API so that only llama_decode is timed:

  pp<N>: one llama_decode of N random tokens from an empty cache (batch = ubatch = N, capped at
         512 per ubatch like llama-bench), logits of the last token only;
  tg<N>: one token, then N llama_decode calls of one token each from positions 1..N (what
         llama-bench's tgN measures: no sampling).

Each is repeated -r times after one untimed warm-up; the table gives the median and the
standard deviation of tokens/s, in `jisu bench`'s table shape. --json prints one object.

Install (outside the repository, e.g. /work/peer-venv):
  python3 -m venv /work/peer-venv
  CMAKE_ARGS="-DGGML_NATIVE=ON" /work/peer-venv/bin/pip install llama-cpp-python
On CPUs with AMX, ggml's AMX path crashed in our VM (segfault in ggml_backend_amx_mul_mat with
llama-cpp-python 0.3.36); bench/cpu_kernels.sh documents the AVX-512 build flags without AMX.
--no-repack turns off llama.cpp's extra buffer types (AMX and weight repacking) at run time.
"""

import argparse
import ctypes
import json
import os
import random
import statistics
import sys
import time

FILE_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 9: "q5_1",
              10: "q2_k", 12: "q3_k_m", 14: "q4_k_s", 15: "q4_k_m", 16: "q5_k_s", 17: "q5_k_m",
              18: "q6_k", 32: "bf16"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", required=True, help="GGUF file")
    p.add_argument("-p", "--n-prompt", type=int, default=512, help="prompt tokens (0 = skip)")
    p.add_argument("-n", "--n-gen", type=int, default=128, help="generated tokens (0 = skip)")
    p.add_argument("-t", "--threads", type=int, default=os.cpu_count(), help="threads")
    p.add_argument("-r", "--repetitions", type=int, default=5, help="timed runs of each test")
    p.add_argument("--no-repack", action="store_true",
                   help="disable llama.cpp's extra buffer types (weight repacking, AMX)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args()
    if a.n_prompt < 0 or a.n_gen < 0 or a.repetitions <= 0 or a.threads <= 0:
        p.error("-p and -n must be >= 0, -r and -t > 0")
    if not os.path.isfile(a.model):
        p.error(f"{a.model}: no such file")
    return a


class Peer:
    def __init__(self, args):
        import llama_cpp as L  # imported late so --help works without the package
        self.L = L
        self._quiet_logs()
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        if args.no_repack:
            mp.use_extra_bufts = False
        self.model = L.llama_model_load_from_file(args.model.encode(), mp)
        if not self.model:
            raise SystemExit(f"llama.cpp could not load {args.model}")
        cp = L.llama_context_default_params()
        n_ctx = max(args.n_prompt, args.n_gen + 1) + 16
        self.ubatch = max(1, min(512, args.n_prompt or 1))
        cp.n_ctx = n_ctx
        cp.n_batch = max(args.n_prompt, 1)
        cp.n_ubatch = self.ubatch
        cp.n_threads = args.threads
        cp.n_threads_batch = args.threads
        cp.no_perf = True
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise SystemExit("llama.cpp could not create a context")
        self.mem = L.llama_get_memory(self.ctx)
        self.n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))
        self.batch = L.llama_batch_init(max(args.n_prompt, 1), 0, 1)
        self.rng = random.Random(1234)

    def _quiet_logs(self):
        L = self.L

        @L.llama_log_callback
        def _drop(level, text, user_data):
            pass

        self._log_cb = _drop  # keep a reference alive
        L.llama_log_set(self._log_cb, ctypes.c_void_p(0))

    def file_type(self):
        buf = ctypes.create_string_buffer(64)
        n = self.L.llama_model_meta_val_str(self.model, b"general.file_type", buf, len(buf))
        if n < 0:
            return "?"
        return FILE_TYPES.get(int(buf.value.decode()), "ftype" + buf.value.decode())

    def _decode(self, tokens, start):
        b = self.batch
        b.n_tokens = len(tokens)
        for i, tok in enumerate(tokens):
            b.token[i] = tok
            b.pos[i] = start + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if i == len(tokens) - 1 else 0
        rc = self.L.llama_decode(self.ctx, b)
        if rc != 0:
            raise SystemExit(f"llama_decode returned {rc}")
        self.L.llama_synchronize(self.ctx)

    def _random_tokens(self, n):
        return [self.rng.randrange(self.n_vocab) for _ in range(n)]

    def prompt(self, n):
        """tokens/s of one n-token prefill from an empty cache."""
        self.L.llama_memory_clear(self.mem, True)
        tokens = self._random_tokens(n)
        t0 = time.perf_counter()
        self._decode(tokens, 0)
        return n / (time.perf_counter() - t0)

    def generate(self, n):
        """tokens/s of n single-token decode steps after a one-token prompt."""
        self.L.llama_memory_clear(self.mem, True)
        self._decode(self._random_tokens(1), 0)
        tokens = self._random_tokens(n)
        t0 = time.perf_counter()
        for i, tok in enumerate(tokens):
            self._decode([tok], 1 + i)
        return n / (time.perf_counter() - t0)

    def close(self):
        L = self.L
        L.llama_batch_free(self.batch)
        L.llama_free(self.ctx)
        L.llama_model_free(self.model)


def summarize(xs):
    if not xs:
        return 0.0, 0.0
    return statistics.median(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def main():
    args = parse_args()
    peer = Peer(args)
    pp, tg = [], []
    for rep in range(-1, args.repetitions):  # rep -1: untimed warm-up
        if args.n_prompt > 0:
            v = peer.prompt(args.n_prompt)
            if rep >= 0:
                pp.append(v)
        if args.n_gen > 0:
            v = peer.generate(args.n_gen if rep >= 0 else min(args.n_gen, 8))
            if rep >= 0:
                tg.append(v)
    ftype = peer.file_type()
    system_info = peer.L.llama_print_system_info().decode(errors="replace").strip()
    peer.close()
    (pp_med, pp_sd), (tg_med, tg_sd) = summarize(pp), summarize(tg)
    if args.json:
        print(json.dumps({
            "engine": "llama.cpp", "llama_cpp_python": peer.L.__version__,
            "model": args.model, "weight_type": ftype, "threads": args.threads,
            "n_prompt": args.n_prompt, "n_gen": args.n_gen, "repetitions": args.repetitions,
            "pp_tokens_per_s": pp_med, "pp_stddev": pp_sd, "pp_runs": pp,
            "tg_tokens_per_s": tg_med, "tg_stddev": tg_sd, "tg_runs": tg,
            "repack": not args.no_repack, "system_info": system_info}))
        return
    print(f"llama.cpp via llama-cpp-python {peer.L.__version__}: {system_info}")
    print("| model | type | threads | test | tokens/s |")
    print("|---|---|---|---|---|")
    if pp:
        print(f"| {args.model} | {ftype} | {args.threads} | pp{args.n_prompt} | "
              f"{pp_med:.2f} ± {pp_sd:.2f} |")
    if tg:
        print(f"| {args.model} | {ftype} | {args.threads} | tg{args.n_gen} | "
              f"{tg_med:.2f} ± {tg_sd:.2f} |")
    print(f"(median ± standard deviation of {args.repetitions} runs)")


if __name__ == "__main__":
    sys.exit(main())
