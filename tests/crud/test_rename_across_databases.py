"""renameCollection across databases through pymongo, on both topologies.

Facts from the server (8.0): on a replica set catalog/rename_collection.cpp (validateNamespacesForRenameCollection,
renameCollectionAcrossDatabases: a copy in a temporary collection of the target database renamed over the
target, then the source dropped); through mongos cluster_rename_collection_cmd.cpp (the target database
created on the source's primary shard when missing) and the rename coordinator's checks
(s/rename_collection_coordinator.cpp: a sharded source must stay in its database, the two databases must
have the same primary shard; sharding_ddl_util.cpp checkRenamePreconditions: an existing target needs
dropTarget; a view as target is refused).  The same-database errors differ by topology where the server's do:
mongos checks first ("Collection a.x doesn't exist.", "Target collection ... exists but dropTarget is not
set"), a replica set's renameCollection says "source namespace does not exist" / "target namespace exists".
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture
def dbs(client, request):
    suffix = request.node.name.split("[")[0][-12:]
    src, dst = client[f"rs_{suffix}"], client[f"rd_{suffix}"]
    for db in (src, dst):
        client.drop_database(db.name)
    if client.topology_name == "sharded":  # (both on one primary shard: the rename coordinator requires it)
        for db in (src, dst):
            client.admin.command("enableSharding", db.name, primaryShard="shard01")
    return src, dst


def _rename(client, src: str, dst: str, **kw) -> dict:
    reply = client.admin.command("renameCollection", src, to=dst, **kw)
    return {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}


def _error(client, src: str, dst: str, **kw) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as e:
        client.admin.command("renameCollection", src, to=dst, **kw)
    return e.value.code, e.value.details["errmsg"]


def test_documents_indexes_and_options_move(client, dbs):
    a, b = dbs
    a.create_collection("c", validator={"n": {"$type": "int"}}, collation={"locale": "fr", "strength": 2})
    a.c.insert_many([{"_id": i, "n": i, "s": f"x{i}"} for i in range(7)])
    a.c.create_index("n", unique=True)
    a.c.create_index([("s", "text")])
    assert _rename(client, f"{a.name}.c", f"{b.name}.moved") == {"ok": 1.0}
    assert a.list_collection_names() == [] and b.list_collection_names() == ["moved"]
    assert [d["_id"] for d in b.moved.find().sort("_id", 1)] == list(range(7))
    info = b.command("listCollections", filter={"name": "moved"})["cursor"]["firstBatch"][0]
    assert info["options"]["validator"] == {"n": {"$type": "int"}} and info["options"]["collation"]["locale"] == "fr"
    indexes = {ix["name"]: ix for ix in b.moved.list_indexes()}
    assert set(indexes) == {"_id_", "n_1", "s_text"} and indexes["n_1"]["unique"] is True
    assert indexes["_id_"]["collation"]["locale"] == "fr"  # (the _id index takes the collection's default)
    assert b.moved.find_one({"$text": {"$search": "x3"}})["_id"] == 3
    with pytest.raises(OperationFailure):
        b.moved.insert_one({"n": "not an int"})  # the validator moved too


def test_an_existing_target_needs_drop_target(client, dbs):
    a, b = dbs
    a.c.insert_many([{"_id": 1}, {"_id": 2}])
    b.t.insert_one({"_id": "old"})
    code, msg = _error(client, f"{a.name}.c", f"{b.name}.t")
    assert code == 48
    assert msg == (f"Target collection {b.name}.t exists but dropTarget is not set" if client.topology_name == "sharded"
                   else "target namespace exists")
    assert _rename(client, f"{a.name}.c", f"{b.name}.t", dropTarget=True) == {"ok": 1.0}
    assert sorted(d["_id"] for d in b.t.find()) == [1, 2]


def test_stay_temp_keeps_a_temporary_collection_temporary(client, dbs):
    a, b = dbs
    a.create_collection("tmp1", temp=True)
    a.create_collection("tmp2", temp=True)
    _rename(client, f"{a.name}.tmp1", f"{b.name}.kept", stayTemp=True)
    _rename(client, f"{a.name}.tmp2", f"{b.name}.plain")
    options = {c["name"]: c["options"] for c in b.list_collections()}
    assert options == {"kept": {"temp": True}, "plain": {}}


def test_capped_collections_keep_their_order_and_limits(client, dbs):
    a, b = dbs
    a.create_collection("cap", capped=True, size=4096, max=3)
    for i in (5, 1, 9, 4):
        a.cap.insert_one({"_id": i})
    _rename(client, f"{a.name}.cap", f"{b.name}.cap")
    assert [d["_id"] for d in b.cap.find()] == [1, 9, 4]
    assert b.cap.options()["capped"] is True and b.cap.options()["max"] == 3
    b.cap.insert_one({"_id": 7})
    assert [d["_id"] for d in b.cap.find()] == [9, 4, 7]


def test_views_time_series_and_system_collections(client, dbs):
    a, b = dbs
    a.base.insert_one({"_id": 1})
    a.create_collection("v", viewOn="base")
    a.create_collection("ts", timeseries={"timeField": "t"})
    b.create_collection("bv", viewOn="x")
    sharded = client.topology_name == "sharded"
    for source in ("v", "ts"):  # mongos looks for the collection first, a replica set finds a view
        assert _error(client, f"{a.name}.{source}", f"{b.name}.x") == (
            (26, f"Collection {a.name}.{source} doesn't exist.") if sharded
            else (166, f"cannot rename view: {a.name}.{source}"))
    assert _error(client, f"{a.name}.base", f"{b.name}.bv") == (
        (166, f"Can't rename to target collection `{b.name}.bv` because it is a view.") if sharded
        else (48, f"a view already exists with that name: {b.name}.bv"))
    assert _error(client, f"{a.name}.base", f"{b.name}.system.views") == (
        20, "renaming system.views collection or renaming to system.views is not allowed")
    assert _error(client, f"{a.name}.base", f"{b.name}.system.js") == (
        20, "renaming system.js collection or renaming to system.js is not allowed")
    assert _error(client, f"{a.name}.base", f"{b.name}.system.other") == (
        20, f"error with target namespace: Invalid system namespace: {b.name}.system.other")
    assert _error(client, f"{a.name}.system.buckets.ts", f"{b.name}.plain") == (
        20, f"Cannot rename timeseries buckets collection '{a.name}.system.buckets.ts' to a namespace that is not "
            f"timeseries buckets '{b.name}.plain'.")
    assert _error(client, f"{a.name}.base", f"{a.name}.base") == (20, "Can't rename a collection to itself")
    assert a.base.find_one() == {"_id": 1} and a.ts.count_documents({}) == 0


def test_a_missing_source(client, dbs):
    a, b = dbs
    a.other.insert_one({"_id": 1})
    assert _error(client, f"{a.name}.nope", f"{b.name}.x") == (
        (26, f"Collection {a.name}.nope doesn't exist.") if client.topology_name == "sharded"
        else (26, "source namespace does not exist"))


def test_through_mongos_the_target_database_is_created_on_the_source_primary(sharded_client):
    client = sharded_client
    client.drop_database("xa")
    client.drop_database("xb")
    client.admin.command("enableSharding", "xa", primaryShard="shard01")
    client.xa.c.insert_one({"_id": 1})
    _rename(client, "xa.c", "xb.c")
    assert client.config.databases.find_one({"_id": "xb"})["primary"] == "shard01"
    assert client.xb.c.find_one() == {"_id": 1}


def test_through_mongos_over_a_sharded_target(sharded_client):
    """A sharded target dropped by the rename: its documents on every shard and its routing metadata go."""
    client = sharded_client
    for db in ("ya", "yb"):
        client.drop_database(db)
        client.admin.command("enableSharding", db, primaryShard="shard00")
    client.admin.command("shardCollection", "yb.t", key={"_id": 1})
    client.admin.command("split", "yb.t", middle={"_id": 10})
    client.admin.command("moveChunk", "yb.t", find={"_id": 10}, to="shard01")
    client.yb.t.insert_many([{"_id": 1}, {"_id": 20}])
    client.ya.c.insert_many([{"_id": 5}, {"_id": 15}])
    _rename(client, "ya.c", "yb.t", dropTarget=True)
    assert client.config.collections.find_one({"_id": "yb.t"}) is None
    assert sorted(d["_id"] for d in client.yb.t.find()) == [5, 15]
    cluster = client.mongosim_cluster
    assert cluster.call(lambda: cluster.core.nodes["shard01"].catalog.collection("yb", "t")) is None
