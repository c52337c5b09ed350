"""The run renderer (batch_render) gives byte for byte the batches of the stage pipeline.

Random workloads on a sharded cluster (retryable and plain writes of every CRUD kind, _id values
of several types, transactions, other collections and databases, index builds, chunk migrations,
a drop), then every shard's change streams of every level and option read twice — with the run
renderer and with the stages alone — in batches of random sizes: the events, their tokens, their
kinds and each batch's postBatchResumeToken are the same; so are those of a stream whose one user
stage projects the events to `_id` (rendered as `{_id: <token>}`).
"""

from __future__ import annotations

import trio
import trio.testing
from bson import Binary, Decimal128, Int64, ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.clock import key_ts
from mongosim.oplog.errors import MongoError
from mongosim.shardsim.changestream.aggregate import build_cursor
from mongosim.testing import AsyncClient

EPOCH = 1_700_000_000
ids = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 1, 2**30, 2**31 - 1, -1]),
                st.text(max_size=4), st.builds(ObjectId), st.integers(2**40, 2**50).map(Int64),
                st.floats(allow_nan=False, allow_infinity=False), st.just(Decimal128("1.5")))
values = st.one_of(st.integers(-5, 5), st.text(max_size=6), st.none(), st.lists(st.integers(0, 3), max_size=3))
steps = st.lists(st.tuples(
    st.sampled_from(["insert", "insert", "set", "unset", "replace", "delete", "push", "other", "otherdb",
                     "txn", "index", "move"]),
    st.integers(0, 5), st.integers(0, 99), values, st.booleans()), min_size=1, max_size=40)


async def _workload(core, id_values, script, sharded: bool, drop: bool) -> None:
    c = AsyncClient(core.router)
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    if sharded:
        await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
        await c.admin({"split": "db.c", "middle": {"k": 50}})
    else:
        await c.command("db", {"create": "c"})
    txn_numbers = iter(range(1, 10_000))
    lsid = {"id": Binary(b"\x07" * 16, 4)}
    live: dict[int, int] = {}  # document number -> k
    where = {50: "shard00"}
    for op, n, k, v, retry in script:
        n %= len(id_values)
        _id = id_values[n]
        session = {"lsid": lsid, "txnNumber": Int64(next(txn_numbers))} if retry else {}
        key = {"_id": _id, "k": live.get(n, k)}
        if op == "insert" and n not in live:
            r = await c.command("db", {"insert": "c", "documents": [{"_id": _id, "k": k, "v": v}], **session},
                                check=False)
            if r.get("n"):  # (not when an equal _id is there: 0 and 0.0)
                live[n] = k
        elif op in ("set", "unset", "push") and n in live:
            u = {"set": {"$set": {"v": v}}, "unset": {"$unset": {"v": 1}}, "push": {"$push": {"a": v}}}[op]
            await c.command("db", {"update": "c", "updates": [{"q": key, "u": u}], **session})
        elif op == "replace" and n in live:
            await c.command("db", {"update": "c", "updates": [{"q": key, "u": {"k": live[n], "w": v}}], **session})
        elif op == "delete" and n in live:
            await c.command("db", {"delete": "c", "deletes": [{"q": key, "limit": 1}], **session})
            del live[n]
        elif op == "other":
            await c.command("db", {"insert": "other", "documents": [{"v": v}]})
        elif op == "otherdb":
            await c.command("db2", {"insert": "x", "documents": [{"v": v}]})
        elif op == "txn":
            t = {"lsid": lsid, "txnNumber": Int64(next(txn_numbers)), "autocommit": False}
            await c.command("db", {"insert": "c", "documents": [{"k": k, "v": v}, {"k": 99 - k, "v": v}],
                                   "startTransaction": True, **t})
            await c.command("admin", {"commitTransaction": 1, **t})
        elif op == "index":
            await c.command("db", {"createIndexes": "c", "indexes": [{"key": {f"f{k % 3}": 1}, "name": f"f{k % 3}"}]},
                            check=False)
        elif op == "move" and sharded:
            to = "shard01" if where[50] == "shard00" else "shard00"
            await c.admin({"moveChunk": "db.c", "find": {"k": 50}, "to": to})
            where[50] = to
    if drop:
        await c.command("db", {"drop": "c"})


def _drain(node, cmd: dict, fast: bool, sizes: list[int]) -> list:
    """Every batch of one shard cursor: (events, keys, kinds, type bits, altered, PBRT), until it is exhausted
    or two pulls in a row give nothing."""
    cur = build_cursor(node, cmd["$db"], cmd, needs_merge=cmd["$_needsMerge"])
    if not fast:
        cur._run = None
    else:
        assert cur._run is not None
    out = []
    empty = 0
    k = 0
    while empty < 2 and not cur.exhausted:
        batch = cur.pull_batch(sizes[k % len(sizes)])
        k += 1
        out.append((list(batch.raws), list(batch.keys), list(batch.ops), dict(batch.bits), list(batch.altered),
                    cur.pbrt, cur.pbrt_key))
        empty = empty + 1 if not len(batch) else 0
    return out


STREAMS = [("db", "c", {}), ("db", 1, {}), ("admin", 1, {"allChangesForCluster": True}),
           ("db", "c", {"showExpandedEvents": True}), ("db", 1, {"showMigrationEvents": True}),
           ("admin", 1, {"allChangesForCluster": True, "showExpandedEvents": True})]


async def shard_streams(core, id_values, script, sharded, drop, stream, needs_merge, split, ids=False) -> list:
    """Run the workload; then, for each shard, (name, node, the shard's `stream` command from before it;
    `ids`: the user's stages are `{$project: {_id: 1}}`)."""
    start = key_ts(core.router.clock.key + 1)
    await _workload(core, id_values, script, sharded, drop)
    db, target, opts = stream
    tail = ([{"$project": {"_id": 1}}] if ids else []) + ([{"$changeStreamSplitLargeEvent": {}}] if split else [])
    return [(name, node, {"aggregate": target, "$db": db, "$_needsMerge": needs_merge,
                          "pipeline": [{"$changeStream": {"startAtOperationTime": start, **opts}}, *tail]})
            for name, node in sorted(core.shards.items())]


def resumed_after(cmd: dict, key: str) -> dict:
    """`cmd` resumed after the event token `key` (the same options and stages)."""
    spec = {k: v for k, v in cmd["pipeline"][0]["$changeStream"].items() if k != "startAtOperationTime"}
    return dict(cmd, pipeline=[{"$changeStream": {"resumeAfter": {"_data": key}, **spec}}, *cmd["pipeline"][1:]])


async def _check(id_values, script, sharded, drop, sizes, cache_first, stream, needs_merge, split, ids) -> None:
    async with open_cluster(shards=2, listen=False, epoch=EPOCH) as core:
        for name, node, cmd in await shard_streams(core, id_values, script, sharded, drop, stream, needs_merge, split,
                                                   ids):
            cache = node.event_cache
            node.event_cache = cache if cache_first else None  # the cache filled by either path serves the other
            fast = _drain(node, cmd, True, sizes)
            node.event_cache = cache
            slow = _drain(node, cmd, False, sizes)
            assert fast == slow, (name, cmd)
            # and resumed from an event of the first batch with events
            first = next((b for b in slow if b[1]), None)
            if first:
                rcmd = resumed_after(cmd, first[1][len(first[1]) // 2])
                try:
                    f = _drain(node, rcmd, True, sizes)
                except MongoError:  # e.g. a collection stream resumed after its invalidate
                    continue
                assert f == _drain(node, rcmd, False, sizes), (name, rcmd)


@given(id_values=st.lists(ids, min_size=1, max_size=6, unique_by=lambda x: (type(x).__name__, str(x))), script=steps,
       sharded=st.booleans(), drop=st.booleans(), sizes=st.lists(st.integers(1, 7), min_size=1, max_size=3),
       cache_first=st.booleans(), stream=st.sampled_from(STREAMS), needs_merge=st.booleans(), split=st.booleans(),
       ids=st.booleans())
@settings(max_examples=300, deadline=None)
def test_run_renderer_gives_the_pipelines_batches(id_values, script, sharded, drop, sizes, cache_first, stream,
                                                   needs_merge, split, ids):
    trio.run(_check, id_values, script, sharded, drop, sizes, cache_first, stream, needs_merge, split, ids,
             clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_plain_stream_is_rendered_by_runs():
    """The common stream (no user stages, no images) goes through the run renderer, not the stages."""

    async def body():
        async with open_cluster(shards=1, listen=False, epoch=EPOCH) as core:
            start = key_ts(core.router.clock.key + 1)
            c = AsyncClient(core.router)
            await c.insert("db", "c", [{"_id": i} for i in range(50)])
            node = core.shards["shard00"]
            cmd = {"aggregate": "c", "pipeline": [{"$changeStream": {"startAtOperationTime": start}}]}
            cur = build_cursor(node, "db", cmd, needs_merge=True)
            calls = []
            transform = next(s for s in cur.stages if type(s).__name__ == "Transform")
            original = transform.render
            transform.render = lambda view: calls.append(view) or original(view)
            got = cur.pull_batch(100)
            assert len(got) == 50 and len(calls) <= 1  # (the first event passes check-resumability)
            cmd["pipeline"].append({"$match": {"operationType": "insert"}})
            assert build_cursor(node, "db", cmd, needs_merge=True)._run is None  # user stages: the pipeline

    trio.run(body, clock=trio.testing.MockClock(autojump_threshold=0))


def test_events_near_the_split_limit_are_the_split_stages():
    """For a router the split stage weighs an event with its $sortKey: an insert event just under the
    limit alone, over it with the sort key, is the stage's (which cannot split one field that large:
    7182500, as the server), not the run renderer's."""
    from mongosim.shardsim.changestream.split_large_event import LIMIT, sort_key_size

    def stream(coll: str, start) -> dict:
        return {"aggregate": coll, "$db": "db", "$_needsMerge": True,
                "pipeline": [{"$changeStream": {"startAtOperationTime": start}}, {"$changeStreamSplitLargeEvent": {}}]}

    async def body():
        async with open_cluster(shards=1, listen=False, epoch=EPOCH) as core:
            start = key_ts(core.router.clock.key + 1)
            c = AsyncClient(core.router)
            node = core.shards["shard00"]
            await c.insert("db", "c", [{"_id": 1, "s": "a" * 100}])
            (raws, keys, *_), *_ = _drain(node, stream("c", start), False, [10])
            overhead = len(raws[0]) - 100
            extra = sort_key_size({"_data": keys[0]})
            for under in (1, extra // 2, extra - 1):  # (_id 1: the same token length)
                coll = f"c{under}"
                await c.insert("db", coll, [{"_id": 0}])  # (a first event: the next one is the renderer's to take)
                await c.insert("db", coll, [{"_id": 1, "s": "a" * (LIMIT - under - overhead)}])
                for fast in (True, False):
                    try:
                        _drain(node, stream(coll, start), fast, [10])
                        raise AssertionError(f"{under}: no error (fast {fast})")
                    except MongoError as err:
                        assert err.code == 7182500

    trio.run(body, clock=trio.testing.MockClock(autojump_threshold=0))
