#!/usr/bin/env python3
"""List the module-level import cycles of the crate under src/.

A module is a file under src/ (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`).
An edge `a -> b` is a `use crate::b...` (or `crate::b::` path) in a's file
that names module b or an item in it; nested modules of a file count as the
file. `use super::...` is resolved against the file's parent. Cycles are the
strongly connected components with more than one module (Tarjan), printed
one a line with one shortest circle through them.

    python3 scripts/module-cycles.py [src]

Exit status 0 always; the output is the report (`no cycles` when none).
"""

import os
import re
import sys
from collections import deque

ROOT = sys.argv[1] if len(sys.argv) > 1 else "src"

modules = {}  # name -> path
for dirpath, _, files in os.walk(ROOT):
    for f in files:
        if not f.endswith(".rs"):
            continue
        path = os.path.join(dirpath, f)
        rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
        if rel[-1] == "mod":
            rel = rel[:-1]
        if rel in (["lib"], ["main"]):
            continue
        modules["::".join(rel)] = path


reexports = {}  # module -> {item name -> the child module defining it}


def resolve(segments):
    """The longest known module that is a prefix of a crate path, looking
    through a parent's `pub use child::Item` to the child."""
    for n in range(len(segments), 0, -1):
        name = "::".join(segments[:n])
        if name in modules:
            if n < len(segments) and segments[n] in reexports.get(name, {}):
                return reexports[name][segments[n]]
            return name
    return None


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] for line in text.splitlines())


USE = re.compile(r"\buse\s+((?:crate|super)(?:::[^;]*)?);", re.S)
PATH = re.compile(r"\bcrate((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def expand(tree):
    """`crate::a::{b, c::{d}}` -> [[crate,a,b],[crate,a,c,d]] (prefixes only)."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, rest):
        if not rest:
            out.append(prefix)
            return
        if rest.startswith("{"):
            depth, part, parts = 0, "", []
            for ch in rest[1:-1] if rest.endswith("}") else rest[1:]:
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                if ch == "," and depth == 0:
                    parts.append(part)
                    part = ""
                else:
                    part += ch
            parts.append(part)
            for p in parts:
                if p:
                    walk(prefix, p)
            return
        head, sep, tail = rest.partition("::")
        walk(prefix + [head], tail if sep else "")

    walk([], tree)
    return out


PUB_USE = re.compile(r"\bpub\s+use\s+([^;]*);", re.S)
for mod, path in modules.items():
    with open(path, encoding="utf-8") as fh:
        text = strip_comments(fh.read())
    for m in PUB_USE.finditer(text):
        for segs in expand(m.group(1)):
            segs = [x for x in segs if x != "self"]
            if segs and segs[0] == "crate":
                segs = segs[1:]
            else:
                segs = mod.split("::") + segs if mod else segs
            child = None
            for n in range(len(segs) - 1, 0, -1):
                if "::".join(segs[:n]) in modules:
                    child = "::".join(segs[:n])
                    break
            if child and child != mod and segs[-1] not in ("*",):
                reexports.setdefault(mod, {})[segs[-1]] = child

edges = {m: set() for m in modules}
for mod, path in modules.items():
    with open(path, encoding="utf-8") as fh:
        text = strip_comments(fh.read())
    here = mod.split("::")
    # `super` in a/b.rs and in a/b/mod.rs both name `a`.
    parent = here[:-1]
    targets = []
    for m in USE.finditer(text):
        for segs in expand(m.group(1)):
            if segs[0] == "crate":
                targets.append(segs[1:])
            elif segs[0] == "super":
                base = list(parent)
                segs = segs[1:]
                while segs and segs[0] == "super":
                    base = base[:-1]
                    segs = segs[1:]
                targets.append(base + segs)
    for m in PATH.finditer(text):
        targets.append(m.group(1).strip(":").split("::"))
    # A file's own children, named by relative paths (`runner::run(...)`,
    # `pub use memory::Memory`), are edges too.
    for child in modules:
        if child.startswith(mod + "::" if mod else "") and child.count("::") == len(here):
            leaf = child.rsplit("::", 1)[-1]
            if re.search(r"(?<![:\w])" + leaf + r"::", text):
                edges[mod].add(child)
    for segs in targets:
        target = resolve([s for s in segs if s and s != "self"])
        if target is None or target == mod:
            continue
        # A child module using its ancestor is one room with it.
        if mod.startswith(target + "::"):
            continue
        edges[mod].add(target)

# Tarjan's strongly connected components.
index, low, stack, on, sccs = {}, {}, [], set(), []
counter = [0]


def strong(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in sorted(edges[v]):
        if w not in index:
            strong(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))


sys.setrecursionlimit(10000)
for v in sorted(modules):
    if v not in index:
        strong(v)


def circle(comp):
    """One shortest cycle through the component's first module."""
    start, inside = comp[0], set(comp)
    prev = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges[v]):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


if not sccs:
    print(f"no cycles ({len(modules)} modules)")
for comp in sorted(sccs, key=lambda c: (-len(c), c)):
    print(f"{len(comp)} modules: {' '.join(comp)}")
    print(f"  e.g. {' -> '.join(circle(comp))}")
