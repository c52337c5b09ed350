"""The trace: off by default, typed records from the router's merge and the shard stages, sane invariants."""

from __future__ import annotations

import dataclasses

import trio
import trio.testing

from mongosim import trace as T
from mongosim.core import open_cluster
from mongosim.testing import AsyncClient

EPOCH = 1_700_000_000


async def _cluster_with_stream(core, instant: bool):
    c = AsyncClient(core.router)
    await c.admin({"enableSharding": "db", "primaryShard": "shard00"})
    await c.admin({"shardCollection": "db.c", "key": {"k": 1}})
    await c.admin({"split": "db.c", "middle": {"k": 100}})
    await c.admin({"moveChunk": "db.c", "find": {"k": 100}, "to": "shard01"})
    return c


def run(fn, **opts):
    async def main():
        async with open_cluster(shards=2, listen=False, epoch=EPOCH, **opts) as core:
            return await fn(core)
    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_off_by_default():
    async def body(core):
        assert core.router.tracer is None
        assert all(n.tracer is None for n in core.nodes.values())
        c = await _cluster_with_stream(core, False)
        cs = c.watch("db", "c")
        await cs.open()
        assert cs  # no tracer anywhere: the emit points must not fail or record
        cur = next(iter(core.router.cursors._cursors.values()))
        assert cur.trace is None and cur.arm.trace is None
    run(body)


def test_records_are_typed_and_stamped_with_virtual_time():
    async def body(core):
        c = await _cluster_with_stream(core, False)
        trace = T.Trace()
        with trace.attached(core):
            cs = c.watch("db", "c")
            await cs.open()
            await trio.sleep(1)
            await c.insert("db", "c", [{"_id": 1, "k": 5}])
            while await cs.try_next() is None:
                pass
        assert core.router.tracer is None and all(n.tracer is None for n in core.nodes.values()), "detached"
        return trace
    trace = run(body, noop_interval=10.0)
    steps = {r.step for r in trace.records}
    assert {"remote_added", "batch", "gate", "released", "reply", "scanned", "transformed", "noop",
            "promise"} <= steps
    assert not trace.of("?"), "no untyped records"
    for r in trace.records:
        assert type(r) is T.STEPS[r.step]
        assert isinstance(r.t, float) and r.t >= 0
    seqs = [r.seq for r in trace.records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    (rel,) = trace.of("released")
    assert rel.shard == "shard00" and rel.op == "insert" and rel.stream == 1
    assert rel.t >= 20.0, "the cold shard held the insert until its noop"
    gate = trace.of("gate")[0]
    assert gate.key == rel.key and {w.shard for w in gate.waiting_on} == {"shard01", "config"}
    (tr,) = trace.of("transformed", where="shard00")
    assert tr.key == rel.key and tr.operation_type == "insert" and tr.t == 1.0
    noops = trace.of("noop", where="shard01")
    assert noops and noops[0].t == 20.0
    # a record is JSON-able
    line = trace.to_json_lines().splitlines()[0]
    assert '"step"' in line


def test_unknown_steps_are_kept():
    async def body(core):
        trace = T.Trace()
        trace.add({"step": "something_new", "where": "router", "x": 1})
        return trace
    trace = run(body)
    (r,) = trace.records
    assert isinstance(r, T.Other) and r.name == "something_new" and r.data == {"x": 1}
    assert r.to_dict()["step"] == "something_new"


def test_schema_documents_every_step():
    doc = T.__doc__
    for step, cls in T.STEPS.items():
        assert f"    {step} " in doc, f"step {step!r} is not described in mongosim/trace.py"
        for f in dataclasses.fields(cls):
            if f.name in ("seq", "t", "where", "stream"):
                continue
            assert f.name in doc, f"field {step}.{f.name} is not described"


def test_instant_hwm_never_promises_past_an_unread_entry():
    """Regression: with --instant-hwm a shard whose awaitData wait timed out at the very instant of a
    write promised its clock + 1 without reading that write, then sent the write below its own promise."""
    from mongosim.shardsim.changestream.aggregate import build_cursor

    async def body(core):
        await _cluster_with_stream(core, True)
        node = core.shards["shard00"]
        cur = build_cursor(node, "db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}]}, needs_merge=True)
        assert cur.run_batch(10) == []
        await trio.sleep(1)
        await node.run_command("db", {"insert": "c", "documents": [{"_id": 1, "k": 5}]})
        written = node.oplog.last_key
        cur._advance_hwm()  # what get_more does when its wait times out
        assert cur.pbrt_key < written, "promised past an entry it has not read"
        promised = cur.pbrt["_data"]
        batch = cur.run_batch(10)
        assert [tok["_data"] >= promised for tok, *_ in batch] == [True]
    run(body, instant_hwm=True)
