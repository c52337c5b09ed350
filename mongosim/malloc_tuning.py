"""Keep freed heap memory for reuse in the server process (glibc `mallopt`).

A reply batch is a few hundred KB of bytes built and freed on every getMore.
With glibc's defaults each such buffer is either mmap'd afresh or, once freed
at the top of the heap, trimmed back to the OS, so the next one page-faults
every page again: measured, that made encoding a 1000-event reply ~10x slower
(1.9 ms instead of 0.2).  Raising the mmap and trim thresholds keeps those
pages in the process; the trim threshold stays modest (32 MB) so that a
process that caught up with a large backlog still gives its memory back
(tests/reliability/test_slow_consumer.py bounds it).  Only `mongosim serve` calls this (its own process); an
in-process `Cluster` leaves the host program's allocator alone.  Elsewhere than
glibc it does nothing.  (Python has no portable API for this, hence ctypes.)
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 4 * 1024 * 1024  # blocks up to this come from the heap (a 16 MB batch is still mmap'd)
TRIM_THRESHOLD = 32 * 1024 * 1024  # return free memory at the heap's top to the OS only beyond this


def keep_freed_memory() -> bool:
    """Raise glibc's mmap/trim thresholds; False where that is not possible."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
