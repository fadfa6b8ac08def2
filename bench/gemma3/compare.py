#!/usr/bin/env python3
"""Teacher-forced top-1 agreement between the reference (bench/gemma3/reference.py OUT.json)
and `jisu perplexity --top1-out FILE` on the same text, CTX and CHUNKS.

  python3 bench/gemma3/compare.py REF.json JISU_TOP1.json
"""
import json
import sys

ref = json.load(open(sys.argv[1]))
got = json.load(open(sys.argv[2]))
want = [t for window in ref["top1"] for t in window]
assert len(want) == len(got), (len(want), len(got))
same = sum(a == b for a, b in zip(want, got))
print(f"top-1 agreement {same}/{len(got)} = {100.0 * same / len(got):.2f}%")
