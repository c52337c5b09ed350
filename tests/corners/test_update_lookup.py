"""`fullDocument: "updateLookup"`: the lookup finds the document where it lives now, and
`matchCollectionUUIDForUpdateLookup` refuses another generation of the collection."""

from __future__ import annotations

import pytest
from bson import Timestamp

from tests.corners.conftest import BOTH, read


def raw_stream(coll, spec: dict, pipeline: list | None = None):
    """A change stream opened with a raw `$changeStream` spec (options pymongo's watch() does not take)."""
    return coll.aggregate([{"$changeStream": spec}, *(pipeline or [])], maxAwaitTimeMS=100)


def _operation_time(client):
    """A start after every write so far (a stream's startAtOperationTime is inclusive)."""
    t = client.admin.command("ping")["$clusterTime"]["clusterTime"]
    return Timestamp(t.time, t.inc + 1)


@pytest.mark.mongosim(topology="sharded")
def test_update_lookup_after_a_migration_reads_the_new_owner(mongosim_client):
    client = mongosim_client
    client.admin.command("enableSharding", "ul", primaryShard="shard00")
    client.admin.command("shardCollection", "ul.c", key={"k": 1})
    client.admin.command("split", "ul.c", middle={"k": 100})
    coll = client.ul.c
    coll.insert_one({"_id": 1, "k": 150, "v": 0})
    start = _operation_time(client)
    coll.update_one({"_id": 1, "k": 150}, {"$set": {"v": 1}})
    # the document moves to shard01 (shard00, which wrote the event, deletes its copy)
    client.admin.command("moveChunk", "ul.c", find={"k": 150}, to="shard01")
    coll.update_one({"_id": 1, "k": 150}, {"$set": {"v": 2}})
    with raw_stream(coll, {"startAtOperationTime": start, "fullDocument": "updateLookup"}) as cursor:
        first, second = read(cursor, 2)
    assert first["documentKey"] == {"k": 150, "_id": 1}
    assert first["fullDocument"] == {"_id": 1, "k": 150, "v": 2}  # the current version, on shard01
    assert second["fullDocument"] == {"_id": 1, "k": 150, "v": 2}


@pytest.mark.mongosim(topology="sharded")
def test_update_lookup_of_an_unsharded_collection_after_move_primary(mongosim_client):
    client = mongosim_client
    client.admin.command("enableSharding", "ulp", primaryShard="shard00")
    coll = client.ulp.c
    coll.insert_one({"_id": 1, "v": 0})
    start = _operation_time(client)
    coll.update_one({"_id": 1}, {"$set": {"v": 1}})
    client.admin.command("movePrimary", "ulp", to="shard01")
    with raw_stream(coll, {"startAtOperationTime": start, "fullDocument": "updateLookup"}) as cursor:
        (event,) = read(cursor, 1)
    assert event["fullDocument"] == {"_id": 1, "v": 1}


@BOTH
@pytest.mark.parametrize("match_uuid", [False, True])
def test_match_collection_uuid_for_update_lookup(mongosim_client, topology, match_uuid):
    client = mongosim_client
    coll = client.ulu.c
    if topology == "sharded":
        client.admin.command("shardCollection", "ulu.c", key={"_id": "hashed"})
    coll.insert_one({"_id": 1, "gen": 1})
    start = _operation_time(client)
    coll.update_one({"_id": 1}, {"$set": {"x": 1}})
    coll.drop()  # the collection is dropped and created again: another UUID
    if topology == "sharded":
        client.admin.command("shardCollection", "ulu.c", key={"_id": "hashed"})
    coll.insert_one({"_id": 1, "gen": 2})
    spec = {"startAtOperationTime": start, "fullDocument": "updateLookup"}
    if match_uuid:
        spec["matchCollectionUUIDForUpdateLookup"] = True
    with raw_stream(coll, spec) as cursor:
        update = read(cursor, 1)[0]
    assert update["operationType"] == "update"
    assert update["fullDocument"] == (None if match_uuid else {"_id": 1, "gen": 2})
