#!/usr/bin/env python3
"""Finds import circles among the modules of each library or binary crate.

A module (one source file under src/) depends on another when it names it in a `use` or in a
path (`crate::a::b`, `super::x`, `self::y`); a circle is a set of modules that reach each other
through such edges. Circles make modules impossible to read, test or move one at a time, so
the check fails on any of them.

Rules, kept simple on purpose:
- A path resolves to the deepest module file it names (`crate::a::b::Item` -> `a::b` if
  `src/a/b.rs` exists, else `a`).
- Naming an ancestor (the crate root's re-exports, a parent's items) is no edge: ancestors
  declare their children, and a facade re-exporting its children is not a circle.
- Inline `#[cfg(test)]` modules and macro paths (`$crate::`) are left out; tests/, examples/,
  benches/ and src/bin/ are crates of their own and are not read.

Usage: module_cycles.py [--skip CRATE_NAME]... [CRATE_DIR]...  (default: every workspace
member of ./Cargo.toml). Exit 1 when a crate has a circle, printing it. `--self-test` runs the
unit tests of this script.
"""

import argparse
import contextlib
import io
import os
import re
import sys
import tempfile
import tomllib
import unittest

USE_RE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
PATH_RE = re.compile(r"(?<![\w$:])((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
TEST_MOD_RE = re.compile(r"^#\[cfg\(test\)\]\s*\n\s*(pub\s+)?mod\s+\w+\s*\{", re.M)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def without_test_modules(text):
    m = TEST_MOD_RE.search(text)
    return text[: m.start()] if m else text


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (aliases and globs dropped)."""
    tree = re.sub(r"\s*([{},]|::)\s*", r"\1", tree.strip())
    brace = tree.find("{")
    if brace < 0:
        leaf = re.split(r"\s+as\s+", tree)[0]
        return [leaf[: -len("::*")] if leaf.endswith("::*") else leaf]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    out = []
    for part in filter(None, parts):
        for p in expand_use_tree(part):
            out.append(prefix + p if p != "self" else prefix.rstrip(":"))
    return out


def module_of(src, path):
    """The module path of a source file: src/a/b.rs and src/a/b/mod.rs -> ('a', 'b')."""
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel[-1] == "mod" or rel in (["lib"], ["main"]):
        rel = rel[:-1]
    return tuple(rel)


def crate_modules(src):
    mods = {}
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if not (root == src and d == "bin")]
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(root, f)
                mods[module_of(src, path)] = path
    return mods


def resolve(path, here, modules):
    """The module a `crate::`/`super::`/`self::` path names, seen from module `here`."""
    segs = path.split("::")
    base = list(here)
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    else:
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
    best = tuple(base)
    for i in range(1, len(segs) + 1):
        cand = tuple(base + segs[:i])
        if cand in modules:
            best = cand
    return best


def edges_of(here, text, modules):
    text = without_test_modules(strip_comments(text))
    paths = []
    for m in USE_RE.finditer(text):
        paths.extend(expand_use_tree(m.group(1)))
    paths.extend(PATH_RE.findall(USE_RE.sub("", text)))
    out = set()
    for p in paths:
        target = resolve(p, here, modules)
        if target != here and target != here[: len(target)]:
            out.add(target)
    return out


def circles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def crate_circles(crate_dir):
    src = os.path.join(crate_dir, "src")
    modules = crate_modules(src)
    graph = {}
    for mod, path in modules.items():
        with open(path, encoding="utf-8") as f:
            graph[mod] = edges_of(mod, f.read(), modules)
    return [["::".join(m) or "crate" for m in c] for c in circles(graph)], graph


def crate_name(crate_dir):
    with open(os.path.join(crate_dir, "Cargo.toml"), "rb") as f:
        return tomllib.load(f)["package"]["name"]


def workspace_members(root):
    with open(os.path.join(root, "Cargo.toml"), "rb") as f:
        return [os.path.join(root, m) for m in tomllib.load(f)["workspace"]["members"]]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("crates", nargs="*", help="crate directories (default: the workspace)")
    ap.add_argument("--skip", action="append", default=[], help="crate name to leave out")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if args.self_test:
        return 0 if unittest.main(argv=[sys.argv[0]], exit=False).result.wasSuccessful() else 1
    failed = False
    for crate_dir in args.crates or workspace_members("."):
        if not os.path.isdir(os.path.join(crate_dir, "src")):
            continue
        name = crate_name(crate_dir)
        if name in args.skip:
            print(f"skipped {name}")
            continue
        found, graph = crate_circles(crate_dir)
        for c in found:
            failed = True
            print(f"{name}: modules import each other in a circle: {', '.join(c)}")
        if not found:
            print(f"ok {name} ({len(graph)} modules)")
    return 1 if failed else 0


class Tests(unittest.TestCase):
    def crate(self, files):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "Cargo.toml"), "w") as f:
            f.write('[package]\nname = "t"\n')
        for rel, text in files.items():
            p = os.path.join(d, "src", rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        return d

    def test_a_circle_through_three_modules_is_found(self):
        d = self.crate({
            "lib.rs": "mod a; mod b; mod c;\npub use a::A;",
            "a.rs": "use crate::b::B;\n",
            "b.rs": "use crate::{c::{self, C}};\n",
            "c.rs": "fn f() { crate::a::g(); }\n",
        })
        self.assertEqual(crate_circles(d)[0], [["a", "b", "c"]])
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(main([d]), 1)
        self.assertIn("t: modules import each other in a circle: a, b, c", out.getvalue())

    def test_siblings_through_super_and_nested_files(self):
        d = self.crate({
            "lib.rs": "mod report;",
            "report/mod.rs": "mod html; mod pareto;\npub use html::render;",
            "report/html.rs": "use super::pareto::front;\n",
            "report/pareto.rs": "use crate::report::html::Page;\n",
        })
        self.assertEqual(crate_circles(d)[0], [["report::html", "report::pareto"]])

    def test_ancestors_comments_strings_and_tests_make_no_edge(self):
        d = self.crate({
            "lib.rs": "mod a; mod b;\npub use a::A; pub use b::B;\n",
            "a.rs": "use crate::B; // use crate::b::x;\nconst S: &str = \"crate::b::y\";\n",
            "b.rs": "use super::A;\n#[cfg(test)]\nmod tests {\n use crate::a::A;\n}\n",
        })
        self.assertEqual(crate_circles(d)[0], [])
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(main([d]), 0)

    def test_use_trees_expand(self):
        self.assertEqual(
            expand_use_tree("crate::a::{b::{self, C}, d as e, f::*}"),
            ["crate::a::b", "crate::a::b::C", "crate::a::d", "crate::a::f"],
        )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
