"""The insert byte paths write exactly what the general paths write.

Inserts arrive as mongod and mongos get them from a driver: an OP_MSG whose documents are a
document sequence (their bytes kept, `bsonutil.DocumentSequence`).  The same random commands run on
two clusters in virtual time: one with the byte paths (mongos targeting documents by the bytes of
their hashed `_id`, the shard's batch insert assembling oplog entries from the documents' bytes),
one with them switched off (targeting by decoded documents, one document at a time).  Every shard's
oplog, bytes for bytes, its documents, and every reply are the same.
"""

from __future__ import annotations

import re
import struct

import bson
import trio
import trio.testing
from bson import Binary, Decimal128, Int64, ObjectId, Regex
from hypothesis import given, settings
from hypothesis import strategies as st

from mongosim.core import open_cluster
from mongosim.oplog import bsonutil
from mongosim.oplog.errors import MongoError
from mongosim.router import commands_crud, insert_targeting, server, wire
from mongosim.router.server import ConnState
from mongosim.shardsim import writes

EPOCH = 1_700_000_000
_UI = re.compile(rb"(\x05ui\x00\x10\x00\x00\x00\x04).{16}", re.S)

ids = st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-3, 3), st.text(max_size=3), st.builds(ObjectId),
                st.integers(2**40, 2**50).map(Int64), st.floats(-5, 5, allow_nan=False), st.just(Decimal128("2")),
                st.booleans(), st.none(), st.just([1]), st.just(Regex("x")), st.just({"a": 1}), st.just({"$a": 1}))
docs = st.lists(st.one_of(
    st.builds(lambda i, v: {"_id": i, "v": v}, ids, st.integers(0, 9)),
    st.builds(lambda v: {"v": v, "w": "x" * v}, st.integers(0, 9))),  # no _id: mongos gives one
    min_size=1, max_size=12)
commands = st.lists(st.tuples(docs, st.booleans(), st.booleans()), min_size=1, max_size=4)  # (docs, ordered, retryable)


class _Sink:
    def __init__(self) -> None:
        self.replies: list[dict] = []

    async def send_all(self, data: bytes) -> None:
        self.replies.append(bson.decode(data[21:]))


def _op_msg(body: dict, documents: list) -> bytes:
    """An OP_MSG as a driver sends an insert: the body, then the documents as a kind-1 section."""
    seq = b"documents\x00" + b"".join(bson.encode(d) for d in documents)
    payload = b"\x00\x00\x00\x00" + b"\x00" + bson.encode(body) + b"\x01" + struct.pack("<i", len(seq) + 4) + seq
    return struct.pack("<iiii", 16 + len(payload), 1, 0, wire.OP_MSG) + payload


async def _run(script, sharding, byte_paths: bool, index: str = "none") -> tuple:
    oids = (ObjectId(b"\x00" * 8 + i.to_bytes(4, "big")) for i in range(1, 10**6))
    real_oid = commands_crud.ObjectId
    commands_crud.ObjectId = lambda: next(oids)  # the _ids mongos gives: the same in both runs
    try:
        return await _run_cluster(script, sharding, index)
    finally:
        commands_crud.ObjectId = real_oid


async def _run_cluster(script, sharding, index: str) -> tuple:
    async with open_cluster(shards=2, listen=False, epoch=EPOCH) as core:
        router = core.router
        conn = ConnState(1, "test")
        await router.run_command("admin", {"enableSharding": "db", "primaryShard": "shard00"}, conn)
        if sharding == "hashed":
            await router.run_command("admin", {"shardCollection": "db.c", "key": {"_id": "hashed"}}, conn)
        elif sharding == "range":
            await router.run_command("admin", {"shardCollection": "db.c", "key": {"v": 1}}, conn)
            await router.run_command("admin", {"split": "db.c", "middle": {"v": 5}}, conn)
            await router.run_command("admin", {"moveChunk": "db.c", "find": {"v": 5}, "to": "shard01"}, conn)
        if index != "none":  # a secondary index (unique: checked; queried: maintained from then on)
            spec = {"key": {"v": 1}, "name": "v_1", **({"unique": True} if index == "unique" else {})}
            try:
                await router.run_command("db", {"createIndexes": "c", "indexes": [spec]}, conn)
            except MongoError:  # (a unique index without the shard key is refused: both runs alike)
                pass
            if index == "queried":
                await router.run_command("db", {"find": "c", "filter": {"v": 3}, "hint": "v_1"}, conn)
        sink = _Sink()
        codec = wire.WireConnection()
        lsid = {"id": Binary(b"\x05" * 16, 4)}
        for k, (documents, ordered, retryable) in enumerate(script):
            body = {"insert": "c", "ordered": ordered, "$db": "db"}
            if retryable:
                body.update(lsid=lsid, txnNumber=Int64(k + 1))
            codec.receive_data(_op_msg(body, documents))
            await server._handle(sink, router, conn, codec.next_message())
        state = []
        for name, node in sorted(core.shards.items()):
            coll = node.catalog.collection("db", "c")
            oplog = node.oplog
            raws = [_UI.sub(b"\\1" + b"U" * 16, oplog.raw_at(p)) for p in range(oplog.start, oplog.end)
                    if oplog.meta_at(p)[2] == "db.c"]  # (collection UUIDs are random: compared as a placeholder)
            state.append((name, raws, list(coll.docs.items()) if coll else None))
        replies = [{k: v for k, v in r.items() if k not in ("$clusterTime", "operationTime")} for r in sink.replies]
        return state, replies


def _check(script, sharding, index="none") -> None:
    clock = trio.testing.MockClock(autojump_threshold=0)
    fast = trio.run(_run, script, sharding, True, index, clock=clock)
    real_batch, real_targeting = writes.try_insert_batch, insert_targeting.hashed_targeting
    writes.try_insert_batch = lambda *a, **k: False
    insert_targeting.hashed_targeting = lambda routing: None
    try:
        slow = trio.run(_run, script, sharding, False, index, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        writes.try_insert_batch, insert_targeting.hashed_targeting = real_batch, real_targeting
    assert fast == slow


@given(script=commands, sharding=st.sampled_from(["none", "hashed", "range"]),
       index=st.sampled_from(["none", "plain", "unique", "queried"]))
@settings(max_examples=200, deadline=None)
def test_byte_paths_write_what_the_general_paths_write(script, sharding, index):
    _check(script, sharding, index)


def test_uniform_batches_take_the_one_pass_paths_and_write_what_the_general_paths_write():
    """Batches whose `_id`s are all of one fixed-size type (a driver's batch: ints, int64s, ObjectIds,
    doubles) are targeted and logged by the paths mapped over the whole batch; retryable or not,
    ordered or not, hashed, ranged or unsharded, they write what the per-document paths write."""
    uniform = [[{"_id": i, "v": i % 10} for i in range(-20, 40)],
               [{"_id": Int64(2**40 + i), "v": i % 10} for i in range(30)],
               [{"_id": ObjectId(b"\x01" * 8 + i.to_bytes(4, "big")), "v": 3} for i in range(30)],
               [{"_id": i / 4, "v": 7} for i in range(30)]]
    for sharding in ("none", "hashed", "range"):
        _check([(docs, k % 2 == 0, k < 2) for k, docs in enumerate(uniform)], sharding)


def test_a_batch_takes_the_byte_path():
    """A plain batch of new documents is stored and logged by the batch path (no per-document insert)."""
    calls = []
    real = writes.insert_one
    writes.insert_one = lambda *a, **k: (a[2].ns == "db.c" and calls.append(a)) or real(*a, **k)
    try:
        state, replies = trio.run(_run, [([{"_id": i, "v": i} for i in range(50)], False, True)], "hashed", True,
                                  clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        writes.insert_one = real
    assert replies[0]["n"] == 50 and not calls
    assert sum(bsonutil.decode(r)["op"] == "i" for _n, raws, _d in state for r in raws) == 50


async def _on_a_mongod(bodies: list[tuple[dict, list]]) -> tuple[list[dict], list[tuple], object]:
    """Send OP_MSG inserts (body, documents) to a replica-set primary; its replies, the batch path's
    calls that stored something, and the node."""
    stored = []
    real = writes.try_insert_batch

    def spy(node, ctx, ws, db, name, docs):
        done = real(node, ctx, ws, db, name, docs)
        if done:
            stored.append((db, name, len(docs)))
        return done

    writes.try_insert_batch = spy
    try:
        async with open_cluster(topology="replset", listen=False, epoch=EPOCH) as core:
            sink, codec, conn = _Sink(), wire.WireConnection(), ConnState(1, "test")
            for body, documents in bodies:
                codec.receive_data(_op_msg(body, documents) if documents else _command(body))
                await server._handle(sink, core.frontend, conn, codec.next_message())
            return sink.replies, stored, core.nodes["shard00"]
    finally:
        writes.try_insert_batch = real


def _command(body: dict) -> bytes:
    payload = b"\x00\x00\x00\x00" + b"\x00" + bson.encode(body)
    return struct.pack("<iiii", 16 + len(payload), 1, 0, wire.OP_MSG) + payload


def test_the_byte_path_keeps_a_mongods_per_command_rules():
    """The batch path runs inside the node's command: the profiler records it, and what a mongod
    refuses before running an insert (a readConcern other than local, a client's write to
    system.profile) is refused with nothing stored."""
    docs = [{"_id": i, "v": i} for i in range(5)]
    replies, stored, node = trio.run(_on_a_mongod, [
        ({"profile": 2, "$db": "db"}, None),
        ({"insert": "c", "$db": "db", "comment": "batch"}, docs),
        ({"insert": "r", "$db": "db", "readConcern": {"level": "majority"}}, docs),
        ({"insert": "system.profile", "$db": "db"}, docs),
    ], clock=trio.testing.MockClock(autojump_threshold=0))
    assert [r["ok"] for r in replies] == [1.0, 1.0, 0.0, 0.0]
    assert stored == [("db", "c", 5)]
    assert (replies[2]["code"], replies[2]["codeName"]) == (72, "InvalidOptions")
    assert (replies[3]["code"], replies[3]["codeName"]) == (73, "InvalidNamespace")
    assert node.catalog.collection("db", "r") is None
    profiled = [d for d in node.catalog.collection("db", "system.profile").docs.values()
                if d["command"].get("comment") == "batch"]
    assert [(d["op"], d["ns"], d["ninserted"]) for d in profiled] == [("insert", "db.c", 5)]


def test_validated_and_capped_collections_take_the_per_document_path():
    """A validator checks each document (the batch stops at the first it refuses, ordered) and a
    capped collection evicts its oldest documents as each new one arrives: not the batch path's."""
    docs = [{"_id": i, "v": i - 2} for i in range(5)]
    replies, stored, node = trio.run(_on_a_mongod, [
        ({"create": "checked", "validator": {"v": {"$gte": 0}}, "$db": "db"}, None),
        ({"create": "ring", "capped": True, "size": 4096, "max": 3, "$db": "db"}, None),
        ({"insert": "checked", "$db": "db"}, docs[2:] + docs[:2]),
        ({"insert": "ring", "$db": "db"}, docs),
        ({"insert": "plain", "$db": "db"}, docs),
    ], clock=trio.testing.MockClock(autojump_threshold=0))
    assert stored == [("db", "plain", 5)]
    assert replies[2]["n"] == 3 and [(e["index"], e["code"]) for e in replies[2]["writeErrors"]] == [(3, 121)]
    assert sorted(d["_id"] for d in node.catalog.collection("db", "checked").docs.values()) == [2, 3, 4]
    assert replies[3]["n"] == 5 and sorted(d["_id"] for d in node.catalog.collection("db", "ring").docs.values()) == [2, 3, 4]


def test_a_batch_keeps_what_an_open_snapshot_sees():
    """The batch path also runs while a transaction holds a snapshot (as a replica set's committed
    snapshot always does): the new documents are recorded as absent from that snapshot."""
    lsid = {"id": Binary(b"\x05" * 16, 4)}
    txn = {"lsid": lsid, "txnNumber": Int64(1), "autocommit": False, "$db": "db"}
    replies, stored, node = trio.run(_on_a_mongod, [
        ({"insert": "c", "$db": "db"}, [{"_id": i} for i in range(3)]),
        ({"find": "c", "startTransaction": True, **txn}, None),
        ({"insert": "c", "$db": "db"}, [{"_id": i} for i in range(10, 15)]),
        ({"find": "c", **txn}, None),
        ({"find": "c", "$db": "db"}, None),
        ({"abortTransaction": 1, **{**txn, "$db": "admin"}}, None),
    ], clock=trio.testing.MockClock(autojump_threshold=0))
    assert stored == [("db", "c", 3), ("db", "c", 5)]
    assert [d["_id"] for d in replies[3]["cursor"]["firstBatch"]] == [0, 1, 2]
    assert [d["_id"] for d in replies[4]["cursor"]["firstBatch"]] == [0, 1, 2, 10, 11, 12, 13, 14]
    assert replies[5]["ok"] == 1.0


def test_a_batch_is_stored_as_its_bytes_until_read():
    """The batch path stores the documents as the bytes they came in (nothing decoded per document
    is kept: a bulk load leaves no objects for the collector to walk); the first read decodes them
    into their places, so natural order holds across batches and single inserts."""
    replies, stored, node = trio.run(_on_a_mongod, [
        ({"insert": "c", "$db": "db"}, [{"_id": i, "v": "x" * i} for i in range(4)]),
        ({"insert": "c", "$db": "db"}, [{"_id": 9, "v": "single"}]),  # (the per-document path)
        ({"insert": "c", "$db": "db"}, [{"_id": i} for i in (7, 5, 6)]),
    ], clock=trio.testing.MockClock(autojump_threshold=0))
    assert [r["n"] for r in replies] == [4, 1, 3] and stored == [("db", "c", 4), ("db", "c", 3)]
    coll = node.catalog.collection("db", "c")
    assert len(coll) == 8 and coll._undecoded is not None and len(coll._undecoded) == 3  # (the single insert read them)
    assert [d["_id"] for d in coll.scan()] == [0, 1, 2, 3, 9, 7, 5, 6]
    assert coll._undecoded is None and coll.get(3) == {"_id": 3, "v": "xxx"}
