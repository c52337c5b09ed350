"""Micro-benchmarks of the hot paths (not collected by pytest).

Run: python -m tests.query.bench_query
"""

from __future__ import annotations

import timeit

from bson import ObjectId

from mongosim.shardsim.query.matcher import Matcher
from mongosim.shardsim.query.projection import compile_projection
from mongosim.shardsim.query.sorting import sort_key_fn
from mongosim.shardsim.query.update import apply_update, compile_update, apply_compiled

DOC = {"_id": ObjectId(), "name": "alice", "n": 41, "tags": ["a", "b"], "addr": {"city": "x", "zip": 1}, "pad": "x" * 100}


def bench(label, fn, n=100_000):
    t = min(timeit.repeat(fn, number=n, repeat=3)) / n
    print(f"{label:55s} {t * 1e6:7.2f} us  ({1 / t:,.0f}/s)")


def main():
    oid = DOC["_id"]
    bench("Matcher({_id: oid}) construct", lambda: Matcher({"_id": oid}))
    m = Matcher({"_id": oid})
    bench("  .matches (hit)", lambda: m.matches(DOC), 1_000_000)
    m2 = Matcher({"name": "alice", "n": {"$gt": 40}})
    bench("Matcher({name: 'alice', n: {$gt: 40}}).matches", lambda: m2.matches(DOC), 1_000_000)
    m3 = Matcher({"addr.city": "x", "tags": "b"})
    bench("Matcher({'addr.city': 'x', tags: 'b'}).matches", lambda: m3.matches(DOC), 300_000)
    bench("apply_update $set top-level (parse+apply)", lambda: apply_update(DOC, {"$set": {"n": 42}}))
    cu = compile_update({"$inc": {"n": 1}})
    bench("apply_compiled $inc top-level (precompiled)", lambda: apply_compiled(cu, DOC))
    cu2 = compile_update({"$set": {"addr.city": "y"}, "$push": {"tags": "c"}})
    bench("apply_compiled $set nested + $push", lambda: apply_compiled(cu2, DOC), 30_000)
    bench("apply_update pipeline $set", lambda: apply_update(DOC, [{"$set": {"n": 42}}]), 30_000)
    from mongosim.shardsim.query.diff import apply_diff, update_description
    from mongosim.shardsim.query.stages import compile_stage

    diff = {"u": {"n": 42}, "sa": {"a": True, "u2": "c"}}
    pre = {**DOC, "a": ["a", "b"]}
    bench("update_description (u + array append)", lambda: update_description(diff), 300_000)
    bench("apply_diff (u + array append)", lambda: apply_diff(pre, diff), 300_000)
    event = {"_id": {"_data": "82"}, "operationType": "insert", "fullDocument": DOC, "ns": {"db": "d", "coll": "c"}}
    st = compile_stage({"$match": {"operationType": "insert", "fullDocument.n": {"$gt": 40}}})
    bench("change-stream $match {operationType, fullDocument.n $gt}", lambda: st(event), 300_000)
    p = compile_projection({"name": 1, "n": 1})
    bench("projection {name: 1, n: 1}", lambda: p(DOC), 300_000)
    k = sort_key_fn({"n": 1})
    bench("sort key {n: 1}", lambda: k(DOC), 1_000_000)


if __name__ == "__main__":
    main()
