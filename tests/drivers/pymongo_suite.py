"""pymongo's own test suite, for the tests in this folder: fetched, unpacked, and run against a cluster.

pymongo's source distribution carries the driver's test suite (`test/`), written against a real
server it finds at `DB_IP:DB_PORT`.  `pymongo_suite/suite.lock` names the sdist of the pymongo
version requirements-lock.txt pins, with its sha256; `pip download --require-hashes` fetches exactly
that file into the clone's `.tools/pymongo-suite` (ignored by git: a few seconds, once per clone) and
only its `test/` folder is unpacked there, so the suite imports the pymongo this run installed, not
the sdist's copy.  The suite runs in a child pytest with `pymongo_suite/pytest.ini` instead of
pymongo's own settings (those turn every warning into an error and need pytest-asyncio, which only
its asynchronous copies use) and without this project's plugins.

Without pip or the network the tests skip, saying why; a fetch that fails fails them under CI (`CI`
set: the suite is part of CI there).  A run whose pymongo is not the locked version (`make
test-lowest`) skips them: the suite is that version's own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pymongo
import pytest

from tests.tool_install import ToolMissing, installed

HERE = Path(__file__).resolve().parent / "pymongo_suite"
PREFIX = Path(__file__).resolve().parents[2] / ".tools" / "pymongo-suite"
LOCK = HERE / "suite.lock"


class SuiteMissing(ToolMissing):
    """pymongo's suite cannot be fetched (`tried_install`: pip ran and failed)."""


def locked_version() -> str:
    """The pymongo version whose suite.lock names its sdist."""
    (match,) = re.findall(r"^pymongo==(\S+)", LOCK.read_text(), re.M)
    return match


def install() -> Path:
    """The folder holding the locked version's `test/` (fetching and unpacking it the first time)."""
    version = locked_version()
    home = PREFIX / version
    done = home / ".unpacked"
    if done.exists():
        return home
    download = PREFIX / "download"
    download.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        "--require-hashes", "-r", str(LOCK), "-d", str(download)],
                       check=True, capture_output=True, text=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        stderr = (getattr(exc, "stderr", None) or str(exc)).strip().splitlines()
        raise SuiteMissing(f"pip download of {LOCK} failed: {stderr[-1] if stderr else exc}", tried_install=True) \
            from None
    (sdist,) = download.glob(f"pymongo-{version}.tar.gz")
    prefix = f"pymongo-{version}/test/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and (m.isfile() or m.isdir())]
        for m in members:
            m.name = m.name[len(f"pymongo-{version}/"):]
        tar.extractall(home, members=members, filter="data")
    done.touch()
    return home


def suite_home() -> Path:
    """`install()`, or the test's skip (or failure under CI) saying why it cannot."""
    if pymongo.version != locked_version():
        pytest.skip(f"pymongo's own tests are those of pymongo {locked_version()} (suite.lock); "
                    f"this run has pymongo {pymongo.version}")
    return installed(install, "pymongo's test suite")


def run_suite(home: Path, files: list[str], host: str, port: int, timeout: float = 900) -> dict[str, int]:
    """Run pymongo's test `files` against the server at host:port; the outcome counts of pytest's summary
    ("passed", "failed", "skipped", "error", ...), and the report's text under "output"."""
    env = {**os.environ, "DB_IP": host, "DB_PORT": str(port), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-c", str(HERE / "pytest.ini"), "--rootdir", str(home),
                           "-q", "-rfEs", "-p", "no:cacheprovider", *files],
                          cwd=home, env=env, capture_output=True, text=True, timeout=timeout)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)", summary)}
    counts["output"] = proc.stdout[-6000:] + proc.stderr[-2000:]  # type: ignore[assignment]
    return counts
