"""The project's import graph, read from the source with `ast` (nothing is imported).

Modules are named as installed: the folders router/, shardsim/ and oplog/ are
the packages mongosim.router, mongosim.shardsim and mongosim.oplog (pyproject's
package-dir).  An edge A -> B means A imports B when it runs, wherever the
import statement stands (module level or inside a function: a function-level
import only postpones a cycle); imports under `if TYPE_CHECKING:` are not
edges.  A package's `__init__` may re-export its submodules.  Importing a
module also runs the `__init__` of every package it is in that the importer is
not inside (`import a.b.c` from outside `a.b` runs `a/b/__init__` first): an
edge to that package (a submodule that imports a name from its own package
`__init__` is one too).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FOLDERS = {"mongosim": "mongosim", "router": "mongosim.router", "shardsim": "mongosim.shardsim",
           "oplog": "mongosim.oplog"}


def project_modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for folder, prefix in FOLDERS.items():
        for path in (REPO / folder).rglob("*.py"):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join((prefix, *parts))] = path
    return mods


def _is_type_checking(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The project modules `name` imports (see the module docstring for what counts)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def target(dotted: str) -> None:
        while dotted and dotted not in mods:
            dotted = dotted.rpartition(".")[0]
        if not dotted:
            return
        found.add(dotted)
        # Importing a module first runs the `__init__` of each package it is in that the importer is
        # not already inside: that is an edge too (a cycle through it fails at import time).
        enclosing = dotted.rpartition(".")[0]
        while enclosing and not (package == enclosing or package.startswith(enclosing + ".")):
            if enclosing in mods:
                found.add(enclosing)
            enclosing = enclosing.rpartition(".")[0]

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    target(alias.name)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                for alias in child.names:  # a submodule, or a name defined in `base`
                    target(f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base)
            walk(child)

    walk(ast.parse(path.read_text()))
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = project_modules()
    return {name: imports_of(name, path, mods) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found
