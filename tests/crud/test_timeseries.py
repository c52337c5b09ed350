"""Time-series and clustered collections through pymongo, in both topologies."""

from __future__ import annotations

import datetime

import pytest
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

T0 = datetime.datetime(2019, 3, 18, 22, 53, 50)


@pytest.fixture
def db(client, request):
    db = client[f"ts_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    return db


def _at(seconds: int) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def test_create_lists_a_timeseries_view_and_its_buckets_collection(db):
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "meta", "granularity": "minutes"},
                         expireAfterSeconds=604800)
    infos = {i["name"]: i for i in db.list_collections()}
    assert infos["w"]["type"] == "timeseries" and infos["w"]["info"] == {"readOnly": False}
    assert infos["w"]["options"] == {"timeseries": {"timeField": "time", "metaField": "meta", "granularity": "minutes",
                                                    "bucketMaxSpanSeconds": 86400}, "expireAfterSeconds": 604800}
    buckets = infos["system.buckets.w"]
    assert buckets["type"] == "collection" and buckets["options"]["clusteredIndex"] is True
    assert buckets["options"]["timeseries"] == infos["w"]["options"]["timeseries"] and "idIndex" not in buckets
    db.create_collection("custom", timeseries={"timeField": "t", "bucketMaxSpanSeconds": 3600,
                                               "bucketRoundingSeconds": 3600})
    [custom] = db.list_collections(filter={"name": "custom"})
    assert custom["options"]["timeseries"] == {"timeField": "t", "bucketRoundingSeconds": 3600,
                                               "bucketMaxSpanSeconds": 3600}


def test_measurements_keep_duplicate_ids_and_read_back_through_the_view(db):
    db.create_collection("w", timeseries={"timeField": "time", "metaField": "meta"})
    db.w.insert_many([{"_id": 1, "time": _at(0), "meta": {"s": 1}, "x": 5},
                      {"_id": 1, "time": _at(1), "meta": {"s": 1}, "x": 6},
                      {"_id": 2, "time": _at(2), "meta": {"s": 2}, "x": 7}])
    docs = list(db.w.find({}, sort=[("time", 1)]))
    assert docs == [{"time": _at(0), "meta": {"s": 1}, "_id": 1, "x": 5},
                    {"time": _at(1), "meta": {"s": 1}, "_id": 1, "x": 6},
                    {"time": _at(2), "meta": {"s": 2}, "_id": 2, "x": 7}]
    assert list(docs[0]) == ["time", "meta", "_id", "x"]  # the time field first, then the meta field
    assert db.w.count_documents({"meta.s": 1}) == 2
    assert list(db.w.aggregate([{"$group": {"_id": "$meta.s", "n": {"$sum": "$x"}}}, {"$sort": {"_id": 1}}])) == \
        [{"_id": 1, "n": 11}, {"_id": 2, "n": 7}]
    buckets = list(db["system.buckets.w"].find())
    assert len(buckets) == 2  # one per meta value
    first = buckets[0]
    assert first["control"] == {"version": 1, "min": {"_id": 1, "time": datetime.datetime(2019, 3, 18, 22, 53), "x": 5},
                                "max": {"_id": 1, "time": _at(1), "x": 6}}
    assert first["meta"] == {"s": 1} and first["data"]["x"] == {"0": 5, "1": 6}


def test_a_measurement_outside_the_bucket_span_starts_a_new_bucket(db):
    db.create_collection("w", timeseries={"timeField": "time"})  # seconds: one-hour buckets
    db.w.insert_many([{"time": _at(0)}, {"time": _at(10)}, {"time": _at(4000)}])
    assert db["system.buckets.w"].count_documents({}) == 2 and db.w.count_documents({}) == 3


def test_the_oplog_shows_a_bucket_insert_then_updates(replset_client):
    db = replset_client.ts_oplog
    replset_client.drop_database(db.name)
    db.create_collection("w", timeseries={"timeField": "time"})
    db.w.insert_many([{"_id": 1, "time": _at(0)}, {"_id": 2, "time": _at(1)}])
    entries = list(replset_client.local["oplog.rs"].find({"ns": f"{db.name}.system.buckets.w"}))
    assert [e["op"] for e in entries] == ["i", "u"]
    assert entries[1]["o"]["$v"] == 2 and entries[1]["o2"] == {"_id": entries[0]["o"]["_id"]}


def test_timeseries_errors(db):
    with pytest.raises(OperationFailure) as e:
        db.create_collection("w", timeseries={"timeField": "time", "metaField": "time"})
    assert e.value.code == 72
    with pytest.raises(OperationFailure) as e:
        db.create_collection("w", timeseries={"timeField": "time"}, capped=True, size=1000)
    assert e.value.code == 72 and "'timeseries' is not allowed with 'capped'" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.create_collection("w", timeseries={"timeField": "time", "granularity": "days"})
    assert e.value.code == 2
    db.create_collection("w", timeseries={"timeField": "time"})
    with pytest.raises((WriteError, BulkWriteError)) as e:
        db.w.insert_one({"time": "yesterday"})
    assert e.value.code == 2 and "'time' must be present and contain a valid BSON UTC datetime value" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        db.w.watch()
    assert e.value.code == 166


def test_drop_removes_the_view_and_the_buckets(db):
    db.create_collection("w", timeseries={"timeField": "time"})
    db.w.insert_one({"time": _at(0)})
    db.w.drop()
    assert not [n for n in db.list_collection_names() if n.endswith("w")]


def test_clustered_collection_lists_its_clustered_index(db):
    db.create_collection("c", clusteredIndex={"key": {"_id": 1}, "unique": True, "name": "test index"})
    [info] = db.list_collections(filter={"name": "c"})
    assert info["options"] == {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "test index", "unique": True}}
    assert "idIndex" not in info
    assert [dict(i) for i in db.c.list_indexes()] == [
        {"v": 2, "key": {"_id": 1}, "name": "test index", "unique": True, "clustered": True}]
    db.c.insert_many([{"_id": 2}, {"_id": 1}])
    with pytest.raises((WriteError, BulkWriteError)):
        db.c.insert_one({"_id": 1})
    db.create_collection("ttl", clusteredIndex={"key": {"_id": 1}, "unique": True}, expireAfterSeconds=60)
    [info] = db.list_collections(filter={"name": "ttl"})
    assert info["options"] == {"clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_", "unique": True},
                               "expireAfterSeconds": 60}


def test_clustered_collection_errors(db):
    with pytest.raises(OperationFailure) as e:
        db.create_collection("c", clusteredIndex={"key": {"_id": 1}, "unique": False})
    assert e.value.code == 5979700
    with pytest.raises(OperationFailure) as e:
        db.create_collection("c", clusteredIndex={"key": {"a": 1}, "unique": True})
    assert (e.value.code, e.value.details["codeName"]) == (197, "InvalidIndexSpecificationOption")
    with pytest.raises(OperationFailure) as e:
        db.create_collection("c", expireAfterSeconds=10)
    assert e.value.code == 72


def _ttl_pass(client) -> int:
    from mongosim.shardsim.ttl_monitor import run_once

    cluster = client.mongosim_cluster
    return sum(cluster.call(run_once, node) for node in cluster.core.nodes.values())


def test_the_ttl_monitor_expires_clustered_documents_buckets_and_ttl_indexes(db, client):
    old, new = datetime.datetime(2000, 1, 1), datetime.datetime.utcnow()
    db.create_collection("c", clusteredIndex={"key": {"_id": 1}, "unique": True}, expireAfterSeconds=3600)
    db.c.insert_many([{"_id": old}, {"_id": new}, {"_id": 5}])
    db.create_collection("w", timeseries={"timeField": "time"}, expireAfterSeconds=3600)
    db.w.insert_many([{"time": old}, {"time": new}])
    db.plain.create_index("at", expireAfterSeconds=60)
    db.plain.insert_many([{"_id": 1, "at": old}, {"_id": 2, "at": [new, old]}, {"_id": 3, "at": new}, {"_id": 4}])
    with db.watch() as stream:
        assert _ttl_pass(client) == 4
        deleted = sorted(str(stream.next()["documentKey"]["_id"]) for _ in range(3))  # (buckets are system.*)
    assert deleted == sorted([str(old), "1", "2"])
    assert [d["_id"] for d in db.c.find()] == [new.replace(microsecond=new.microsecond // 1000 * 1000), 5]
    assert [d["time"].year for d in db.w.find()] == [new.year]
    assert sorted(d["_id"] for d in db.plain.find()) == [3, 4]
