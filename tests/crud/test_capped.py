"""Capped collections, tailable (awaitData) and exhaust cursors, and `local.oplog.rs` through pymongo."""

from __future__ import annotations

import threading
import time

import pytest
from bson import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import CursorType
from pymongo.errors import OperationFailure


@pytest.fixture
def db(client, request):
    db = client[f"cap_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def _next(cursor):
    try:
        return cursor.next()
    except StopIteration:
        return None


def test_create_capped_stores_the_servers_options(db):
    db.create_collection("c", capped=True, size=1000, max=3)
    db.create_collection("d", capped=True, size=5000, max=0)
    infos = {i["name"]: i["options"] for i in db.list_collections()}
    # (kept as given: 8.0 no longer rounds a capped size up to 256 bytes, SERVER-67246)
    assert infos["c"] == {"capped": True, "size": 1000, "max": 3}
    assert infos["d"] == {"capped": True, "size": 5000, "max": 2147483647}
    with pytest.raises(OperationFailure) as e:
        db.create_collection("e", capped=True)
    assert (e.value.code, str(e.value).split(",")[0]) == (72, "the 'size' field is required when 'capped' is true")
    with pytest.raises(OperationFailure) as e:
        db.create_collection("e", size=100)
    assert e.value.code == 72 and "the 'capped' field needs to be true" in str(e.value)


def test_inserts_evict_the_oldest_documents_logged_as_deletes(db, client):
    db.create_collection("c", capped=True, size=4096, max=3)
    with db.c.watch() as stream:
        for i in range(5):
            db.c.insert_one({"_id": i})
        events = [(e["operationType"], e["documentKey"]["_id"]) for e in (stream.next() for _ in range(7))]
    assert [d["_id"] for d in db.c.find()] == [2, 3, 4]
    assert events == [("insert", 0), ("insert", 1), ("insert", 2), ("insert", 3), ("delete", 0), ("insert", 4),
                      ("delete", 1)]
    db.create_collection("small", capped=True, size=256)
    for i in range(20):
        db.small.insert_one({"_id": i, "pad": "x" * 40})
    assert 0 < db.small.count_documents({}) < 20 and db.small.find_one()["_id"] > 0  # by size alone


def test_deletes_are_allowed_and_transactions_refused(db, client):
    db.create_collection("c", capped=True, size=4096)
    db.c.insert_many([{"_id": 1}, {"_id": 2}])
    assert db.c.delete_one({"_id": 1}).deleted_count == 1
    with client.start_session() as s:
        with pytest.raises(OperationFailure) as e:
            with s.start_transaction():
                db.c.insert_one({"_id": 3}, session=s)
    assert e.value.code == 263 and "is a capped collection" in str(e.value)
    assert [d["_id"] for d in db.c.find()] == [2]


def test_tailable_cursor_stays_open_at_the_end(db):
    db.create_collection("c", capped=True, size=4096)
    db.c.insert_many([{"_id": 1}, {"_id": 2}])
    reply = db.command("find", "c", tailable=True)
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1, 2] and reply["cursor"]["id"] != 0
    more = db.command("getMore", reply["cursor"]["id"], collection="c")
    assert more["cursor"]["nextBatch"] == [] and more["cursor"]["id"] == reply["cursor"]["id"]
    db.c.insert_one({"_id": 3})
    more = db.command("getMore", reply["cursor"]["id"], collection="c")
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [3]
    killed = db.command("killCursors", "c", cursors=[reply["cursor"]["id"]])
    assert killed["cursorsKilled"] == [reply["cursor"]["id"]]
    db.create_collection("empty", capped=True, size=4096)
    assert db.command("find", "empty", tailable=True)["cursor"]["id"] == 0  # nothing to tail: not kept


def test_tailable_cursor_skips_and_limits_across_its_batches(db):
    db.create_collection("c", capped=True, size=4096)
    db.c.insert_many([{"_id": i, "k": i % 2} for i in range(1, 8)])
    reply = db.command("find", "c", filter={"k": 1}, tailable=True, skip=1, limit=3, batchSize=2)
    cid = reply["cursor"]["id"]
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [3, 5] and cid != 0
    more = db.command("getMore", cid, collection="c", batchSize=5)
    assert [d["_id"] for d in more["cursor"]["nextBatch"]] == [7]
    db.c.insert_one({"_id": 9, "k": 1})
    more = db.command("getMore", cid, collection="c")  # the limit is spent: open, and nothing more
    assert more["cursor"]["nextBatch"] == [] and more["cursor"]["id"] == cid
    db.command("killCursors", "c", cursors=[cid])
    tail = db.c.find({"k": 0}, cursor_type=CursorType.TAILABLE)
    assert [d["_id"] for d in tail[1:2]] == [4]  # pymongo's slice: skip 1, limit 1
    with pytest.raises(OperationFailure) as e:
        db.command("find", "c", tailable=True, limit=-2)
    assert e.value.code == 2 and e.value.details["errmsg"] == "BSON field 'limit' value must be >= 0, actual value '-2'"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ks=st.lists(st.integers(0, 2), max_size=12), skip=st.integers(0, 6), limit=st.integers(0, 6),
       first=st.integers(0, 4), batches=st.lists(st.integers(1, 4), max_size=5), later=st.lists(st.integers(0, 2), max_size=4))
def test_tailable_batches_are_the_skipped_and_limited_matches(db, ks, skip, limit, first, batches, later):
    """Whatever the batch sizes, a tailable find's batches, with records added between getMores, are the
    matching records in insertion order with the first `skip` passed over and at most `limit` of them."""
    db.drop_collection("p")
    db.create_collection("p", capped=True, size=1 << 20)
    docs = [{"_id": i, "k": k} for i, k in enumerate(ks)]
    if docs:
        db.p.insert_many(docs)
    reply = db.command("find", "p", filter={"k": 1}, tailable=True, skip=skip, limit=limit, batchSize=first)
    got = [d["_id"] for d in reply["cursor"]["firstBatch"]]
    cid = reply["cursor"]["id"]
    assert (cid != 0) == bool(docs)  # (kept unless the collection is empty)
    room = first
    for n, k in zip(batches, later + [None] * len(batches)):
        if not cid:
            break
        room += n
        if k is not None:
            docs.append({"_id": len(docs), "k": k})
            db.p.insert_one(docs[-1])
        got += [d["_id"] for d in db.command("getMore", cid, collection="p", batchSize=n)["cursor"]["nextBatch"]]
    if cid:
        db.command("killCursors", "p", cursors=[cid])
    matching = [d["_id"] for d in docs if d["k"] == 1][skip:]
    expected = matching[:limit] if limit else matching
    assert got == expected[:room]  # each batch as full as its size allows


def test_tailable_await_data_waits_for_new_documents(db):
    db.create_collection("c", capped=True, size=4096)
    db.c.insert_one({"_id": 1, "k": "a"})
    cursor = db.c.find({"k": "b"}, cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(150)
    assert _next(cursor) is None and cursor.alive  # the find: nothing yet, the cursor kept
    started = time.monotonic()
    assert _next(cursor) is None and cursor.alive  # a getMore: waits, then an empty batch
    assert time.monotonic() - started >= 0.14  # the getMore waited its maxAwaitTimeMS
    writer = threading.Timer(0.05, lambda: db.c.insert_many([{"_id": 2, "k": "a"}, {"_id": 3, "k": "b"}]))
    writer.start()
    started = time.monotonic()
    assert _next(cursor) == {"_id": 3, "k": "b"}
    assert time.monotonic() - started < 0.14  # woken by the insert, not by the timeout
    cursor.close()


def test_tailable_errors(db):
    db.plain.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as e:
        list(db.plain.find(cursor_type=CursorType.TAILABLE))
    assert e.value.code == 2 and "tailable cursor requested on non capped collection" in str(e.value)
    db.create_collection("c", capped=True, size=4096)
    with pytest.raises(OperationFailure) as e:
        db.command("find", "c", awaitData=True)
    assert e.value.code == 9
    with pytest.raises(OperationFailure) as e:
        db.command("find", "c", tailable=True, sort={"_id": 1})
    assert e.value.code == 2


def test_capped_position_lost(db):
    db.create_collection("c", capped=True, size=4096, max=2)
    db.c.insert_many([{"_id": 1}, {"_id": 2}])
    reply = db.command("find", "c", tailable=True, batchSize=1)
    db.c.insert_many([{"_id": 3}, {"_id": 4}, {"_id": 5}])  # the cursor's record is gone
    with pytest.raises(OperationFailure) as e:
        db.command("getMore", reply["cursor"]["id"], collection="c")
    assert e.value.code == 136 and e.value.details["codeName"] == "CappedPositionLost"


def test_run_cursor_command_keeps_a_tailable_cursor_through_an_empty_batch(db):
    db.create_collection("c", capped=True, size=4096)
    db.c.insert_many([{"_id": 1}, {"_id": 2}])
    cursor = db.cursor_command({"find": "c", "batchSize": 1, "tailable": True})
    assert [cursor.next()["_id"], cursor.next()["_id"]] == [1, 2]
    assert cursor.try_next() is None and cursor.alive
    cursor.close()


def test_exhaust_cursor_streams_its_batches(replset_client):
    coll = replset_client.cap_exhaust.c
    coll.drop()
    coll.insert_many([{"_id": i} for i in range(7)])
    assert [d["_id"] for d in coll.find(cursor_type=CursorType.EXHAUST, batch_size=2)] == list(range(7))


def test_oplog_is_readable_on_a_replica_set(replset_client):
    oplog = replset_client.local["oplog.rs"]
    coll = replset_client.cap_oplog.c
    coll.drop()
    last = oplog.find().sort("$natural", -1).limit(1).next()
    assert isinstance(last["ts"], Timestamp)
    tail = oplog.find({"ts": {"$gt": last["ts"]}, "ns": "cap_oplog.c"},
                      cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(200)
    coll.insert_one({"_id": 1})
    coll.update_one({"_id": 1}, {"$set": {"x": 1}})
    entries = [_next(tail), _next(tail)]
    assert [(e["op"], e["o2"]) for e in entries] == [("i", {"_id": 1}), ("u", {"_id": 1})]
    assert entries[1]["o"] == {"$v": 2, "diff": {"i": {"x": 1}}}
    # the entries are the oplog's bytes
    raw_client = replset_client.local.get_collection(
        "oplog.rs", codec_options=replset_client.codec_options.with_options(document_class=__import__(
            "bson.raw_bson", fromlist=["RawBSONDocument"]).RawBSONDocument))
    raw = raw_client.find_one({"ts": entries[0]["ts"]})
    node = replset_client.mongosim_cluster.core.nodes
    node = next(iter(node.values())) if isinstance(node, dict) else node
    assert raw.raw == node.oplog.raw_at(node.oplog.position_at_or_after(
        (entries[0]["ts"].time << 32) | entries[0]["ts"].inc))


def test_the_local_database_is_refused_through_mongos(sharded_client):
    with pytest.raises(OperationFailure) as e:
        sharded_client.local["oplog.rs"].find_one()
    assert (e.value.code, str(e.value).split(",")[0]) == (20, "Can't use 'local' database through mongos")


def test_the_profiler_records_operations_with_their_comment(replset_client):
    db = replset_client.cap_profile
    replset_client.drop_database(db.name)
    assert db.command("profile", 2)["was"] == 0
    db.c.insert_one({"_id": 1})
    list(db.c.find({"_id": 1}, comment="find me"))
    db.c.update_one({"_id": 1}, {"$set": {"x": 1}})
    assert db.command("profile", -1)["was"] == 2
    db.command("profile", 0)
    [info] = db.list_collections(filter={"name": "system.profile"})
    assert info["options"] == {"capped": True, "size": 1048576}
    entries = list(db["system.profile"].find({"ns": f"{db.name}.c"}))
    assert [e["op"] for e in entries] == ["insert", "query", "update"]
    query = entries[1]
    assert query["command"]["comment"] == "find me" and query["command"]["filter"] == {"_id": 1}
    assert query["nreturned"] == 1 and "_id" not in query and isinstance(query["millis"], int)
    assert entries[2]["nModified"] == 1
    assert db["system.profile"].find_one({"command.comment": "find me"})["op"] == "query"


def test_mongos_only_keeps_the_logging_settings(sharded_client):
    assert sharded_client.cap_profile.command("profile", -1)["was"] == 0
    with pytest.raises(OperationFailure) as e:
        sharded_client.cap_profile.command("profile", 2)
    assert e.value.code == 2 and "Profiling is not permitted on mongoS" in str(e.value)


def test_a_capped_collection_moved_by_move_primary_keeps_its_order_and_limits(sharded_client):
    """movePrimary clones a capped collection in its natural order, and the new primary shard keeps
    evicting the oldest documents (it once kept none of the clone's record ids: nothing was evicted)."""
    client = sharded_client
    client.drop_database("cap_moved")
    client.admin.command("enableSharding", "cap_moved", primaryShard="shard00")
    db = client.cap_moved
    db.create_collection("c", capped=True, size=4096, max=3)
    for i in (5, 1, 4):  # natural order is insertion order, not _id order
        db.c.insert_one({"_id": i})
    client.admin.command("movePrimary", "cap_moved", to="shard01")
    assert [d["_id"] for d in db.c.find()] == [5, 1, 4]
    db.c.insert_one({"_id": 2})
    assert [d["_id"] for d in db.c.find()] == [1, 4, 2]
    client.drop_database("cap_moved")


@pytest.mark.parametrize("capped", [True, False])
def test_a_natural_sort_scans_in_its_direction(db, capped):
    """`sort({$natural: -1})` is a backward collection scan (the usual "last N entries" of a capped log);
    a hint wins over it: an index hint keeps the index's order, a $natural hint its own direction."""
    c = db.create_collection("nat", capped=True, size=100_000) if capped else db.nat
    for i in (5, 1, 4, 2):  # natural order is insertion order
        c.insert_one({"_id": i, "k": 10 - i})
    assert [d["_id"] for d in c.find().sort("$natural", -1)] == [2, 4, 1, 5]
    assert [d["_id"] for d in c.find().sort("$natural", 1)] == [5, 1, 4, 2]
    assert [d["_id"] for d in c.find({"_id": {"$gt": 1}}).sort("$natural", -1).limit(2)] == [2, 4]
    plan = c.find().sort("$natural", -1).explain()["queryPlanner"]["winningPlan"]
    plan = plan["shards"][0]["winningPlan"] if "shards" in plan else plan
    assert plan["stage"] == "COLLSCAN" and plan["direction"] == "backward"
    assert [d["_id"] for d in c.find().sort("$natural", -1).hint([("$natural", 1)])] == [5, 1, 4, 2]
    assert [d["_id"] for d in c.find().sort("$natural", -1).hint([("_id", 1)])] == [1, 2, 4, 5]
