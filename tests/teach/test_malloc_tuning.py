"""`mongosim serve` keeps freed heap pages (mongosim/malloc_tuning.py): the call takes effect on glibc."""

import platform
import subprocess
import sys

import pytest


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_thresholds_are_raised_in_a_fresh_process():
    code = "from mongosim.malloc_tuning import keep_freed_memory as k; print(k())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
