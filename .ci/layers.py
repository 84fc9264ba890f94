#!/usr/bin/env python3
"""Checks the crates' module structure: no import cycles, no upward imports.

Run by .ci/run (and `python3 .ci/layers.py` by hand); exits 1 with one line per finding.

The rule, for every folder of a crate's `src/` (the crate root included): its direct children
(a file `x.rs` or a folder `x/`, each everything under it) must not depend on each other in a
cycle. A child depends on another when one of its files names an item that the other defines,
through `crate::`, `super::` or `self::` paths in `use` items or in code; names re-exported or
imported by a `mod.rs` are followed to the file that defines them. The folder's own `mod.rs`
(or `lib.rs`) is the parent and stays out of the graph: Rust lets a module and its children see
each other's private items, and a parent re-exporting its children is a facade, not a cycle.
A `bindgen!` call's `with:` clause is not counted either: it tells the generated bindings which
host type stands for a WIT resource, and the capability that defines the type implements the
generated traits (wasmtime-wasi-http's bindings and types have the same shape).

For the host crate the top level has a declared order (LAYERS below, lowest first); a module
may import only from modules listed before it. Test modules count like any code; inline
`mod x { … }` blocks resolve `super::` from where they are; names a `use x::*` brings in count as
x's; a path in a string (`deserialize_with = "crate::…"`) counts as a path.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CRATES = ["host/src", "plugin-sdk/src", "bench/src"]

# The host's layers, lowest first: each may use only the ones before it. A new top-level module
# must be placed here (the check fails on one it does not know).
LAYERS = {
    "host/src": [
        "config",
        "vocabulary",
        "telemetry",
        "store",
        "people",
        "usage",
        "attachments",
        "egress",
        "plugins",
        "library",
        "tools",
        "signin",
        "runlog",
        "chat",
        "search",
        "runs",
        "http",
        "server",
        "cli",
    ],
}


PATH_STRING = re.compile(r"^(crate|super|self)(::\w+)+$")
ITEM = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|union|mod)\s+(\w+)|macro_rules!\s*(\w+)"
)


def inline_modules(code):
    """(start, end, name) of every inline `mod name { … }` block of stripped code."""
    blocks = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        blocks.append((m.end(), i, m.group(1)))
    return blocks


def strip(text):
    """The code without comments, strings or char literals (their text cannot name a module)."""
    out = []
    i, n = 0, len(text)
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
        elif re.match(r'b?r#*"', text[i:i + 10]):
            m = re.match(r'b?r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            start = i + 1
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            content = text[start:i]
            i += 1
            # A path in a string (serde's `deserialize_with = "crate::…"`) names a module too.
            out.append(f' {content} ' if PATH_STRING.match(content) else '""')
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            i += m.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_top(s):
    """`a, b::{c, d}` split on the commas outside braces."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def use_tree(tree, prefix=()):
    """(alias, path) pairs for a `use` tree."""
    tree = tree.strip()
    m = re.match(r"^(.*?)::\{(.*)\}$", tree, re.S)
    if m:
        base = tuple(x for x in m.group(1).split("::") if x)
        pairs = []
        for part in split_top(m.group(2)):
            pairs += use_tree(part, prefix + base)
        return pairs
    if tree.startswith("{") and tree.endswith("}"):
        pairs = []
        for part in split_top(tree[1:-1]):
            pairs += use_tree(part, prefix)
        return pairs
    alias = None
    m = re.match(r"^(.*)\s+as\s+(\w+)$", tree, re.S)
    if m:
        tree, alias = m.group(1).strip(), m.group(2)
    segs = prefix + tuple(x.strip() for x in tree.split("::") if x.strip())
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    if segs and segs[-1] == "*":
        return [("*", segs[:-1])]
    if not segs:
        return []
    return [(alias or segs[-1], segs)]


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path (tuple) -> file path relative to src
        for dirpath, _, names in os.walk(os.path.join(ROOT, src)):
            for name in names:
                if not name.endswith(".rs"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), os.path.join(ROOT, src))
                parts = rel[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib"):
                    parts = parts[:-1]
                if parts == ["main"]:
                    parts = []
                if parts and parts[-1] == "build":
                    continue
                self.files[tuple(parts)] = rel
        self.code = {}
        self.inline = {}  # module -> inline `mod x { … }` blocks
        self.defs = {}  # module -> names of the items its file defines
        self.imports = {}  # module -> {name: absolute path}
        self.globs = {}
        for module, rel in self.files.items():
            with open(os.path.join(ROOT, src, rel), encoding="utf-8") as f:
                code = strip(f.read())
            code = re.sub(r"\bwith:\s*\{[^{}]*\}", "", code)
            self.code[module] = code
            self.inline[module] = inline_modules(code)
            self.defs[module] = {a or b for a, b in ITEM.findall(code)}
            names, globs = {}, []
            for m in re.finditer(r"\buse\s+([^;]+);", code):
                for alias, path in use_tree(m.group(1)):
                    absolute = self.absolute(self.scope(module, m.start()), path)
                    if absolute is None:
                        continue
                    if alias == "*":
                        globs.append(absolute)
                    else:
                        names[alias] = absolute
            self.imports[module] = names
            self.globs[module] = globs

    def scope(self, module, at):
        """The module a position of the file is in: the file's, plus the inline modules around
        it (so `super::` inside `mod tests { … }` is the file's module)."""
        inner = [name for start, end, name in self.inline.get(module, ()) if start <= at < end]
        return module + tuple(inner)

    def absolute(self, module, path):
        """A path as seen from `module`, made absolute; None outside the crate."""
        path = list(path)
        if not path:
            return None
        if path[0] == "crate":
            base = []
            path = path[1:]
        elif path[0] in ("self", "super"):
            base = list(module)
            while path and path[0] in ("self", "super"):
                if path[0] == "super":
                    if not base:
                        return None
                    base.pop()
                path = path[1:]
        elif module + (path[0],) in self.files:
            base = list(module)
        else:
            return None
        return tuple(base + path)

    def resolve(self, path, depth=0):
        """The module (file) that defines what `path` names."""
        # The longest prefix that is a module file.
        k = len(path)
        while k > 0 and path[:k] not in self.files:
            k -= 1
        module = path[:k]
        if module not in self.files or depth > 10:
            return module if module in self.files else None
        if k < len(path):
            name = path[k]
            target = self.imports[module].get(name)
            if target is not None and target != path:
                return self.resolve(target + path[k + 1:], depth + 1) or module
            if name not in self.defs[module]:
                # A name a `pub use x::*` brings in is x's.
                for glob in self.globs[module]:
                    found = self.resolve(glob + (name,) + path[k + 1:], depth + 1)
                    if found is not None and name in self.defs.get(found, ()):
                        return found
        return module

    def references(self, module):
        """Every absolute path the file names."""
        code = self.code[module]
        paths = list(self.imports[module].values()) + self.globs[module]
        for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", code):
            absolute = self.absolute(self.scope(module, m.start()), m.group(1).split("::"))
            if absolute is not None:
                paths.append(absolute)
        # Bare names a `use x::*` brings in.
        for glob in self.globs[module]:
            target = self.resolve(glob)
            if target is None or target == module:
                continue
            names = self.defs.get(target, set()) - self.defs[module]
            used = set(re.findall(r"\b[A-Za-z_]\w*\b", code))
            for name in names & used:
                paths.append(glob + (name,))
        return paths


def cycles(graph):
    """The strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                found.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def check(crate):
    problems = []
    # edges[(parent folder, child a, child b)] = example (file, target file)
    edges = {}
    for module in crate.files:
        for path in crate.references(module):
            target = crate.resolve(path)
            if target is None or target == module:
                continue
            # The deepest folder holding both, and the child of it each lies in.
            common = 0
            while (common < len(module) and common < len(target)
                   and module[common] == target[common]):
                common += 1
            if common == len(module) or common == len(target):
                continue  # one is the other's parent (or ancestor)
            parent = module[:common]
            a, b = module[common], target[common]
            edges.setdefault((parent, a, b), (crate.files[module], crate.files[target]))
    graphs = {}
    for (parent, a, b) in edges:
        graphs.setdefault(parent, {}).setdefault(a, set()).add(b)
    for parent, graph in sorted(graphs.items()):
        for comp in cycles(graph):
            where = "/".join((crate.src,) + parent)
            links = []
            for a in comp:
                for b in sorted(graph.get(a, ())):
                    if b in comp:
                        f, t = edges[(parent, a, b)]
                        links.append(f"{a} -> {b} ({f} names {t})")
            problems.append(f"{where}: import cycle between {', '.join(comp)}: " + "; ".join(links))
    order = LAYERS.get(crate.src)
    if order:
        top = graphs.get((), {})
        known = {m[0] for m in crate.files if m}
        for name in sorted(known - set(order)):
            problems.append(f"{crate.src}: top-level module `{name}` has no place in LAYERS")
        for name in sorted(set(order) - known):
            problems.append(f"{crate.src}: LAYERS names `{name}`, which is not a module")
        for a, targets in sorted(top.items()):
            for b in sorted(targets):
                if a in order and b in order and order.index(b) > order.index(a):
                    f, t = edges[((), a, b)]
                    problems.append(f"{crate.src}: `{a}` imports from the layer above it, `{b}` ({f} names {t})")
    return problems


# Cycles the check must find (`--self-test`): one each through an inline module, a glob
# re-export, a glob import's bare names, and a path in a string.
SELF_TEST = {
    "lib.rs": "mod a; mod b; mod c; mod d; mod e; mod f; mod g;",
    "a.rs": "pub struct A;\nmod inner { use super::super::b::B; }",
    "b.rs": "use crate::a::A;\npub struct B;",
    "c/mod.rs": "pub use x::*;\nmod x; mod y;",
    "c/x.rs": "pub struct X;\nuse super::y::Y;",
    "c/y.rs": "pub struct Y;\nuse super::X;",
    "d.rs": "use crate::e::*;\npub struct D;\nfn f() { let _ = E; }",
    "e.rs": "pub const E: u8 = 0;\nuse crate::d::D;",
    "f.rs": "pub struct F;\n#[serde(deserialize_with = \"crate::g::h\")]\nstruct S;",
    "g.rs": "use crate::f::F;\npub fn h() {}",
}


def self_test():
    import tempfile

    with tempfile.TemporaryDirectory() as dir:
        for name, text in SELF_TEST.items():
            os.makedirs(os.path.dirname(os.path.join(dir, name)), exist_ok=True)
            with open(os.path.join(dir, name), "w", encoding="utf-8") as f:
                f.write(text)
        found = check(Crate(dir))
    expected = ["between a, b", "between d, e", "between f, g", "between x, y"]
    missed = [e for e in expected if not any(e in p for p in found)]
    if missed or len(found) != len(expected):
        print(f"layers self-test failed: missed {missed}; found {found}")
        return 1
    print("layers self-test: the four planted cycles are found")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    problems = []
    for src in CRATES:
        problems += check(Crate(src))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} structural problem(s); the rule is in .ci/layers.py's header")
        return 1
    print("layers: no import cycle, no upward import")
    return 0


if __name__ == "__main__":
    sys.exit(main())
