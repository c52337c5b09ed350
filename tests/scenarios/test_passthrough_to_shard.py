"""`$_passthroughToShard` (seed 004): one shard's change stream through mongos, unmerged — through pymongo.

The cases follow the server's per-shard cursor tests: parse errors, isolation
from the other shards, database and cluster streams, no migrateChunkToNewShard,
explain without a split pipeline, CursorNotFound after an invalidate.
"""

from __future__ import annotations

import time

import pymongo
import pytest
from bson import Timestamp
from bson.raw_bson import RawBSONDocument

from mongosim.oplog.resume_token import decode_resume_token

from tests.scenarios.conftest import shard_three_ways

SHARDS = ("shard00", "shard01", "shard02")


def per_shard(target, shard: str, pipeline=None, **spec):
    """A per-shard change-stream cursor (pymongo CommandCursor) on `target` (a Database or Collection)."""
    return target.aggregate([{"$changeStream": spec}, *(pipeline or [])], maxAwaitTimeMS=50,
                            **{"$_passthroughToShard": {"shard": shard}})


def drain(cursor, n: int | None = None, until=None, timeout: float = 30.0) -> list:
    """Events until `n` arrived, or (without `n`) until the cursor's postBatchResumeToken passed the
    cluster time `until` (default: now, read from the cluster): then every event of a write before
    it has been returned, and what the shard's stream holds is known, not guessed from a quiet spell.
    (`timeout` only turns a hang into a failure.)"""
    if n is None and until is None:
        until = now(cursor)
    out: list = []
    deadline = time.monotonic() + timeout
    while cursor.alive and time.monotonic() < deadline:
        ev = cursor.try_next()
        if ev is not None:
            out.append(ev)
            if n is not None and len(out) >= n:
                break
            continue
        pbrt = getattr(cursor, "_postbatchresumetoken", None)  # (pymongo keeps the last getMore's)
        if n is None and pbrt is not None and decode_resume_token(pbrt).cluster_time >= until:
            break
    return out


def now(cursor) -> Timestamp:
    """The cluster's current time, as the router that holds `cursor` says it."""
    return cursor._collection.database.client.admin.command("ping")["operationTime"]


def test_parse_errors(client):
    db = client.pt
    base = {"aggregate": "c", "cursor": {}, "pipeline": [{"$changeStream": {}}]}
    cases = [
        ({**base, "pipeline": [{"$match": {"x": 1}}], "$_passthroughToShard": {"shard": "shard00"}}, 6273801),
        ({**base, "pipeline": [{"$changeStream": {}}, {"$out": "h"}], "$_passthroughToShard": {"shard": "shard00"}},
         6273802),
        ({**base, "$_passthroughToShard": {}}, 40414),
        ({**base, "$_passthroughToShard": {"shard": 42}}, 14),  # TypeMismatch
        ({**base, "$_passthroughToShard": "shard00"}, 14),
        ({**base, "$_passthroughToShard": {"shard": "config"}}, 6273803),
        ({**base, "$_passthroughToShard": {"shard": "Dwane 'the Shard' Johnson"}}, 70),  # ShardNotFound
    ]
    for cmd, code in cases:
        with pytest.raises(pymongo.errors.OperationFailure) as err:
            db.command(cmd)
        assert err.value.code == code, (cmd, err.value.details)
    err_doc = pytest.raises(pymongo.errors.OperationFailure, db.command,
                            {**base, "$_passthroughToShard": {"shard": 42}}).value.details
    assert err_doc["errmsg"] == ("BSON field 'aggregate.$_passthroughToShard.shard' is the wrong type 'int', "
                                 "expected type 'string'")


def test_collection_stream_of_one_shard_is_isolated_and_the_union_is_the_router_stream(client):
    shard_three_ways(client, "pt.c")
    coll = client.pt.c
    raw_coll = client.get_database("pt", codec_options=client.codec_options.with_options(
        document_class=RawBSONDocument)).c
    router = raw_coll.watch(max_await_time_ms=50)
    cursors = {s: per_shard(raw_coll, s) for s in SHARDS}
    first = cursors["shard00"]
    assert first.address is not None and first.alive  # a cursor of mongos, with an empty first batch
    coll.insert_many([{"_id": i, "k": k} for i, k in enumerate([5, 150, 250, 7, 160, 260, 8])])
    coll.update_many({"k": {"$gte": 100}}, {"$set": {"u": 1}})
    coll.delete_one({"k": 5})
    merged = [ev.raw for ev in drain(router, 12)]
    got = {s: drain(c) for s, c in cursors.items()}
    keys = {s: [RawBSONDocument(ev.raw)["_id"]["_data"] for ev in evs] for s, evs in got.items()}
    docs = got
    assert [ev["documentKey"]["k"] for ev in docs["shard00"] if ev["operationType"] == "insert"] == [5, 7, 8]
    assert [ev["documentKey"]["k"] for ev in docs["shard01"]] == [150, 160, 150, 160]
    assert [ev["documentKey"]["k"] for ev in docs["shard02"]] == [250, 260, 250, 260]
    for s in SHARDS:
        assert keys[s] == sorted(keys[s])  # each shard's own stream is in token order
    # the events come as the shard sent them: byte for byte, the router's events, and sorted by
    # token the union of the three is exactly the merged stream
    union = sorted((ev for evs in got.values() for ev in evs), key=lambda ev: ev["_id"]["_data"])
    assert [ev.raw for ev in union] == merged
    # the postBatchResumeToken is the shard's: resuming one shard's stream after its first event
    resumed = per_shard(raw_coll, "shard01", startAfter=got["shard01"][0]["_id"])
    assert [ev.raw for ev in drain(resumed)] == [ev.raw for ev in got["shard01"][1:]]
    for c in (router, resumed, *cursors.values()):
        c.close()


def test_database_and_cluster_streams_and_no_topology_events(client, cluster):
    client.admin.command("enableSharding", "ptdb", primaryShard="shard00")
    db = client.ptdb
    on_db = per_shard(db, "shard00", showExpandedEvents=True)
    on_new_owner = per_shard(db, "shard02", showExpandedEvents=True)
    on_cluster = per_shard(client.admin, "shard00", allChangesForCluster=True)
    db.a.insert_one({"_id": 1})
    db.b.insert_one({"_id": 2})
    client.admin.command("shardCollection", "ptdb.a", key={"_id": 1})
    client.admin.command("split", "ptdb.a", middle={"_id": 10})
    client.admin.command("moveChunk", "ptdb.a", find={"_id": 10}, to="shard02")  # shard02 had no chunk of it
    db.a.insert_one({"_id": 11})
    ops = [ev["operationType"] for ev in drain(on_db)]
    assert ops == ["create", "insert", "create", "insert", "shardCollection"]
    assert [ev["operationType"] for ev in drain(on_new_owner)] == ["insert"]  # no migrateChunkToNewShard
    assert [ev["documentKey"]["_id"] for ev in drain(on_cluster)] == [1, 2]
    # a shard's per-shard stream is the same stream its own oplog gives a replica-set watch()
    node_ops = [e["op"] for e in cluster.core.shards["shard02"].oplog.iter_entries()]
    assert "n" in node_ops  # (its oplog did record the migrateChunkToNewShard noop)


def test_invalidate_closes_the_cursor_on_mongos(client):
    """After the shard's cursor ends (an invalidate, even one the user's $match filtered out), mongos's
    cursor is gone too: a getMore is CursorNotFound."""
    client.admin.command("enableSharding", "ptinv", primaryShard="shard00")
    db = client.ptinv
    for pipeline in ([], [{"$match": {"f": "filter out the invalidate event"}}]):
        client.admin.command("shardCollection", "ptinv.toDrop", key={"_id": 1})
        reply = db.command({"aggregate": "toDrop", "pipeline": [{"$changeStream": {}}, *pipeline], "cursor": {},
                            "$_passthroughToShard": {"shard": "shard00"}})
        cid = reply["cursor"]["id"]
        assert cid and reply["cursor"]["firstBatch"] == [] and "postBatchResumeToken" in reply["cursor"]
        db.toDrop.insert_one({"_id": 1})
        db.toDrop.drop()
        seen = []
        with pytest.raises(pymongo.errors.OperationFailure) as err:
            for _ in range(4):
                more = db.command({"getMore": cid, "collection": "toDrop", "maxTimeMS": 200})
                seen += [ev["operationType"] for ev in more["cursor"]["nextBatch"]]
        assert err.value.code == 43, err.value.details  # CursorNotFound
        assert seen == ([] if pipeline else ["insert", "drop", "invalidate"])


def test_explain_is_the_shards_and_not_split(client):
    reply = client.pt2.command({"aggregate": "c", "pipeline": [{"$changeStream": {}}], "explain": True,
                                "$_passthroughToShard": {"shard": "shard01"}})
    # The shard's own explain: each stage in its explain form, {$changeStream: {stage: "internal..."}}.
    assert "splitPipeline" not in reply and reply["stages"][0]["$changeStream"]["stage"] == "internalOplogMatch"
    names = [st["$changeStream"]["stage"] for st in reply["stages"] if "$changeStream" in st]
    assert "internalCheckInvalidate" in names
