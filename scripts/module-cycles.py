#!/usr/bin/env python3
"""List the module-level import cycles of the crate under src/.

A module is a file under src/ (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`).
An edge `a -> b` is a `crate::b…` or `super::…` path in a's file, in a `use`
line or inline in code (`super::metrics::record(..)`), that names module b
or an item in it; comments and string literals do not count. Inline modules
of a file (`mod tests { … }`) count as the file, and a `super` inside one
first climbs out of it (so `use super::*` in a file's tests names the file).
Cycles are the strongly connected components with more than one module
(Tarjan), printed one a line with one shortest circle through them.

    python3 scripts/module-cycles.py [src]

Exit status 1 when there is a cycle (`make lint` runs this), else 0.
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


def code_only(text):
    """`text` with comments and the contents of string and character
    literals blanked (a `crate::` in a doc comment or a message is not an
    import, and a `{` in a string must not unbalance the braces)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            i = n if j < 0 else j + len(close)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (m := re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:])):
            i += m.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


INLINE_MOD = re.compile(r"\bmod\s+[A-Za-z_][A-Za-z0-9_]*\s*\{")


def inline_depths(text):
    """For every position, how many inline `mod x { … }` blocks enclose it,
    as a sorted list of (start, end) spans to count against."""
    spans = []
    for m in INLINE_MOD.finditer(text):
        depth, j = 0, m.end() - 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        spans.append((m.end(), j))
    return spans


def nesting(spans, pos):
    return sum(1 for a, b in spans if a <= pos < b)


USE = re.compile(r"\buse\s+((?:crate|super)(?:::[^;]*)?);", re.S)
PATH = re.compile(r"(?<![:\w])crate((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
SUPER_PATH = re.compile(r"(?<![:\w])super((?:::[A-Za-z_][A-Za-z0-9_]*)+)")


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
        text = code_only(fh.read())
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
        text = code_only(fh.read())
    here = mod.split("::")
    spans = inline_depths(text)

    def climb(segs, pos):
        """A `super::…` path at `pos`: each `super` first leaves an inline
        module around `pos`, then climbs from the file (`super` in a/b.rs
        and in a/b/mod.rs both name `a`)."""
        ups = 0
        while segs and segs[0] == "super":
            ups, segs = ups + 1, segs[1:]
        ups -= nesting(spans, pos)
        return (here if ups <= 0 else here[: len(here) - ups]) + segs

    targets = []
    for m in USE.finditer(text):
        for segs in expand(m.group(1)):
            if segs[0] == "crate":
                targets.append(segs[1:])
            elif segs[0] == "super":
                targets.append(climb(segs, m.start()))
    for m in PATH.finditer(text):
        targets.append(m.group(1).strip(":").split("::"))
    for m in SUPER_PATH.finditer(text):
        targets.append(climb(["super"] + m.group(1).strip(":").split("::"), m.start()))
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
sys.exit(1 if sccs else 0)
