"""Issue 2's "done when", as a new user would try it with pymongo, and issue 4's replica-set watch()."""

from __future__ import annotations

import time

import pymongo
import pytest
from bson import Timestamp

from mongosim import Cluster
from mongosim.oplog.resume_token import decode_resume_token
from tests.scenarios.conftest import read, read_quiet

REGIONS = ["eu", "us", "ap", "sa"]


def test_ten_thousand_documents_over_three_shards(client, cluster):
    client.admin.command("enableSharding", "shop")
    client.admin.command("shardCollection", "shop.orders", key={"region": 1, "_id": 1})
    for middle in ({"region": "eu", "_id": 0}, {"region": "sa", "_id": 0}):
        client.admin.command("split", "shop.orders", middle=middle)
    client.admin.command("moveChunk", "shop.orders", find={"region": "eu", "_id": 0}, to="shard01")
    client.admin.command("moveChunk", "shop.orders", find={"region": "us", "_id": 0}, to="shard02")
    orders = client.shop.orders
    orders.insert_many([{"_id": i, "region": REGIONS[i % 4], "total": i} for i in range(10_000)])
    assert orders.count_documents({}) == 10_000
    assert orders.find_one({"_id": 4321, "region": "us"})["total"] == 4321
    assert len(list(orders.find({"region": "eu"}).sort("_id", -1).limit(5))) == 5
    assert orders.update_many({"region": "ap"}, {"$inc": {"total": 1}}).modified_count == 2500
    assert orders.delete_many({"total": {"$lt": 100}}).deleted_count == 100
    chunks = list(client.config.chunks.find({}, {"min": 1, "shard": 1}))
    assert {c["shard"] for c in chunks} == {"shard00", "shard01", "shard02"}
    per_shard = {n: len(node.catalog.collection("shop", "orders").docs)
                 for n, node in cluster.core.shards.items() if node.catalog.collection("shop", "orders")}
    assert sum(per_shard.values()) == 10_000 - 100 and len([v for v in per_shard.values() if v]) == 3
    # moveChunk moves documents
    before = per_shard["shard02"]
    client.admin.command("moveChunk", "shop.orders", find={"region": "us", "_id": 0}, to="shard00")
    assert len(cluster.core.nodes["shard02"].catalog.collection("shop", "orders").docs) < before
    assert orders.count_documents({}) == 10_000 - 100


@pytest.fixture(scope="module")
def replset():
    with Cluster(port=0, topology="replset", noop_interval=0.2) as c:
        yield c


def test_replset_watch_levels_and_resume(replset):
    client = pymongo.MongoClient(replset.uri, serverSelectionTimeoutMS=5000)
    client.admin.command("ping")  # discovery runs in the background until the first operation
    assert client.topology_description.topology_type_name == "ReplicaSetWithPrimary"
    coll = client.rs.c
    coll.insert_one({"_id": 0})
    with coll.watch(max_await_time_ms=100) as c_s, client.rs.watch(max_await_time_ms=100) as d_s, \
            client.watch(max_await_time_ms=100) as a_s:
        coll.insert_one({"_id": 1})
        client.rs.other.insert_one({"_id": 2})
        client.other.c.insert_one({"_id": 3})
        assert [e["documentKey"]["_id"] for e in read(c_s, 1)] == [1]
        assert [e["documentKey"]["_id"] for e in read(d_s, 2)] == [1, 2]
        evs = read(a_s, 3)
        assert [e["documentKey"]["_id"] for e in evs] == [1, 2, 3]
        for e in evs:
            data = decode_resume_token(e["_id"])
            assert data.cluster_time == e["clusterTime"] and data.event_identifier["documentKey"] == e["documentKey"]
    # resuming with any returned token yields exactly the rest
    for i, e in enumerate(evs):
        with client.watch(resume_after=e["_id"], max_await_time_ms=100) as again:
            rest = read(again, len(evs) - i - 1)
            assert [x["_id"] for x in rest] == [x["_id"] for x in evs[i + 1:]]
    # startAtOperationTime
    with client.watch(start_at_operation_time=evs[1]["clusterTime"], max_await_time_ms=100) as s:
        assert [x["_id"] for x in read(s, 2)] == [x["_id"] for x in evs[1:]]


def test_replset_resume_token_advances_while_idle(replset):
    client = pymongo.MongoClient(replset.uri, serverSelectionTimeoutMS=5000)
    with client.rs.c.watch(max_await_time_ms=100) as cs:
        cs.try_next()
        first = cs.resume_token
        seen = {first["_data"]}
        t0 = time.time()
        while len(seen) < 3 and time.time() - t0 < 5:
            assert cs.try_next() is None
            seen.add(cs.resume_token["_data"])
        assert len(seen) >= 3, "the periodic noop should move the postBatchResumeToken"
        assert sorted(seen)[0] == first["_data"]
