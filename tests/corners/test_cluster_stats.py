"""$collStats, $shardedDataDistribution and balancerCollectionStatus, through pymongo."""

from __future__ import annotations

import pymongo
import pytest

from bson import BSON


def _sharded(client):
    client.admin.command("enableSharding", "st", primaryShard="shard00")
    client.admin.command("shardCollection", "st.c", key={"k": 1})
    docs = [{"_id": i, "k": i, "pad": "x" * i} for i in range(20)]
    client.st.c.insert_many(docs)
    client.admin.command("split", "st.c", middle={"k": 15})
    client.admin.command("moveChunk", "st.c", find={"k": 15}, to="shard01")
    return docs


@pytest.mark.mongosim(topology="sharded")
def test_coll_stats_through_the_router_one_document_per_shard(mongosim_client):
    docs = _sharded(mongosim_client)
    out = list(mongosim_client.st.c.aggregate([{"$collStats": {"storageStats": {}, "count": {}}},
                                                {"$project": {"shard": 1, "host": 1, "count": 1,
                                                              "storageStats": 1}}]))
    assert [d["shard"] for d in out] == ["shard00", "shard01"]
    assert [d["count"] for d in out] == [15, 5]
    sizes = [sum(len(BSON.encode(d)) for d in docs[:15]), sum(len(BSON.encode(d)) for d in docs[15:])]
    assert [d["storageStats"]["size"] for d in out] == sizes
    first = out[0]["storageStats"]
    # storage_stats.cpp's order: _appendRecordStats (size, count, avgObjSize, numOrphanDocs), _appendRecordStore,
    # _appendInProgressIndexesStats (... totalIndexSize, indexSizes), _appendTotalSize (totalSize, scaleFactor)
    assert list(first)[:4] == ["size", "count", "avgObjSize", "numOrphanDocs"] and first["numOrphanDocs"] == 0
    assert list(first)[-4:] == ["totalIndexSize", "indexSizes", "totalSize", "scaleFactor"]
    assert first["avgObjSize"] == sizes[0] // 15 and first["nindexes"] == 2 and first["scaleFactor"] == 1
    scaled = list(mongosim_client.st.c.aggregate([{"$collStats": {"storageStats": {"scale": 1024}}}]))
    assert scaled[0]["storageStats"]["scaleFactor"] == 1024 and scaled[0]["storageStats"]["size"] == sizes[0] // 1024


@pytest.mark.mongosim(topology="sharded")
def test_sharded_data_distribution(mongosim_client):
    docs = _sharded(mongosim_client)
    mongosim_client.st.unsharded.insert_one({"_id": 1})
    out = [d for d in mongosim_client.admin.aggregate([{"$shardedDataDistribution": {}}]) if d["ns"] == "st.c"]
    (dist,) = out
    assert [(s["shardName"], s["numOwnedDocuments"], s["numOrphanedDocs"]) for s in dist["shards"]] == \
        [("shard00", 15, 0), ("shard01", 5, 0)]
    avg = sum(len(BSON.encode(d)) for d in docs[:15]) // 15
    assert dist["shards"][0]["ownedSizeBytes"] == 15 * avg
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        list(mongosim_client.st.aggregate([{"$shardedDataDistribution": {}}]))
    assert ei.value.code == 73


@pytest.mark.mongosim(topology="replset")
def test_coll_stats_on_a_replica_set(mongosim_client):
    mongosim_client.rs.c.insert_many([{"_id": i} for i in range(3)])
    (doc,) = mongosim_client.rs.c.aggregate([{"$collStats": {"count": {}, "latencyStats": {}}}])
    assert list(doc)[:4] == ["ns", "host", "localTime", "latencyStats"] and doc["count"] == 3
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        list(mongosim_client.rs.missing.aggregate([{"$collStats": {"storageStats": {}}}]))
    assert ei.value.code == 26
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        list(mongosim_client.rs.c.aggregate([{"$match": {}}, {"$collStats": {}}]))
    assert ei.value.code == 40602


@pytest.mark.mongosim(isolated=True, shards=2)
def test_balancer_collection_status(mongosim_client):
    c = mongosim_client
    _sharded(c)
    status = c.admin.command("balancerCollectionStatus", "st.c")
    assert status["balancerCompliant"] is True and status["chunkSize"] == 128.0
    c.st.plain.insert_one({"_id": 1})
    with pytest.raises(pymongo.errors.OperationFailure) as ei:
        c.admin.command("balancerCollectionStatus", "st.plain")
    assert ei.value.code == 118 and "unsharded or undefined" in str(ei.value)
    c.admin.command("balancerStop")
    c.admin.command("movePrimary", "st", to="shard01")
    c.admin.command("removeShard", "shard00")  # draining: its chunk waits for the (stopped) balancer
    status = c.admin.command("balancerCollectionStatus", "st.c")
    assert status["balancerCompliant"] is False and status["firstComplianceViolation"] == "draining"
