"""The layering the folder list promises (README "Architecture"), checked on every import statement —
`if TYPE_CHECKING:` ones included, since a type-only import still ties two rooms together.

Layers, each importing only from those below it:
- faces: `cli`, `gateway` (the library's `Gateway`, with `asgi_app`), `server` (HTTP), `mcp`, `observe`
- `engine`: the routing core assembled (state, health, planner, walk, relays) — no HTTP, no metrics
- the core rooms: `walk`, `relays`, `routing`, `protocols`, `upstream`, `aggregators`, `health`, `catalog`,
  `periods`, `state`, `config`, `sim`, …
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "modelpool"
FACES = {"cli", "gateway", "server", "mcp", "observe"}


def room(module: str) -> str:
    """`modelpool.relays.anthropic` → `relays`; `modelpool.gateway` → `gateway`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.cache
def imports() -> dict[str, set[str]]:
    """Every module's imported modelpool modules."""
    out: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out[module] |= {a.name for a in node.names if a.name.startswith("modelpool")}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                if target.startswith("modelpool"):
                    out[module].add(target)
    return out


def test_the_core_never_imports_a_face() -> None:
    bad = [
        f"{mod} imports {target}"
        for mod, targets in imports().items()
        for target in targets
        if room(mod) not in FACES | {"__init__", "__main__", "engine"} and room(target) in FACES | {"engine"}
    ]
    assert not bad, "\n".join(sorted(bad))


def test_the_engine_imports_no_face() -> None:
    bad = [
        f"{mod} imports {target}"
        for mod, targets in imports().items()
        if room(mod) == "engine"
        for target in targets
        if room(target) in FACES
    ]
    assert not bad, "\n".join(sorted(bad))


def test_no_two_rooms_import_each_other() -> None:
    """No cycle between top-level rooms (a module may import its own room freely)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, targets in imports().items():
        for target in targets:
            a, b = room(mod), room(target)
            if a != b and "__init__" not in (a, b) and a != "__main__":
                graph[a].add(b)
    tangled = [sorted(c) for c in strongly_connected(graph) if len(c) > 1]
    assert not tangled, f"rooms that import each other (directly or around a loop): {tangled}"


@functools.cache
def module_imports() -> dict[str, set[str]]:
    """Every module's imported modelpool modules, `from package import module` read as the module."""
    known = {
        ".".join(p.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in SRC.rglob("*.py")
    }
    out: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module in known:
                subs = {f"{node.module}.{a.name}" for a in node.names} & known
                out[module] |= subs
                if len(subs) < len(node.names):
                    out[module].add(node.module)
            elif isinstance(node, ast.Import):
                out[module] |= {a.name for a in node.names} & known
    return out


def test_no_two_modules_import_each_other() -> None:
    """Within a room too: two files that import each other (even lazily, or for types only) are one
    concept split in two, or a piece both need that belongs in a third file."""
    graph = module_imports()
    pairs = sorted(f"{a} <-> {b}" for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))
    assert not pairs, "\n".join(pairs)


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm: the groups of rooms that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                top = stack.pop()
                group.add(top)
                if top == node:
                    break
            out.append(group)

    for node in list(graph):
        if node not in index:
            visit(node)
    return out
