#!/usr/bin/env python3
"""Rebuilds code.txt: snippets of 6-20 lines cut at blank lines from jisu's own sources
(src/**/*.cc except tests, tools/*.py), so the shipped code text is ours to ship.
Run from the repository root: python3 bench/workload/make_code.py"""
import pathlib

root = pathlib.Path(__file__).resolve().parents[2]
files = sorted(p for p in (root / "src").rglob("*.cc") if not p.name.endswith("_test.cc"))
files += sorted((root / "tools").glob("*.py"))
snippets = []
for f in files:
    if "loadgen" in f.relative_to(root).parts:
        continue
    lines = f.read_text(encoding="utf-8").splitlines()
    para, cur = [], []
    for line in lines + [""]:
        if line.strip() == "":
            if cur:
                para.append(cur)
            cur = []
        else:
            cur.append(line)
    chunk = []
    for p in para:
        if p[0].startswith(("#include", "import ", "from ", "#!")):
            continue
        chunk += p + [""]
        if len(chunk) >= 6:
            if len(chunk) <= 21:
                snippets.append("\n".join(chunk).strip())
            chunk = []
out = root / "bench" / "workload" / "code.txt"
out.write_text("\n-----\n".join(snippets) + "\n", encoding="utf-8")
print(f"{len(snippets)} snippets, {out.stat().st_size} bytes")
