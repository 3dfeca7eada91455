#!/usr/bin/env python3
"""Finds import circles between the modules (files) of every crate in the workspace: module
A imports B (a `use` or a path naming `crate::…`, `super::…`, `self::…`, or a child module
by its name) and B, directly or through others, imports A. Prints each circle; exits 1 if there is one.

Run from the repository root: `python3 scripts/import-cycles.py` (CI runs it). A module is
a file; a path is charged to the deepest module file it names (`crate::layout::Probe` to
`layout.rs`, `crate::expiring::claim::x` to `expiring/claim.rs`)."""
import os
import re
import sys

CRATES = ["src", "cli/src", "redis/src", "redis-module/src", "python/src", "report/src",
          "workload/src", "loom-tests/src"]


def module_files(root):
    """Module path (tuple) -> file, for every .rs file under `root`."""
    mods = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            mods[tuple(rel)] = os.path.join(dirpath, f)
    return mods


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    return [p for part in parts if part.strip() for p in expand(prefix + part.strip())]


def strip_comments(src):
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def paths_in(src):
    """The paths a file names: its `use`s (not its `pub use`s) and its inline paths; an
    inline test module at the end (`#[cfg(test)] mod tests { … }`) is left out, since
    its `super` is the file itself."""
    src = strip_comments(src)
    m = re.search(r"#\[cfg\([^\]]*\btest\b[^\]]*\)\]\s*mod\s+\w+\s*\{", src)
    if m:
        src = src[: m.start()]
    out = []
    # A `pub use` is a module's interface (a parent showing its child's items), not a
    # dependency of the module: left out.
    for m in re.finditer(r"(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", src):
        if m.group(1) is None:
            out += expand(m.group(2))
    src = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", src)
    out += re.findall(r"\b(?:crate|super|self)(?:::\w+)+", src)
    return [re.sub(r"\s+as\s+\w+$", "", p).strip() for p in out]


def resolve(path, here, mods, reexports):
    """The deepest module file that `path`, written in module `here`, names."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
        if rest and rest[0] in reexports:  # `crate::Name`, re-exported by the root
            return reexports[rest[0]]
    elif parts[0] in ("super", "self"):
        # `self` is the module itself; each `super` its parent.
        base = list(here)
        rest = parts
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
        base = tuple(base)
    elif here + (parts[0],) in mods:  # a child module named from its parent
        base, rest = here, parts
    else:
        return None
    best = None
    for i in range(len(rest) + 1):
        cand = tuple(base) + tuple(rest[:i])
        if cand in mods:
            best = cand
    return best


def root_reexports(mods):
    """Name -> the module that defines it, for the root's `pub use` of its own modules."""
    out = {}
    src = strip_comments(open(mods[()], encoding="utf-8").read())
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", src):
        for p in expand(m.group(1)):
            p = re.sub(r"\s+as\s+(\w+)$", r"", p).strip()
            parts = [x for x in p.split("::") if x != "crate"]
            target = None
            for i in range(len(parts)):
                if tuple(parts[:i]) in mods and i > 0:
                    target = tuple(parts[:i])
            if target:
                out[parts[-1]] = target
    return out


def cycles(root):
    mods = module_files(root)
    reexports = root_reexports(mods) if () in mods else {}
    edges = {m: set() for m in mods}
    for m, f in mods.items():
        for p in paths_in(open(f, encoding="utf-8").read()):
            t = resolve(p, m, mods, reexports)
            if t is not None and t != m and t != ():
                edges[m].add(t)
    # Tarjan's strongly connected components.
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
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
                out.append(sorted("::".join(c) for c in comp))

    sys.setrecursionlimit(10000)
    for v in mods:
        if v not in index:
            visit(v)
    return out


found = 0
for root in CRATES:
    if not os.path.isdir(root):
        continue
    for comp in cycles(root):
        found += 1
        print(f"{root}: " + " <-> ".join(comp))
print(f"{found} import circle(s)")
sys.exit(1 if found else 0)
