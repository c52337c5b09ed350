"""Sharded time-series collections through mongos (jstests/sharding/timeseries_*.js): the buckets
collection sharded on the translated key, config.collections' timeseriesFields, writes targeted by
the bucket they make, reads merged from every shard, indexes and drops on every shard."""

from __future__ import annotations

import datetime

import pytest
from bson import MinKey
from pymongo.errors import OperationFailure

from tests.driver_version import RAW_BULK_WRITE

T0 = datetime.datetime(2024, 1, 1)
TS = {"timeField": "time", "metaField": "hostId"}


@pytest.fixture
def db(sharded_client, request):
    name = f"tss_{request.node.name[-20:]}"
    sharded_client.drop_database(name)
    sharded_client.admin.command("enableSharding", name, primaryShard="shard00")
    return sharded_client[name]


def _buckets_per_shard(client, db) -> dict[str, int]:
    cluster = client.mongosim_cluster
    out = {}
    for name, node in sorted(cluster.core.nodes.items()):
        coll = node.catalog.collection(db.name, "system.buckets.ts")
        if coll is not None and name.startswith("shard"):
            out[name] = len(coll)
    return out


def _split_and_move(client, db, middle: dict) -> None:
    ns = f"{db.name}.system.buckets.ts"
    client.admin.command("split", ns, middle=middle)
    client.admin.command("moveChunk", ns, find=middle, to="shard01")


def test_shard_collection_creates_and_shards_the_buckets(db, sharded_client):
    reply = sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId": 1}, timeseries=TS)
    assert reply["collectionsharded"] == f"{db.name}.ts"
    entry = sharded_client.config.collections.find_one({"_id": f"{db.name}.system.buckets.ts"})
    assert entry["key"] == {"meta": 1}
    assert entry["timeseriesFields"] == {"timeField": "time", "metaField": "hostId", "granularity": "seconds",
                                         "bucketMaxSpanSeconds": 3600}
    assert sharded_client.config.collections.find_one({"_id": f"{db.name}.ts"}) is None
    [info] = db.list_collections(filter={"name": "ts"})
    assert info["type"] == "timeseries" and info["options"]["timeseries"]["metaField"] == "hostId"
    # the default {hostId: 1, time: 1} index backs the key: no other index
    assert [i["key"] for i in db.ts.list_indexes()] == [{"hostId": 1, "time": 1}]


@pytest.mark.parametrize("key, timeseries, code", [
    ({"_id": 1}, TS, 5914001),
    ({"a": 1}, TS, 5914001),
    ({"hostId": 1, "a": 1}, TS, 5914001),
    ({"time": 1, "hostId": 1}, TS, 5914000),
    ({"time": "hashed"}, TS, 2),
    ({"hostId": 1}, {"timeField": "time"}, 5914001),
])
def test_refused_shard_keys(db, sharded_client, key, timeseries, code):
    with pytest.raises(OperationFailure) as e:
        sharded_client.admin.command("shardCollection", f"{db.name}.ts", key=key, timeseries=timeseries)
    assert e.value.code == code


def test_refusals_of_existing_collections_and_buckets(db, sharded_client):
    db.create_collection("ts", timeseries=TS)
    with pytest.raises(OperationFailure) as e:
        sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId": 1},
                                     timeseries={"timeField": "time"})
    assert e.value.code == 72
    with pytest.raises(OperationFailure) as e:
        sharded_client.admin.command("shardCollection", f"{db.name}.system.buckets.ts", key={"meta": 1})
    assert e.value.code == 5731501
    # an existing collection without `timeseries` in the command is sharded as what it is
    sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId.a": 1})
    entry = sharded_client.config.collections.find_one({"_id": f"{db.name}.system.buckets.ts"})
    assert entry["key"] == {"meta.a": 1}
    assert {"hostId.a": 1} in [i["key"] for i in db.ts.list_indexes()]


def test_writes_go_where_their_buckets_live_and_reads_merge(db, sharded_client):
    sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId": 1}, timeseries=TS)
    _split_and_move(sharded_client, db, {"meta": 10})
    docs = [{"_id": i, "time": T0 + datetime.timedelta(minutes=i), "hostId": i % 20, "x": i} for i in range(60)]
    db.ts.insert_many(docs)
    per_shard = _buckets_per_shard(sharded_client, db)
    assert per_shard == {"shard00": 10, "shard01": 10}
    assert sorted(d["_id"] for d in db.ts.find()) == list(range(60))
    assert db.ts.count_documents({"hostId": {"$gte": 10}}) == 30
    assert list(db.ts.aggregate([{"$group": {"_id": None, "n": {"$sum": "$x"}}}]))[0]["n"] == sum(range(60))
    r = db.ts.update_many({"x": {"$gte": 50}}, {"$set": {"big": True}})
    assert (r.matched_count, r.modified_count) == (10, 10)
    assert db.ts.count_documents({"big": True}) == 10
    r = db.ts.update_one({"hostId": 3, "x": 3}, {"$inc": {"x": 1000}})
    assert r.modified_count == 1 and db.ts.find_one({"_id": 3})["x"] == 1003
    assert db.ts.delete_many({"hostId": {"$in": [1, 11]}}).deleted_count == 6
    assert db.ts.delete_one({"x": 0}).deleted_count == 1
    assert db.ts.count_documents({}) == 53
    r = db.ts.update_one({"hostId": 15, "time": T0}, {"$set": {"new": 1}}, upsert=True)
    assert r.upserted_id is not None and db.ts.count_documents({"new": 1}) == 1


def test_a_time_shard_key_routes_by_the_rounded_time(db, sharded_client):
    sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"time": 1},
                                 timeseries={"timeField": "time"})
    entry = sharded_client.config.collections.find_one({"_id": f"{db.name}.system.buckets.ts"})
    assert entry["key"] == {"control.min.time": 1}
    assert [i["key"] for i in db.ts.list_indexes()] == [{"time": 1}]
    assert [i["key"] for i in db["system.buckets.ts"].list_indexes()] == [
        {"control.min.time": 1, "control.max.time": 1}]
    _split_and_move(sharded_client, db, {"control.min.time": T0 + datetime.timedelta(hours=2)})
    docs = [{"time": T0 + datetime.timedelta(minutes=10 * i), "v": i} for i in range(24)]  # four hours
    db.ts.insert_many(docs)
    per_shard = _buckets_per_shard(sharded_client, db)
    assert per_shard["shard00"] >= 1 and per_shard["shard01"] >= 1
    assert sorted(d["v"] for d in db.ts.find({"time": {"$gte": T0 + datetime.timedelta(hours=2)}})) == \
        list(range(12, 24))


def test_meta_and_time_key_and_indexes_on_every_shard(db, sharded_client):
    sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId": 1, "time": 1}, timeseries=TS)
    entry = sharded_client.config.collections.find_one({"_id": f"{db.name}.system.buckets.ts"})
    assert entry["key"] == {"meta": 1, "control.min.time": 1}
    _split_and_move(sharded_client, db, {"meta": 10, "control.min.time": MinKey()})
    db.ts.insert_many([{"time": T0, "hostId": i, "x": i} for i in range(20)])
    db.ts.create_index([("x", 1)])
    cluster = sharded_client.mongosim_cluster
    for shard in ("shard00", "shard01"):
        coll = cluster.core.nodes[shard].catalog.collection(db.name, "system.buckets.ts")
        assert "x_1" in [s["name"] for s in coll.indexes], shard
    assert sorted(i["name"] for i in db.ts.list_indexes()) == ["hostId_1_time_1", "x_1"]
    assert sorted(d["x"] for d in db.ts.find({"x": {"$gte": 15}})) == [15, 16, 17, 18, 19]
    db.ts.drop_index("x_1")
    assert sorted(i["name"] for i in db.ts.list_indexes()) == ["hostId_1_time_1"]
    db.ts.drop()
    assert sharded_client.config.collections.find_one({"_id": f"{db.name}.system.buckets.ts"}) is None
    for shard in ("shard00", "shard01"):
        assert cluster.core.nodes[shard].catalog.collection(db.name, "system.buckets.ts") is None


def test_an_update_of_the_meta_shard_key_moves_the_measurement(db, sharded_client):
    sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId": 1}, timeseries=TS)
    _split_and_move(sharded_client, db, {"meta": 10})
    db.ts.insert_many([{"_id": i, "time": T0, "hostId": i, "x": i} for i in (1, 2, 12)])
    r = db.ts.update_one({"hostId": 1, "_id": 1}, {"$set": {"hostId": 15}})  # (retryable: pymongo's default)
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert _buckets_per_shard(sharded_client, db) == {"shard00": 1, "shard01": 2}
    assert db.ts.find_one({"_id": 1})["hostId"] == 15
    with sharded_client.start_session() as s, s.start_transaction():
        db.ts.update_one({"hostId": 2}, {"$set": {"hostId": 20}}, session=s)
    assert sorted(d["hostId"] for d in db.ts.find()) == [12, 15, 20]
    assert _buckets_per_shard(sharded_client, db) == {"shard00": 0, "shard01": 3}
    with pytest.raises(OperationFailure) as e:
        db.ts.update_many({"hostId": {"$gte": 10}}, {"$inc": {"hostId": 1}})
    assert e.value.code == 72 and "Multi-update operations are not allowed when updating the shard key" in str(e.value)
    db.ts.update_many({"hostId": {"$gte": 10}}, {"$inc": {"x": 1}})  # (other fields: fine)
    assert sorted(d["x"] for d in db.ts.find()) == [2, 3, 13]


# -- bulkWrite (bulk_write_exec.cpp: nsInfo names the buckets, isTimeseriesNamespace) ----------------
def _two_sharded(client, db, names=("ts", "twin")) -> None:
    """Time-series collections sharded on {hostId: 1}, their buckets with meta >= 10 on shard01."""
    for name in names:
        client.admin.command("shardCollection", f"{db.name}.{name}", key={"hostId": 1}, timeseries=TS)
        ns = f"{db.name}.system.buckets.{name}"
        client.admin.command("split", ns, middle={"meta": 10})
        client.admin.command("moveChunk", ns, find={"meta": 10}, to="shard01")


def _measurements(coll) -> list[dict]:
    return sorted(coll.find(), key=lambda d: d["_id"])


def _buckets_of(client, db, name) -> dict[str, int]:
    return {shard: len(client.mongosim_cluster.core.nodes[shard].catalog.collection(db.name, f"system.buckets.{name}"))
            for shard in ("shard00", "shard01")}


def test_bulk_write_on_a_sharded_time_series_collection_matches_the_commands(db, sharded_client):
    from pymongo import DeleteOne, InsertOne, UpdateMany, UpdateOne

    _two_sharded(sharded_client, db)
    docs = [{"_id": i, "time": T0 + datetime.timedelta(minutes=i), "hostId": i % 20, "x": i} for i in range(40)]
    ops = [InsertOne(d, namespace=f"{db.name}.ts") for d in docs[:30]]
    ops.append(InsertOne({"_id": "p1", "v": 1}, namespace=f"{db.name}.plain"))
    ops += [InsertOne(d, namespace=f"{db.name}.ts") for d in docs[30:]]
    ops += [UpdateMany({"x": {"$gte": 25}}, {"$set": {"big": True}}, namespace=f"{db.name}.ts"),
            UpdateOne({"_id": "p1"}, {"$inc": {"v": 1}}, namespace=f"{db.name}.plain"),
            UpdateMany({"hostId": {"$in": [4, 14]}}, {"$inc": {"x": 100}}, namespace=f"{db.name}.ts"),
            DeleteOne({"hostId": 3}, namespace=f"{db.name}.ts"),
            DeleteOne({"hostId": 13, "x": {"$gt": 20}}, namespace=f"{db.name}.ts"),
            UpdateMany({"hostId": 99}, {"$set": {"none": 1}}, namespace=f"{db.name}.ts")]
    r = sharded_client.bulk_write(ops, verbose_results=True)
    # the same through the commands, on an identical collection
    twin = db.twin
    inserted = twin.insert_many(docs).inserted_ids
    u1 = twin.update_many({"x": {"$gte": 25}}, {"$set": {"big": True}})
    u2 = twin.update_many({"hostId": {"$in": [4, 14]}}, {"$inc": {"x": 100}})
    d1 = twin.delete_one({"hostId": 3})
    d2 = twin.delete_one({"hostId": 13, "x": {"$gt": 20}})
    u3 = twin.update_many({"hostId": 99}, {"$set": {"none": 1}})
    assert r.inserted_count == len(inserted) + 1
    assert (r.matched_count, r.modified_count) == (u1.matched_count + u2.matched_count + 1,
                                                   u1.modified_count + u2.modified_count + 1)
    assert r.deleted_count == d1.deleted_count + d2.deleted_count == 2
    assert [(r.update_results[i].matched_count, r.update_results[i].modified_count) for i in (41, 43, 46)] == \
        [(u.matched_count, u.modified_count) for u in (u1, u2, u3)]
    assert [r.delete_results[i].deleted_count for i in (44, 45)] == [d1.deleted_count, d2.deleted_count]
    assert _measurements(db.ts) == _measurements(twin)
    assert list(db.plain.find()) == [{"_id": "p1", "v": 2}]
    per_shard = _buckets_of(sharded_client, db, "ts")
    assert per_shard["shard00"] > 0 and per_shard["shard01"] > 0
    assert per_shard == _buckets_of(sharded_client, db, "twin")
    # the shards hold only the buckets of their chunks
    for shard, metas in (("shard00", range(10)), ("shard01", range(10, 20))):
        coll = sharded_client.mongosim_cluster.core.nodes[shard].catalog.collection(db.name, "system.buckets.ts")
        assert {b["meta"] for b in coll.scan()} <= set(metas)


def test_a_shard_key_update_in_a_bulk_write_moves_the_measurement(db, sharded_client):
    from pymongo import InsertOne, UpdateOne

    _two_sharded(sharded_client, db, ("ts",))
    r = sharded_client.bulk_write([InsertOne({"_id": i, "time": T0, "hostId": i, "x": i}, namespace=f"{db.name}.ts")
                                   for i in (1, 2, 12)]
                                  + [UpdateOne({"hostId": 1, "_id": 1}, {"$set": {"hostId": 15}},
                                               namespace=f"{db.name}.ts")])  # (retryable: no multi op)
    assert (r.inserted_count, r.matched_count, r.modified_count) == (3, 1, 1)
    assert _buckets_of(sharded_client, db, "ts") == {"shard00": 1, "shard01": 2}
    assert db.ts.find_one({"_id": 1})["hostId"] == 15


@pytest.mark.parametrize("ordered", [True, False])
def test_a_bulk_write_error_on_a_sharded_time_series_collection(db, sharded_client, ordered):
    from pymongo import DeleteOne, InsertOne
    from pymongo.errors import BulkWriteError, ClientBulkWriteException

    _two_sharded(sharded_client, db)
    docs = [{"_id": 1, "time": T0, "hostId": 1}, {"_id": 2, "hostId": 11},  # (no time: its own error)
            {"_id": 3, "time": T0, "hostId": 12}]
    with pytest.raises(ClientBulkWriteException) as e:
        sharded_client.bulk_write([InsertOne(d, namespace=f"{db.name}.ts") for d in docs]
                                  + [InsertOne({"_id": 4}, namespace=f"{db.name}.plain"),
                                     DeleteOne({"hostId": 1}, namespace=f"{db.name}.ts")], ordered=ordered)
    with pytest.raises(BulkWriteError) as twin_error:
        db.twin.insert_many(docs, ordered=ordered)
    [error] = e.value.write_errors
    [twin] = twin_error.value.details["writeErrors"]
    assert (error["idx"], error["code"], error["errmsg"]) == (twin["index"], twin["code"], twin["errmsg"]) and \
        error["idx"] == 1 and "'time' must be present" in error["errmsg"]
    partial = e.value.partial_result
    if ordered:  # stopped at the error: nothing after it ran, on either shard or the other collection
        assert (partial.inserted_count, partial.deleted_count) == (1, 0)
        assert _measurements(db.ts) == [docs[0]] and db.plain.count_documents({}) == 0
        assert _measurements(db.twin) == [docs[0]]
    else:
        assert (partial.inserted_count, partial.deleted_count) == (3, 1)
        assert _measurements(db.ts) == [docs[2]] and db.plain.count_documents({}) == 1
        assert _measurements(db.twin) == [docs[0], docs[2]]


def test_a_retried_bulk_write_on_a_sharded_time_series_collection_is_applied_once(db, sharded_client):
    from pymongo import DeleteOne, InsertOne, UpdateOne

    _two_sharded(sharded_client, db, ("ts",))
    # the write runs, its reply carries a retryable error: pymongo sends it again, the shards answer from
    # their session tables
    wce = {"code": 91, "errmsg": "Replication is being shut down"}
    sharded_client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1},
                                  "data": {"failCommands": ["bulkWrite"], "errorLabels": ["RetryableWriteError"],
                                           "writeConcernError": wce}})
    try:
        r = sharded_client.bulk_write([InsertOne({"_id": i, "time": T0, "hostId": i}, namespace=f"{db.name}.ts")
                                       for i in (1, 2, 11, 12)]
                                      + [UpdateOne({"hostId": 11}, {"$inc": {"n": 1}}, namespace=f"{db.name}.ts"),
                                         DeleteOne({"hostId": 2}, namespace=f"{db.name}.ts"),
                                         InsertOne({"_id": 1}, namespace=f"{db.name}.plain")])
    finally:
        sharded_client.admin.command("configureFailPoint", "failCommand", mode="off")
    assert (r.inserted_count, r.modified_count, r.deleted_count) == (5, 1, 1)
    assert [(d["_id"], d.get("n")) for d in _measurements(db.ts)] == [(1, None), (11, 1), (12, None)]
    assert db.plain.count_documents({}) == 1


@RAW_BULK_WRITE
def test_a_bulk_write_sent_twice_with_one_txn_number_answers_as_retried(db, sharded_client):
    """The command itself, twice with one txnNumber: the second answers every statement as retried."""
    _two_sharded(sharded_client, db, ("ts",))
    sharded_client[db.name].ts.insert_many([{"_id": i, "time": T0, "hostId": i} for i in (1, 11, 12)])
    sharded_client[db.name].ts.update_one({"hostId": 11}, {"$inc": {"n": 1}})
    lsid = {"id": sharded_client.start_session().session_id["id"]}
    cmd = {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 20, "time": T0, "hostId": 5}},
                                   {"insert": 0, "document": {"_id": 21, "time": T0, "hostId": 15}},
                                   {"update": 0, "filter": {"hostId": 15}, "updateMods": {"$inc": {"n": 1}}},
                                   {"delete": 0, "filter": {"hostId": 12}}],
           "nsInfo": [{"ns": f"{db.name}.ts"}], "lsid": lsid, "txnNumber": 1}
    first = sharded_client.admin.command(cmd)
    again = sharded_client.admin.command(cmd)
    assert again["cursor"]["firstBatch"] == first["cursor"]["firstBatch"]
    assert (again["nInserted"], again["nModified"], again["nDeleted"]) == (2, 1, 1)
    assert sorted(again["retriedStmtIds"]) == [0, 1, 2, 3] and "retriedStmtIds" not in first
    assert [(d["_id"], d.get("n")) for d in _measurements(db.ts)] == [(1, None), (11, 1), (20, None), (21, 1)]


def test_a_database_stream_through_mongos_shows_the_buckets_only_with_system_events(db, sharded_client):
    sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId": 1}, timeseries=TS)
    _split_and_move(sharded_client, db, {"meta": 10})
    db.create_collection("other")
    with db.watch() as plain, db.watch([{"$match": {"operationType": {"$ne": "createIndexes"}}}],
                                       show_expanded_events=True) as expanded:
        events = db.aggregate([{"$changeStream": {"showSystemEvents": True}}])
        db.ts.insert_many([{"time": T0, "hostId": 1}, {"time": T0, "hostId": 11}])
        db.ts.delete_many({"hostId": 1})
        db.other.insert_one({"_id": "marker"})
        seen = [events.next() for _ in range(4)]
        assert sorted((e["operationType"], e["ns"]["coll"]) for e in seen[:2]) == [
            ("insert", "system.buckets.ts")] * 2
        assert [(e["operationType"], e["ns"]["coll"]) for e in seen[2:]] == [
            ("delete", "system.buckets.ts"), ("insert", "other")]
        assert {e["documentKey"]["meta"] for e in seen[:2]} == {1, 11}  # the buckets' shard key, then _id
        assert all(list(e["documentKey"]) == ["meta", "_id"] for e in seen[:3])
        assert plain.next()["documentKey"] == {"_id": "marker"}
        assert expanded.next()["documentKey"] == {"_id": "marker"}
