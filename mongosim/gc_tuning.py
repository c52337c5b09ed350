"""Fewer full passes of Python's cyclic garbage collector in the server process.

The collector walks every container object the process holds in a full (generation 2) collection,
which CPython 3.11 starts once 10 collections of generation 1 have run and the objects that
survived into generation 2 since the last full pass make up a quarter of those already there.  A
server holding its collections' documents as dicts grows by a quarter again and again while data
is loaded, so each stored document is walked several times over: measured, about a third of the
server's CPU time per inserted document (benchmarks/profile_insert.py reports it).  Documents hold
no reference cycles; what does (tasks, frames, exceptions) is almost always collected young, in
generations 0 and 1, which this leaves as they are.  Raising generation 2's threshold from 10 to
`FULL_EVERY` (1000) generation-1 collections spaces the full passes out (one per ~7 million
container allocations at most), so a cycle that outlived two young collections waits longer to be
freed.  Only `mongosim serve` calls this (its own process); an in-process `Cluster` leaves the host
program's collector alone, as for `malloc_tuning`.
"""

from __future__ import annotations

import gc

FULL_EVERY = 1000  # generation-1 collections between two full collections, at least (CPython's default: 10)


def collect_less_often() -> tuple[int, int, int]:
    """Raise the full collection's threshold; the thresholds now in force."""
    young, middle, _full = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)
    return gc.get_threshold()
