#!/usr/bin/env python3
# A copy of ../shared/tools/layers_check.py, for .ci/run where that folder is absent.
"""The module graph of src/ (from `crate::name` references outside #[cfg(test)] blocks) must have
no cycle. Prints the cycles found. Usage: layers_check.py [SRC]"""
import os, re, sys

src = sys.argv[1] if len(sys.argv) > 1 else "src"
mods = {}
for root, _, files in os.walk(src):
    for f in files:
        if f.endswith(".rs"):
            p = os.path.join(root, f)
            rel = os.path.relpath(p, src)[:-3]
            name = rel.split(os.sep)[0] if os.sep in rel else rel
            if rel.endswith("/mod"): name = rel.split("/")[0]
            mods.setdefault(name, []).append(p)
for skip in ("main", "lib"):
    mods.pop(skip, None)
edges = {m: set() for m in mods}
for m, paths in mods.items():
    for p in paths:
        text = open(p, encoding="utf-8", errors="replace").read()
        cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+tests", text)
        if cut: text = text[:cut.start()]
        text = re.sub(r"//[^\n]*", "", text)
        for used in re.findall(r"crate::([a-z_][a-z0-9_]*)", text):
            if used in mods and used != m: edges[m].add(used)
        for group in re.findall(r"crate::\{([^}]*)\}", text):
            for used in re.findall(r"\b([a-z_][a-z0-9_]*)\b", group):
                if used in mods and used != m: edges[m].add(used)
# strongly connected components (Tarjan)
index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index: visit(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: comps.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in sorted(edges):
    if v not in index: visit(v)
n_edges = sum(len(e) for e in edges.values())
if comps:
    detail = "; ".join(" <-> ".join(c) for c in comps)
    print(f"SHORT: {len(mods)} modules, {n_edges} edges, {len(comps)} cycle(s): {detail}")
    sys.exit(1)
print(f"PASS: {len(mods)} modules, {n_edges} edges, no cycle")
