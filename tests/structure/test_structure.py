"""The package's shape: one import root when installed, and no import cycles."""

from __future__ import annotations

import ast
import tomllib

from tests.structure.import_graph import FOLDERS, REPO, cycles, import_graph, project_modules


def test_no_import_cycles():
    """Arrows point one way: a module never imports, even from inside a function, a module that
    imports it back (command modules register into a registry both sides import)."""
    assert cycles(import_graph()) == []


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_layers_point_down():
    """mongosim -> router -> shardsim -> oplog: a lower layer never imports a higher one."""
    rank = {"mongosim.oplog": 0, "mongosim.shardsim": 1, "mongosim.router": 2}

    def layer(module: str) -> int:
        return next((r for prefix, r in rank.items() if module == prefix or module.startswith(prefix + ".")), 3)

    upward = [(a, b) for a, targets in import_graph().items() for b in targets if layer(b) > layer(a)]
    assert upward == []


def test_every_import_names_the_one_root():
    """No module imports `router`, `shardsim` or `oplog` as top-level packages (they install under mongosim)."""
    bad = []
    for name, path in project_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            bad += [(name, n) for n in names if n.split(".")[0] in ("router", "shardsim", "oplog")]
    assert bad == []


def test_pyproject_lists_every_package():
    """[tool.setuptools] packages names every folder with an __init__.py, mapped by package-dir."""
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert conf["package-dir"] == {prefix: folder for folder, prefix in FOLDERS.items()}
    packages = sorted(name for name, path in project_modules().items() if path.name == "__init__.py")
    assert sorted(conf["packages"]) == packages
