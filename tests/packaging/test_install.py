"""The project installed as a user gets it: a built wheel, non-editable, into a fresh virtualenv.

The wheel is built offline with this environment's setuptools (no build isolation, no index) from a
copy of the sources, and installed with `--no-deps`; the fresh venv reaches the dependencies (pymongo,
trio, ...) through a .pth line naming this environment's site-packages, which adds that folder to
sys.path without running its own .pth files (so this checkout's editable install stays out of it).

What it checks: site-packages gains one import root, `mongosim` (router/, shardsim/ and oplog/ install
as mongosim.router, mongosim.shardsim and mongosim.oplog); `import mongosim` works from a folder that
holds a `router.py`; the console script and the pytest plugin's entry point are there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "mongosim", "router", "shardsim", "oplog")
FOREIGN = ("router", "shardsim", "oplog")


def _run(*cmd: str | os.PathLike, cwd: Path | None = None) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _build_wheel(src: Path, out: Path) -> Path:
    offline = ["--no-build-isolation", "--no-index"]
    try:
        import setuptools

        if tuple(int(p) for p in setuptools.__version__.split(".")[:2]) < (70, 1):
            offline = []  # no bdist_wheel here: let pip fetch a build backend (pip's cache usually has it)
    except ImportError:
        offline = []
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *offline, "-w", out, src)
    (wheel,) = out.glob("mongosim-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the fresh venv's python, its site-packages) with mongosim installed from a wheel."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    wheel = _build_wheel(src, tmp / "dist")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel)
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (site / "zz_mongosim_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python, site


def test_site_packages_gains_one_import_root(installed):
    python, site = installed
    names = {p.name for p in site.iterdir()} - {"zz_mongosim_test_deps.pth", "__pycache__"}
    assert {n for n in names if not n.endswith(".dist-info")} == {"mongosim"}, names
    (dist_info,) = [n for n in names if n.startswith("mongosim-") and n.endswith(".dist-info")]
    record = (site / dist_info / "RECORD").read_text().splitlines()
    paths = [line.split(",", 1)[0] for line in record]
    tops = {p.split("/", 1)[0] for p in paths if not p.startswith("../")}  # ../../../bin/mongosim: the script
    assert tops == {"mongosim", dist_info}, tops
    assert any(line.startswith("mongosim/router/mongos.py,") for line in record)
    assert any(line.startswith("mongosim/shardsim/node.py,") for line in record)
    assert any(line.startswith("mongosim/oplog/oplog.py,") for line in record)
    # what `pip show -f mongosim` lists: no top-level router, oplog or shardsim
    shown = _run(sys.executable, "-m", "pip", "--python", python, "show", "-f", "mongosim")
    files = [line.strip() for line in shown.split("Files:", 1)[1].splitlines() if line.strip()]
    assert files and not [f for f in files if f.split("/", 1)[0] in FOREIGN], files


def test_import_mongosim_next_to_a_users_router_py(installed, tmp_path):
    python, site = installed
    for name in FOREIGN:  # a user's own modules of those names, in the working folder
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the user\\'s {name}.py was imported')\n")
    out = _run(python, "-c", "import mongosim, mongosim.core, mongosim.router.mongos, mongosim.shardsim.node, "
                             "mongosim.oplog.oplog, mongosim.pytest_plugin, mongosim.cli; print(mongosim.__file__)",
               cwd=tmp_path)
    assert Path(out.strip()).is_relative_to(site), out


def test_console_script_and_pytest_entry_point(installed, tmp_path):
    python, site = installed
    out = _run(python.parent / "mongosim", "--version", cwd=tmp_path)
    assert out.startswith("mongosim ")
    eps = _run(python, "-c", "from importlib.metadata import entry_points; "
                             "print([e.value for e in entry_points(group='pytest11') if e.name == 'mongosim'])",
               cwd=tmp_path)
    assert "mongosim.pytest_plugin" in eps
