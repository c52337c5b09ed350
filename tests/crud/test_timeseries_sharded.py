"""Sharded time-series collections through mongos (jstests/sharding/timeseries_*.js): the buckets
collection sharded on the translated key, config.collections' timeseriesFields, writes targeted by
the bucket they make, reads merged from every shard, indexes and drops on every shard."""

from __future__ import annotations

import datetime

import pytest
from bson import MinKey
from pymongo.errors import OperationFailure

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


def test_bulk_write_on_a_sharded_time_series_collection_is_not_implemented(db, sharded_client):
    from pymongo import InsertOne
    from pymongo.errors import ClientBulkWriteException

    sharded_client.admin.command("shardCollection", f"{db.name}.ts", key={"hostId": 1}, timeseries=TS)
    with pytest.raises(ClientBulkWriteException) as e:  # (a mongosim limit, README: the commands work)
        sharded_client.bulk_write([InsertOne({"time": T0, "hostId": 1}, namespace=f"{db.name}.ts")])
    assert e.value.error.code == 238 and "sharded time-series" in str(e.value.error)
    db.ts.insert_one({"time": T0, "hostId": 1})
    assert db.ts.count_documents({}) == 1


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
