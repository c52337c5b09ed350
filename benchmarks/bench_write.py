"""write: ``insert_many`` documents/s into a sharded collection, against a server that only acknowledges.

mongosim: 4 shards, the collection sharded on a hashed ``_id`` (one chunk per
shard).  Reference: ``wire_stub --mode ack``, which answers each insert with
``{n: <documents received>, ok: 1}`` and does nothing else.  The client is
the same: ``insert_many`` of ``batch`` 200-byte documents at a time (built
before the clock starts; each run sized to last about the same time),
``ordered=False`` (the bulk-load form; mongos then sends one child batch per
shard), with fresh ``_id``s every call.  Runs alternate, repeated; each
figure is the median.

write_ratio = mongosim documents/s / ack-server documents/s
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from itertools import count

import pymongo

from benchmarks import harness as H

DB, COLL = "bench", "orders"


# The ack server's documents, built once and reused.  Released when the write benchmark ends: a
# benchmark process holding millions of dicts makes each full pass of its own cyclic collector walk
# them all, so a later benchmark's pymongo consumer that triggers one (decoding 50,000 change events
# does, now and then) reads at a third of its speed (measured: ~54k against ~200k events/s with
# 1.5 million documents held) -- a slow run that is the harness's, not the server's.
_POOL: list[list[dict]] = []


def insert_rate(c: pymongo.MongoClient, ids: count | None, n: int, batch: int, ordered: bool) -> float:
    """Documents/s of `n // batch` insert_many calls; `ids` None reuses documents (for the ack server)."""
    coll = c[DB][COLL]
    if ids is None:
        while len(_POOL) < n // batch:
            _POOL.append(H.make_docs(len(_POOL) * batch, batch))
        docs = _POOL[: n // batch]
    else:
        docs = [H.make_docs(next(ids) * batch, batch) for _ in range(n // batch)]  # built before the clock starts
    t0 = time.perf_counter()
    for chunk in docs:
        coll.insert_many(chunk, ordered=ordered)
    return (n // batch) * batch / (time.perf_counter() - t0)


def side_by_side(sides: dict[str, tuple[pymongo.MongoClient, count | None]], seconds: float, batch: int,
                 reps: int, modes: tuple[bool, ...] = (False,)) -> dict[tuple[str, bool], list[float]]:
    """Documents/s of each side (label -> client and its `_id` counter), runs alternating, `reps` times.

    Each side is warmed once and its runs sized to last about `seconds`; the result maps
    (label, ordered) to the runs' rates.
    """
    sizes = {label: max(batch, int(insert_rate(c, ids, 5 * batch, batch, False) * seconds) // batch * batch)
             for label, (c, ids) in sides.items()}
    runs: dict[tuple[str, bool], list[float]] = {}
    for _ in range(reps):
        for ordered in modes:
            for label, (c, ids) in sides.items():
                runs.setdefault((label, ordered), []).append(insert_rate(c, ids, sizes[label], batch, ordered))
    return runs


def run_write(seconds: float, batch: int, reps: int, results: dict, *, also_ordered: bool = False) -> None:
    H.say(f"write: insert_many of {batch} documents, 4 shards (hashed _id), {reps} runs of ~{seconds}s each")
    try:
        _run_write(seconds, batch, reps, results, also_ordered)
    finally:
        _POOL.clear()


def _run_write(seconds: float, batch: int, reps: int, results: dict, also_ordered: bool) -> None:
    with ExitStack() as stack:
        ms = stack.enter_context(H.server(H.mongosim_cmd(4), "mongosim"))
        ack = stack.enter_context(H.server(H.stub_cmd("ack"), "ack"))
        mc, ac = H.client(ms.uri), H.client(ack.uri)
        H.shard_hashed(mc, DB, COLL)
        ids = count()
        modes = (False, True) if also_ordered else (False,)
        runs = side_by_side({"mongosim": (mc, ids), "ack": (ac, None)}, seconds, batch, reps, modes)
        for ordered in modes:
            m, a = H.median(runs[("mongosim", ordered)]), H.median(runs[("ack", ordered)])
            tag = "ordered" if ordered else "unordered"
            H.say(f"  {tag:>9}: mongosim {m:>8.0f} docs/s   ack server {a:>8.0f} docs/s   ratio {m / a:.3f}   (goal >= 0.5)")
            if ordered:
                results["write_ordered_docs_per_s"] = round(m)
                results["write_ordered_ratio"] = round(m / a, 3)
            else:
                results["write_docs_per_s"] = round(m)
                results["ack_docs_per_s"] = round(a)
                results["write_ratio"] = round(m / a, 3)
        n_stored = mc[DB][COLL].estimated_document_count()
        H.say(f"  ({n_stored} documents stored in mongosim)")
