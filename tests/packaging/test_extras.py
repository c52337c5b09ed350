"""A core install (no extras): the core imports without hypothesis, pytest or pyspark, and the parts of
the `testing` extra say which extra they need."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Imports of a blocked module fail as if it were not installed (sys.modules[name] = None).
BLOCK = "import sys\nfor name in ('hypothesis', 'pytest', 'pyspark', 'pyarrow', 'mongomock'):\n    sys.modules[name] = None\n"


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, timeout=60)


def test_the_core_imports_without_any_extra():
    proc = _python("import mongosim, mongosim.cli, mongosim.cluster, mongosim.core, mongosim.faults, "
                   "mongosim.testing, mongosim.testing.client, mongosim.demo, mongosim.explain\n"
                   "print(mongosim.Cluster.__name__)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Cluster"


@pytest.mark.parametrize("module", ["mongosim.testing.strategies", "mongosim.testing.harness"])
def test_testing_extra_modules_name_the_extra(module):
    proc = _python(f"try:\n    import {module}\nexcept ImportError as err:\n    print(type(err).__name__, err)\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    assert out.startswith("ImportError ") and "pip install 'mongosim[testing]'" in out and "hypothesis" in out, out
