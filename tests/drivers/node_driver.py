"""The Node.js driver for the tests in this folder: installed from its lock file, found, and run.

`tests/drivers/node/package.json` declares the driver as a compatible range; `package-lock.json` pins
the exact packages (with their integrity hashes), as requirements-lock.txt does for Python.  `npm ci`
installs exactly those into the clone's `.tools/node-driver` (ignored by git: a second or so, once per
clone and again when the lock changes; a copy of the lock beside the install says which one it holds).

`node` and `npm` come from PATH.  Without them the tests skip, saying why; an install that fails
fails them under CI (`CI` set: the tool is part of the suite there) and skips them elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bson import json_util

from tests.tool_install import ToolMissing, installed

HERE = Path(__file__).resolve().parent / "node"
PREFIX = Path(__file__).resolve().parents[2] / ".tools" / "node-driver"
LOCK = "package-lock.json"


class NodeDriverMissing(ToolMissing):
    """No Node.js driver (`tried_install`: npm ran and failed)."""


def install() -> Path:
    """The `node_modules` folder holding the locked driver (installing it when the lock changed)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise NodeDriverMissing(f"no `{tool}` on PATH to run the Node.js driver with")
    modules = PREFIX / "node_modules"
    wanted = (HERE / LOCK).read_bytes()
    installed = PREFIX / LOCK
    if installed.exists() and installed.read_bytes() == wanted and (modules / "mongodb").is_dir():
        return modules
    PREFIX.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", LOCK):
        shutil.copyfile(HERE / name, PREFIX / name)
    try:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", "--fetch-retries=2"], cwd=PREFIX,
                       check=True, capture_output=True, text=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        installed.unlink(missing_ok=True)  # (npm ci leaves the copy: not a finished install)
        stderr = getattr(exc, "stderr", None) or str(exc)
        if isinstance(stderr, bytes):
            stderr = stderr.decode(errors="replace")
        last = stderr.strip().splitlines()[-1:] or [str(exc)]
        raise NodeDriverMissing(f"npm ci of {HERE / LOCK} into {PREFIX} failed: {last[0]}", tried_install=True) \
            from None
    return modules


def node_modules() -> Path:
    """`install()`, or the test's skip (or failure under CI) saying why it cannot."""
    return installed(install, "the Node.js driver")


def driver_version(modules: Path) -> str:
    return json.loads((modules / "mongodb" / "package.json").read_text())["version"]


def run_app(modules: Path, scenario: str, uri: str, timeout: float = 120) -> Any:
    """Run `scenario` of node/app.js against `uri`; its one canonical Extended JSON document, parsed."""
    proc = subprocess.run(["node", str(HERE / "app.js"), scenario, uri], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "NODE_PATH": str(modules)})
    assert proc.returncode == 0, proc.stderr or proc.stdout
    return json_util.loads(proc.stdout.strip().splitlines()[-1])
