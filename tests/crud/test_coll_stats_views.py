"""$collStats on a view and on a time-series collection, through pymongo in both topologies.

src/mongo/db/commands/run_aggregate.cpp: a pipeline that starts with $collStats is not expanded over a
view (the stage reads the view's own namespace: no collection there, so storageStats and count are
NamespaceNotFound while latencyStats answers); on a time-series collection it reads the buckets
collection, and storageStats has the `timeseries` section (storage_stats.cpp) in place of `count` and
`avgObjSize`.  Through mongos a sharded time-series collection answers from its buckets' chunk owners.
"""

from __future__ import annotations

import datetime

import pytest
from bson import BSON
from pymongo.errors import OperationFailure

T0 = datetime.datetime(2024, 1, 1)


@pytest.fixture
def db(client):
    d = client.csv
    d.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    d.ts.insert_many([{"t": T0, "m": i % 2, "v": i} for i in range(6)])  # two buckets: one per meta value
    d.c.insert_many([{"_id": i} for i in range(3)])
    d.create_collection("v", viewOn="c", pipeline=[{"$match": {"_id": {"$gt": 0}}}])
    return d


def test_coll_stats_on_a_time_series_collection_reads_its_buckets(client, db):
    [doc] = list(db.ts.aggregate([{"$collStats": {"storageStats": {}, "count": {}}}]))
    assert doc["ns"] == "csv.ts" and doc["count"] == 2
    storage = doc["storageStats"]
    assert "count" not in storage and "avgObjSize" not in storage
    section = storage["timeseries"]
    assert section["bucketsNs"] == "csv.system.buckets.ts"
    assert section["bucketCount"] == 2
    buckets = list(db["system.buckets.ts"].find())
    size = sum(len(BSON.encode(b)) for b in buckets)
    assert storage["size"] == size and section["avgBucketSize"] == size // 2
    assert list(storage)[:2] == ["size", "timeseries"]
    assert section["numBucketsClosedDueToCount"] == 0 and "numDuplicateBucketsReopened" in section
    assert storage["capped"] is False


def test_the_rest_of_the_pipeline_runs_on_the_time_series_stats(db):
    out = list(db.ts.aggregate([{"$collStats": {"storageStats": {"scale": 1}}},
                                {"$project": {"_id": 0, "n": "$storageStats.timeseries.bucketCount"}}]))
    assert out == [{"n": 2}]


def test_coll_stats_on_a_view_is_not_expanded(client, db):
    [doc] = list(db.v.aggregate([{"$collStats": {"latencyStats": {}}}]))
    assert doc["ns"] == "csv.v" and set(doc["latencyStats"]) == {"reads", "writes", "commands", "transactions"}
    for option in ("storageStats", "count"):
        with pytest.raises(OperationFailure) as e:
            list(db.v.aggregate([{"$collStats": {option: {}}}]))
        assert e.value.code == 26
        assert str(e.value).startswith(f"Unable to retrieve {option} in $collStats stage :: caused by :: "
                                       "Collection [csv.v] not found.")


def test_coll_stats_later_in_a_view_pipeline_is_still_refused(db):
    with pytest.raises(OperationFailure) as e:
        list(db.v.aggregate([{"$match": {}}, {"$collStats": {}}]))
    assert e.value.code == 40602


def test_reads_on_the_view_still_see_its_pipeline(db):
    assert sorted(d["_id"] for d in db.v.aggregate([])) == [1, 2]
    assert db.v.count_documents({}) == 2


def sharded_time_series(client, name: str):
    """`name`.ts sharded on its meta field: one bucket (m: 1) on shard00, two (m: 2, 3) on shard01; its db."""
    client.admin.command("shardCollection", f"{name}.ts", key={"m": 1}, timeseries={"timeField": "t", "metaField": "m"})
    client[name].ts.insert_many([{"t": T0, "m": m} for m in (1, 2, 3)])
    client.admin.command("split", f"{name}.system.buckets.ts", middle={"meta": 2})
    client.admin.command("moveChunk", f"{name}.system.buckets.ts", find={"meta": 2}, to="shard01")
    return client[name]


def test_a_sharded_time_series_collection_answers_from_its_buckets_shards(sharded_client):
    db = sharded_time_series(sharded_client, "csv_sharded")
    docs = list(db.ts.aggregate([{"$collStats": {"storageStats": {}}}]))
    assert [(d["ns"], d["shard"]) for d in docs] == [("csv_sharded.ts", "shard00"), ("csv_sharded.ts", "shard01")]
    assert [d["storageStats"]["timeseries"]["bucketCount"] for d in docs] == [1, 2]
    assert all(d["storageStats"]["timeseries"]["bucketsNs"] == "csv_sharded.system.buckets.ts" for d in docs)


def test_the_coll_stats_command_on_a_time_series_collection(client, db):
    stats = db.command("collStats", "ts")
    assert stats["ns"] == "csv.ts" and "count" not in stats
    section = stats["timeseries"]
    assert section["bucketsNs"] == "csv.system.buckets.ts" and section["bucketCount"] == 2
    assert section["avgBucketSize"] == stats["size"] // 2
    if client.topology_name == "sharded":  # (mongos sums the shards' sections: the counters in name order)
        assert stats["sharded"] is False and list(section)[1:] == sorted(list(section)[1:])
    with pytest.raises(OperationFailure) as e:
        db.command("collStats", "v")
    assert e.value.code == 166


def test_the_coll_stats_command_sums_a_sharded_time_series_collection(sharded_client):
    db = sharded_time_series(sharded_client, "csv_sharded2")
    stats = db.command("collStats", "ts")
    assert stats["sharded"] is True and sorted(stats["shards"]) == ["shard00", "shard01"]
    section = stats["timeseries"]
    assert section["bucketCount"] == 3 == sum(s["timeseries"]["bucketCount"] for s in stats["shards"].values())
    parts = [s["timeseries"] for s in stats["shards"].values()]
    assert section["avgBucketSize"] == sum(p["avgBucketSize"] * p["bucketCount"] for p in parts) // 3
