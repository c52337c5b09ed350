"""Issue 6: expanded DDL events through the router, field by field."""

from __future__ import annotations

from tests.scenarios.conftest import read, read_quiet, shard_three_ways


def test_expanded_ddl_events(client):
    client.admin.command("enableSharding", "d", primaryShard="shard00")
    db = client.d
    with db.watch(show_expanded_events=True, max_await_time_ms=100) as cs:
        db.create_collection("a")
        db.a.create_index("x", name="x_1")
        db.command("collMod", "a")
        db.a.drop_index("x_1")
        client.admin.command("shardCollection", "d.a", key={"_id": 1})
        db.a.create_index([("_id", 1), ("z", 1)], name="_id_1_z_1")
        client.admin.command("refineCollectionShardKey", "d.a", key={"_id": 1, "z": 1})
        client.admin.command("reshardCollection", "d.a", key={"z": 1})
        db.a.rename("b")
        db.b.drop()
        evs = read(cs, 10)
    types = [e["operationType"] for e in evs]
    assert types == ["create", "createIndexes", "modify", "dropIndexes", "shardCollection", "createIndexes",
                     "refineCollectionShardKey", "reshardCollection", "rename", "drop"]
    by = dict(zip(types, evs))
    assert all("collectionUUID" in e for e in evs)
    assert by["shardCollection"]["operationDescription"] == {"shardKey": {"_id": 1}, "unique": False,
                                                             "presplitHashedZones": False}
    assert by["refineCollectionShardKey"]["operationDescription"] == {"shardKey": {"_id": 1, "z": 1},
                                                                      "oldShardKey": {"_id": 1}}
    desc = by["reshardCollection"]["operationDescription"]
    assert list(desc) == ["reshardUUID", "shardKey", "oldShardKey", "unique"] and desc["shardKey"] == {"z": 1}
    # after resharding the collection has a new UUID, named in reshardUUID
    assert by["rename"]["collectionUUID"] == desc["reshardUUID"] != by["create"]["collectionUUID"]
    assert by["rename"]["to"] == {"db": "d", "coll": "b"}
    assert by["drop"]["ns"] == {"db": "d", "coll": "b"}


def test_classic_stream_sees_only_classic_events(client):
    client.admin.command("enableSharding", "d", primaryShard="shard00")
    db = client.d
    with db.watch(max_await_time_ms=100) as cs:
        db.create_collection("a")
        db.a.create_index("x")
        db.a.insert_one({"_id": 1})
        db.a.drop()
        evs = read(cs, 2)
        assert [e["operationType"] for e in evs] == ["insert", "drop"] and "collectionUUID" not in evs[0]
        assert read_quiet(cs, 0.2) == []


def test_drop_database_on_several_shards(client):
    shard_three_ways(client, "s.c")
    client.s.c.insert_many([{"_id": i, "k": i * 90} for i in range(3)])
    client.s.other.insert_one({"_id": 1})
    with client.s.watch(max_await_time_ms=100) as cs:
        client.drop_database("s")
        evs = read(cs, 4)
    assert [e["operationType"] for e in evs] == ["drop", "drop", "dropDatabase", "invalidate"]
    assert {e["ns"]["coll"] for e in evs[:2]} == {"c", "other"}
    assert evs[2]["ns"] == {"db": "s"}
    assert cs.alive is False


def test_sharded_collection_drop_is_one_drop_and_one_invalidate(client):
    shard_three_ways(client)
    coll = client.s.c
    coll.insert_many([{"_id": i, "k": i * 90} for i in range(3)])
    with coll.watch(max_await_time_ms=100) as cs:
        coll.drop()
        evs = read(cs, 2)
        assert [e["operationType"] for e in evs] == ["drop", "invalidate"]
        assert read_quiet(cs, 0.2) == []
    assert not cs.alive


def test_rename_across_databases_is_refused_as_the_rename_coordinator_does(client):
    import pytest
    from pymongo.errors import OperationFailure

    client.admin.command("enableSharding", "r1", primaryShard="shard00")
    client.admin.command("enableSharding", "r2", primaryShard="shard01")
    client.r1.plain.insert_one({"_id": 1})
    client.r2.x.insert_one({"_id": 1})
    client.admin.command("shardCollection", "r1.sh", key={"_id": 1})
    with pytest.raises(OperationFailure) as err:
        client.admin.command("renameCollection", "r1.sh", to="r2.sh")
    assert err.value.code == 125 and "because r1.sh is sharded" in str(err.value)
    with pytest.raises(OperationFailure) as err:
        client.admin.command("renameCollection", "r1.plain", to="r2.plain")
    assert err.value.code == 125 and "must be on same shard" in str(err.value)
    assert client.r1.plain.find_one() == {"_id": 1}  # nothing lost
