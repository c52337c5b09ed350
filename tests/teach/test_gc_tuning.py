"""`mongosim serve` spaces out full garbage collections (mongosim/gc_tuning.py); young cycles are
still collected."""

import subprocess
import sys

CODE = """
import gc, weakref
from mongosim.gc_tuning import FULL_EVERY, collect_less_often
before = gc.get_threshold()
after = collect_less_often()
class Node: pass
a, b = Node(), Node()
a.other, b.other = b, a  # a reference cycle, dropped young
ref = weakref.ref(a)
del a, b
kept = [[] for _ in range(20_000)]  # container allocations that live on: young collections run
print(before[:2] == after[:2], after[2] == FULL_EVERY > before[2], ref() is None)
"""


def test_the_full_threshold_is_raised_and_young_cycles_are_still_collected():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
