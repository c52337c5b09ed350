"""ops: the fixed cost of one command — sequential single operations through pymongo.

Most tests do single operations, not bulk loads.  mongosim: ``mongosim serve``
with 2 shards (default options), an unsharded collection holding ``preload``
documents.  Reference: ``wire_stub --mode ack``, which answers each command
without doing anything (an insert with its count, an update with ``n: 1``, a
find with one document of the same shape): what is left is pymongo's own
cost and the round trip.  The same client code runs against both, one
operation at a time, for about ``seconds`` per run; runs alternate, repeated;
each figure is the median.

- ``insert_one``: a fresh 200-byte document each time (a retryable write, as
  pymongo sends by default);
- ``find_one``: by ``_id``, of a stored document;
- ``update_one``: by ``_id``, ``$inc`` of one field (a retryable write).

``<op>_ratio`` = mongosim ops/s / ack-server ops/s; ``ops_ratio`` is the worst
of the three (goal >= 0.5).  Microseconds per operation are printed beside.
"""

from __future__ import annotations

import itertools
import time
from contextlib import ExitStack
from typing import Callable

import pymongo

from benchmarks import harness as H

DB, COLL = "bench", "ops"
OPS = ("insert_one", "find_one", "update_one")


def _op(c: pymongo.MongoClient, name: str, ids: itertools.count, preload: int) -> Callable[[], object]:
    coll = c[DB][COLL]
    if name == "insert_one":
        return lambda: coll.insert_one(H.make_doc(next(ids)))
    stored = itertools.cycle(range(preload))
    if name == "find_one":
        return lambda: coll.find_one({"_id": next(stored)})
    return lambda: coll.update_one({"_id": next(stored)}, {"$inc": {"total": 1}})


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Operations per second of `fn` run back to back for about `seconds`."""
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(50):
            fn()
        n += 50
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - t0)


def run_ops(seconds: float, reps: int, preload: int, results: dict) -> None:
    H.say(f"ops: sequential insert_one / find_one by _id / update_one by _id, 2 shards, unsharded collection of"
          f" {preload} documents, {reps} runs of ~{seconds}s each")
    with ExitStack() as stack:
        ms = stack.enter_context(H.server(H.mongosim_cmd(2, instant_hwm=False), "mongosim"))
        ack = stack.enter_context(H.server(H.stub_cmd("ack"), "ack"))
        mc, ac = H.client(ms.uri), H.client(ack.uri)
        mc[DB][COLL].insert_many(H.make_docs(0, preload))
        ids = itertools.count(10**9)
        fns = {(side, name): _op(c, name, ids, preload) for side, c in (("mongosim", mc), ("ack", ac)) for name in OPS}
        for fn in fns.values():  # warm both paths once
            rate(fn, 0.05)
        runs: dict[tuple[str, str], list[float]] = {k: [] for k in fns}
        for _ in range(reps):
            for name in OPS:
                for side in ("mongosim", "ack"):
                    runs[(side, name)].append(rate(fns[(side, name)], seconds))
        worst = None
        for name in OPS:
            m, a = H.median(runs[("mongosim", name)]), H.median(runs[("ack", name)])
            ratio = m / a
            results[f"{name}_ops_per_s"] = round(m)
            results[f"{name}_ack_ops_per_s"] = round(a)
            results[f"{name}_ratio"] = round(ratio, 3)
            H.say(f"  {name:>10}: mongosim {m:>7.0f} ops/s ({1e6 / m:5.0f} us)   ack server {a:>7.0f} ops/s"
                  f" ({1e6 / a:5.0f} us)   ratio {ratio:.3f}   (goal >= 0.5)")
            if worst is None or ratio < results[f"{worst}_ratio"]:
                worst = name
        results["ops_ratio"] = results[f"{worst}_ratio"]
        results["ops_worst"] = worst
        H.say(f"  ops_ratio {results['ops_ratio']:.3f} (worst: {worst})")
