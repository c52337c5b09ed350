"""mongomock: what people use instead, in-process, against mongosim over the wire (a diagnostic; insert_many
has a goal).

The same workload on both, for ``n`` documents of the benchmarks' shape (an unsharded collection;
mongosim is ``mongosim serve`` with 2 shards in its own process, reached through pymongo; mongomock
runs in this process, no socket, no BSON):

- ``insert_many``: all ``n`` documents in one call (pymongo splits it into batches);
- ``find_all``: ``list(find())``, every document back;
- ``update_one``: by ``_id``, ``$inc`` of one field, one at a time (ops/s);
- ``indexed find_one``: ``find_one({total: v})`` with an index on ``total`` (unique values), one at a
  time (ops/s) — mongomock has no indexes and scans.

Each figure is mongosim's rate / mongomock's (above 1: mongosim is faster); ``mongomock_insert_ratio``
has the goal >= 1.  Measured for each size in ``sizes``; the worst size is the figure.
"""

from __future__ import annotations

import itertools
import time
from contextlib import ExitStack
from typing import Any, Callable

from benchmarks import harness as H

DB, COLL = "bench", "mock"


def _total(i: int) -> float:
    return H.make_doc(i)["total"]


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _rate(fn: Callable[[], Any], seconds: float) -> float:
    n = 0
    t0 = time.perf_counter()
    while True:
        for _ in range(20):
            fn()
        n += 20
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n / dt


def _measure(coll: Any, n: int, seconds: float) -> dict[str, float]:
    """Rates of the four operations on a fresh, empty `coll` (a pymongo or mongomock collection)."""
    docs = H.make_docs(0, n)
    out = {"insert_many": n / _timed(lambda: coll.insert_many(docs, ordered=True))}
    got: list = []
    out["find_all"] = n / _timed(lambda: got.extend(coll.find()))
    assert len(got) == n, (len(got), n)
    ids = itertools.cycle(range(0, n, 7))
    out["update_one"] = _rate(lambda: coll.update_one({"_id": next(ids)}, {"$inc": {"total": 0}}), seconds)
    coll.create_index("total")
    totals = itertools.cycle([_total(i) for i in range(0, n, max(1, n // 997))])
    coll.find_one({"total": next(totals)})  # (mongosim builds a new index at its first use: not timed)
    out["indexed_find_one"] = _rate(lambda: coll.find_one({"total": next(totals)}), seconds)
    return out


def run_mongomock(sizes: list[int], seconds: float, results: dict) -> None:
    import mongomock

    H.say(f"mongomock (in-process) vs mongosim (2 shards, over the wire): {sizes} documents, unsharded")
    with ExitStack() as stack:
        ms = stack.enter_context(H.server(H.mongosim_cmd(2, instant_hwm=False), "mongosim"))
        mc = H.client(ms.uri)
        worst: dict[str, float] = {}
        for n in sizes:
            sim = _measure(mc[DB][f"{COLL}{n}"], n, seconds)
            mock = _measure(mongomock.MongoClient()[DB][COLL], n, seconds)
            mc[DB][f"{COLL}{n}"].drop()
            for op in sim:
                ratio = sim[op] / mock[op]
                worst[op] = min(worst.get(op, ratio), ratio)
                unit = "docs/s" if op in ("insert_many", "find_all") else "ops/s"
                results[f"mongomock_{op}_{n}"] = {"mongosim": round(sim[op]), "mongomock": round(mock[op])}
                H.say(f"  {n:>6} {op:>16}: mongosim {sim[op]:>9.0f} {unit}   mongomock {mock[op]:>9.0f} {unit}"
                      f"   mongosim/mongomock {ratio:.2f}")
        for op, ratio in worst.items():
            results[f"mongomock_{op}_ratio"] = round(ratio, 3)
        results["mongomock_insert_ratio"] = results["mongomock_insert_many_ratio"]
        H.say(f"  mongomock_insert_ratio {results['mongomock_insert_ratio']:.3f} (insert_many, worst size; goal >= 1)")
