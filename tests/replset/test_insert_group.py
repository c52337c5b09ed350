"""InsertGroup: a secondary's runs of inserts applied from bytes leave it as the general applier does.

A random write workload (batch inserts with and without retryable-write sessions, duplicates that
fail, `_id`s the group cannot take, updates, deletes, transactions, indexes, a capped collection
and one keeping pre-images) runs on a primary; its oplog is then applied to two fresh members, one
through `OplogApplier.apply_batch` (insert groups) in the chunks a fetch could deliver, one entry by
entry through the general `apply_raw`, each with a snapshot open (so every write keeps its
before-image) and every index materialized between chunks (so each chunk must maintain them).
Both must end identical — documents in order, RecordIds, index entries, multikey paths, session
table, pre-images, snapshot history, oplog and clock — and hold the primary's data and index keys.
A three-member set under the same workloads ends with every member holding the primary's.
"""

from __future__ import annotations

import trio
import trio.testing
from bson import Binary, ObjectId
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog.clock import TimeSource
from mongosim.shardsim.node import Node
from mongosim.shardsim.oplog_applier import OplogApplier
from mongosim.testing import AsyncClient
from tests.replset.conftest import EPOCH

COLLS = ["c", "p", "k"]  # plain, with pre-images, capped
IDS = st.one_of(st.integers(0, 30), st.integers(0, 30), st.sampled_from(["a", "b", "c"]), st.sampled_from([{"x": 1}, {"x": 2}]),
                st.sampled_from([ObjectId(b"\x01" * 12), ObjectId(b"\x02" * 12)]), st.sampled_from([1.5, 2.0]))
INSERT = st.tuples(st.just("insert"), st.sampled_from(COLLS),
                   st.one_of(st.lists(IDS, min_size=1, max_size=8), st.lists(IDS, min_size=2, max_size=12, unique_by=repr)),
                   st.booleans(), st.booleans())
OPS = st.one_of(
    INSERT, INSERT, INSERT,
    st.tuples(st.just("update"), st.sampled_from(COLLS), IDS, st.integers(-3, 3)),
    st.tuples(st.just("delete"), st.sampled_from(COLLS), IDS),
    st.tuples(st.just("txn"), st.sampled_from(["c", "p"]), st.lists(IDS, min_size=1, max_size=4), IDS),
    st.tuples(st.just("index"), st.sampled_from(COLLS), st.sampled_from(["v", "a", "u"])),
)


def doc(_id, i: int) -> dict:
    return {"_id": _id, "v": i % 3, "a": [i, {"b": i % 2}], **({"u": i} if i % 4 else {})}


async def run_workload(c: AsyncClient, ops: list) -> None:
    await c.command("db", {"create": "p", "changeStreamPreAndPostImages": {"enabled": True}})
    await c.command("db", {"create": "k", "capped": True, "size": 4096, "max": 4})
    session = Binary(b"\x07" * 16, 4)
    txn_number = 0
    serial = iter(range(1 << 30))  # each document's own `u`: the unique index refuses only repeated `_id`s
    for op in ops:
        kind, coll = op[0], op[1]
        if kind == "insert":
            ids, retryable, ordered = op[2], op[3], op[4]
            cmd = {"insert": coll, "documents": [doc(_id, next(serial)) for _id in ids], "ordered": ordered}
            if retryable:
                txn_number += 1
                cmd.update(lsid={"id": session}, txnNumber=txn_number)
            await c.command("db", cmd, check=False)
        elif kind == "update":
            await c.update("db", coll, {"_id": op[2]}, {"$inc": {"v": op[3]}, "$push": {"a": op[3]}})
        elif kind == "delete":
            await c.delete("db", coll, {"_id": op[2]}, limit=1)
        elif kind == "txn":
            txn_number += 1
            lsid = {"id": session}
            first = {"lsid": lsid, "txnNumber": txn_number, "autocommit": False}
            reply = await c.command("db", {"insert": coll, "documents": [doc(_id, next(serial)) for _id in op[2]],
                                           "startTransaction": True, **first}, check=False)
            if reply.get("ok"):
                await c.command("db", {"update": coll, "updates": [{"q": {"_id": op[3]}, "u": {"$set": {"t": next(serial)}}}],
                                       **first}, check=False)
                await c.command("admin", {"commitTransaction": 1, **first}, check=False)
        else:
            field = op[2]
            spec = {"key": {field: 1}, "name": f"{field}_1", **({"unique": True, "sparse": True} if field == "u" else {})}
            await c.command("db", {"createIndexes": coll, "indexes": [spec]}, check=False)


def materialize(node: Node) -> None:
    for coll in node.catalog.all_collections():
        for spec in coll.indexes:
            coll.index_access(spec["name"])


def index_keys(coll) -> dict:
    """Each materialized index's entries without RecordIds (members number records their own way)."""
    return {name: sorted(repr(e[:-2] + e[-1:]) for e in ix.entries)
            for name, ix in coll.access.items() if ix.entries is not None}


def data(node: Node) -> dict:
    return {c.ns: (list(c.docs.items()), index_keys(c)) for c in node.catalog.all_collections()}


def full_state(node: Node) -> dict:
    """Everything applying entries may change on a member."""
    colls = {}
    for c in node.catalog.all_collections():
        colls[c.ns] = (list(c.docs.items()), c.rids, c._next_rid, c.versions,
                       {name: (list(ix.entries), ix.multikey_path_names()) for name, ix in c.access.items()
                        if ix.entries is not None}, c.options, c.uuid)
    sessions = {k: (s.txn_number, s.executed, s.last_write_key, s.txn.state if s.txn is not None else None)
                for k, s in node.sessions._sessions.items()}
    oplog = node.oplog
    return {"colls": colls, "sessions": sessions, "preimages": node.preimages, "clock": node.clock.key,
            "snapshot_seq": node.catalog.snapshots.seq,
            "oplog": [list(col) for col in oplog.columns(oplog.start)]}


BIG = [("index", "c", "u"), ("index", "p", "a"), ("insert", "c", list(range(20)), True, False),
       ("insert", "c", list(range(20, 30)), False, True), ("insert", "c", [{"x": 1}, {"x": 2}, 40, 41], True, True),
       ("insert", "p", list(range(15)), True, True), ("update", "p", 3, 2), ("delete", "p", 4),
       ("insert", "p", ["a", "b", ObjectId(b"\x01" * 12), 2.5], True, False), ("insert", "k", list(range(6)), True, True),
       ("txn", "c", [50, 51, 52], 1), ("insert", "c", [60, 61, 60, 62], True, False), ("index", "c", "v")]


@settings(max_examples=60)
@example(ops=BIG, cuts=[7, 100, 3])
@example(ops=BIG, cuts=[1000])
@given(ops=st.lists(OPS, min_size=4, max_size=25), cuts=st.lists(st.integers(1, 60), min_size=1, max_size=6))
def test_insert_groups_apply_as_the_general_path(ops, cuts):
    async def run() -> None:
        async with open_cluster(topology="replset", members=1, listen=False, epoch=EPOCH) as core:
            primary = core.replica_sets["shard00"].primary.node
            await run_workload(AsyncClient(core.frontend), ops)
            oplog = primary.oplog
            keys, op_col, ns_col, raws = oplog.columns(oplog.start)
            grouped, general = (Node("m", TimeSource(), initiate=False) for _ in range(2))
            for node in (grouped, general):
                node.catalog.snapshots.open()  # a reader: every write keeps its before-image
            a, b = OplogApplier(grouped), OplogApplier(general)
            pos, turn = 0, 0
            while pos < len(raws):
                end = min(len(raws), pos + cuts[turn % len(cuts)])
                a.apply_batch(keys[pos:end], op_col[pos:end], ns_col[pos:end], raws[pos:end], lambda k, t: None)
                for raw in raws[pos:end]:
                    b.apply_raw(raw)
                materialize(grouped)
                materialize(general)
                pos, turn = end, turn + 1
            assert full_state(grouped) == full_state(general)
            materialize(primary)
            assert data(grouped) == data(primary)

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


@settings(max_examples=15)
@example(ops=BIG)
@given(ops=st.lists(OPS, min_size=1, max_size=20))
def test_members_hold_the_primarys_data_and_indexes(ops):
    async def run() -> None:
        async with open_cluster(topology="replset", members=3, listen=False, epoch=EPOCH) as core:
            rs = core.replica_sets["shard00"]
            await run_workload(AsyncClient(core.frontend), ops)
            await trio.sleep(1.0)
            for m in rs.members:
                materialize(m.node)
            want = data(rs.primary.node)
            for m in rs.members:
                assert data(m.node) == want
                assert m.node.oplog.columns(m.node.oplog.start)[3] == rs.primary.node.oplog.columns(
                    rs.primary.node.oplog.start)[3]

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_drivers_batches_stay_bytes_until_read():
    """Batches whose `_id`s lead as int32, int64 or ObjectIds are kept as their bytes on the member
    (counted, checked for duplicates, in the snapshot history, without a decode) and decoded, in
    their places, when first read: the member then holds what the general path gives."""
    from bson import Int64

    batches = [[ObjectId(bytes([k]) * 12) for k in range(1, 6)], list(range(5)), [Int64(k) for k in range(10, 14)],
               ["s", "t"], list(range(20, 23))]

    async def run() -> None:
        async with open_cluster(topology="replset", members=1, listen=False, epoch=EPOCH) as core:
            primary = core.replica_sets["shard00"].primary.node
            c = AsyncClient(core.frontend)
            for k, ids in enumerate(batches):
                await c.command("db", {"insert": "c", "documents": [doc(_id, i) for i, _id in enumerate(ids)],
                                       "lsid": {"id": Binary(b"\x07" * 16, 4)}, "txnNumber": k + 1})
            keys, op_col, ns_col, raws = primary.oplog.columns(primary.oplog.start)
            grouped, general = (Node("m", TimeSource(), initiate=False) for _ in range(2))
            grouped.catalog.snapshots.open()
            general.catalog.snapshots.open()
            cut = len(raws) - 5  # the string batch and the last one in a later fetch
            OplogApplier(grouped).apply_batch(keys[:cut], op_col[:cut], ns_col[:cut], raws[:cut], lambda k, t: None)
            coll = grouped.catalog.collection("db", "c")
            assert coll._undecoded is not None and len(coll._undecoded) == 14 and not coll._docs
            assert len(coll) == 14 and len(coll.versions) == 14
            OplogApplier(grouped).apply_batch(keys[cut:], op_col[cut:], ns_col[cut:], raws[cut:], lambda k, t: None)
            assert coll._undecoded is not None and len(coll._undecoded) == 3 and len(coll._docs) == 16  # (the strings decoded those before)
            for raw in raws:
                OplogApplier(general).apply_raw(raw)
            assert full_state(grouped) == full_state(general)
            assert coll._undecoded is None
            assert data(grouped) == data(primary)

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
