"""The `collectionUUID` argument of the commands that take it, through pymongo on both topologies.

Facts from the server: catalog/collection_uuid_mismatch.cpp (8.x) and the 6.0+ jstests
jstests/core/collection_uuid_{find,write_commands,index_commands,drop,...}.js: with the UUID of the
collection the command names it runs; with another (or none existing), CollectionUUIDMismatch (361)
"Collection UUID does not match that specified" with db, collectionUUID, expectedCollection and
actualCollection (the UUID's collection in the same database, else null) — a command error on a
mongod, a write error through mongos for insert/update/delete ("Sharded cluster scenario" in
collection_uuid_write_commands.js); mongos answers "Database does not exist" for a database that does
not exist (cluster_find_cmd and its siblings).  collMod's own cases are in test_coll_mod.py.
"""

from __future__ import annotations

import pytest
from bson import Binary
from pymongo.errors import OperationFailure

from tests.driver_version import RAW_BULK_WRITE


@pytest.fixture
def db(client, request):
    db = client[f"cu_{request.node.name.split('[')[0][-24:]}"]
    client.drop_database(db.name)
    db.a.insert_one({"_id": 1, "x": 1})
    db.b.insert_one({"_id": 1})
    return db


def _uuid(db, name: str) -> Binary:
    return next(c for c in db.list_collections(filter={"name": name}))["info"]["uuid"]


COMMANDS = [
    {"find": "a"}, {"count": "a"}, {"distinct": "a", "key": "x"}, {"aggregate": "a", "pipeline": [], "cursor": {}},
    {"findAndModify": "a", "query": {}, "update": {"$set": {"y": 1}}}, {"listIndexes": "a"},
    {"createIndexes": "a", "indexes": [{"key": {"y": 1}, "name": "y_1"}]}, {"dropIndexes": "a", "index": "*"},
    {"insert": "a", "documents": [{"_id": 2}]}, {"update": "a", "updates": [{"q": {}, "u": {"$set": {"z": 1}}}]},
    {"delete": "a", "deletes": [{"q": {"_id": 2}, "limit": 1}]}, {"drop": "a"},
]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: next(iter(c)))
def test_the_right_uuid_runs_another_refuses(db, client, cmd):
    b = _uuid(db, "b")
    name = next(iter(cmd))
    write = name in ("insert", "update", "delete")
    reply = None
    try:
        reply = db.command({**cmd, "collectionUUID": b})
    except OperationFailure as e:
        details = e.details
    else:
        assert write and client.topology_name == "sharded", reply
        details = reply["writeErrors"][0]
    assert {k: details[k] for k in ("code", "errmsg", "db", "collectionUUID", "expectedCollection",
                                    "actualCollection")} == {
        "code": 361, "errmsg": "Collection UUID does not match that specified", "db": db.name,
        "collectionUUID": b, "expectedCollection": "a", "actualCollection": "b"}
    assert db.a.find_one({"_id": 1}) == {"_id": 1, "x": 1}  # nothing ran
    assert db.command({**cmd, "collectionUUID": _uuid(db, "a")})["ok"] == 1.0


def test_a_missing_collection_and_a_missing_database(db, client):
    a = _uuid(db, "a")
    with pytest.raises(OperationFailure) as e:
        db.command({"find": "missing", "collectionUUID": a})
    assert (e.value.code, e.value.details["actualCollection"]) == (361, "a")
    with pytest.raises(OperationFailure) as e:
        db.command({"drop": "missing", "collectionUUID": a})
    assert e.value.code == 361
    client.drop_database("cu_nodb")
    with pytest.raises(OperationFailure) as e:
        client.cu_nodb.command({"find": "c", "collectionUUID": a})
    message = "Database does not exist" if client.topology_name == "sharded" else \
        "Collection UUID does not match that specified"
    assert (e.value.code, e.value.details["errmsg"], e.value.details["actualCollection"]) == (361, message, None)


# -- renameCollection (rename_collection.idl: `collectionUUID` the source's, `dropTarget` as a UUID the
# target's; jstests/core/ddl/collection_uuid_rename_collection.js) -----------------------------------
def _rename(client, db, src: str, dst: str, **kw):
    return client.admin.command({"renameCollection": f"{db.name}.{src}", "to": f"{db.name}.{dst}", **kw})


def _mismatch(e, db, uuid, expected, actual, message="Collection UUID does not match that specified"):
    d = e.value.details
    assert (e.value.code, d["errmsg"], d["db"], d["collectionUUID"], d["expectedCollection"],
            d["actualCollection"]) == (361, message, db, uuid, expected, actual)


def test_rename_with_the_right_uuids(db, client):
    a, b = _uuid(db, "a"), _uuid(db, "b")
    assert _rename(client, db, "a", "c", dropTarget=True, collectionUUID=a)["ok"] == 1.0
    assert _rename(client, db, "b", "c", dropTarget=_uuid(db, "c"))["ok"] == 1.0  # (drops the renamed a)
    assert _rename(client, db, "c", "a", collectionUUID=b)["ok"] == 1.0
    assert _uuid(db, "a") == b and sorted(db.list_collection_names()) == ["a"]
    assert db.a.find_one() == {"_id": 1}


@pytest.mark.parametrize("value, name", [(1, "int"), ("yes", "string"), (None, "null"), ({"a": 1}, "object")])
def test_rename_drop_target_is_a_bool_or_a_uuid(db, client, value, name):
    """8.0's rename_collection.idl types `dropTarget` as `variant: [bool, uuid]` (mongos's
    cluster_rename_collection_cmd.cpp visits the two alternatives), so the generated parser refuses
    any other type, on a mongod and at mongos alike, before anything else is checked."""
    with pytest.raises(OperationFailure) as e:
        _rename(client, db, "a", "b", dropTarget=value)
    assert (e.value.code, e.value.details["errmsg"]) == (
        14, f"BSON field 'renameCollection.dropTarget' is the wrong type '{name}', expected types '[bool, binData]'")
    assert db.a.find_one() == {"_id": 1, "x": 1} and db.b.find_one() == {"_id": 1}  # nothing renamed nor dropped
    assert _rename(client, db, "a", "b", dropTarget=True)["ok"] == 1.0


def test_rename_with_another_uuid(db, client):
    a, b = _uuid(db, "a"), _uuid(db, "b")
    with pytest.raises(OperationFailure) as e:  # the source's
        _rename(client, db, "b", "c", dropTarget=True, collectionUUID=a)
    _mismatch(e, db.name, a, "b", "a")
    with pytest.raises(OperationFailure) as e:  # the target's
        _rename(client, db, "a", "b", dropTarget=a)
    _mismatch(e, db.name, a, "b", "a")
    with pytest.raises(OperationFailure) as e:  # the source's first
        _rename(client, db, "b", "c", dropTarget=b, collectionUUID=a)
    _mismatch(e, db.name, a, "b", "a")
    missing = Binary(bytes(16), 4)
    with pytest.raises(OperationFailure) as e:  # a target that does not exist has no UUID
        _rename(client, db, "b", "c", dropTarget=missing)
    _mismatch(e, db.name, missing, "c", None)
    with pytest.raises(OperationFailure) as e:  # a source that does not exist: before NamespaceNotFound
        _rename(client, db, "missing", "c", collectionUUID=a)
    _mismatch(e, db.name, a, "missing", "a")
    assert sorted(db.list_collection_names()) == ["a", "b"] and _uuid(db, "a") == a and _uuid(db, "b") == b


def test_rename_uuid_and_a_missing_database_or_another_database(db, client):
    a = _uuid(db, "a")
    client.drop_database("cu_rename_nodb")
    with pytest.raises(OperationFailure) as e:
        client.admin.command({"renameCollection": "cu_rename_nodb.x", "to": "cu_rename_nodb.y",
                              "collectionUUID": a})
    message = "Database does not exist" if client.topology_name == "sharded" else \
        "Collection UUID does not match that specified"
    _mismatch(e, "cu_rename_nodb", a, "x", None, message)
    other = client.cu_rename_other
    other.x.insert_one({"_id": 1})
    try:
        for kw in ({"collectionUUID": a}, {"dropTarget": _uuid(other, "x")}):
            with pytest.raises(OperationFailure) as e:
                client.admin.command({"renameCollection": f"{db.name}.a", "to": "cu_rename_other.x", **kw})
            assert e.value.code == 72  # InvalidOptions
            assert "Cannot provide an expected collection UUID when renaming" in e.value.details["errmsg"]
        with pytest.raises(OperationFailure) as e:  # only collections of the same database are named
            client.admin.command({"renameCollection": "cu_rename_other.x", "to": "cu_rename_other.y",
                                  "collectionUUID": a})
        _mismatch(e, "cu_rename_other", a, "x", None)
    finally:
        client.drop_database("cu_rename_other")


# -- bulkWrite (bulk_write.idl NamespaceInfoEntry.collectionUUID): each op checks its entry's UUID; a
# mismatch is that op's error item, not a command error ---------------------------------------------
@RAW_BULK_WRITE
def test_bulk_write_ns_info_uuid(db, client):
    a, b = _uuid(db, "a"), _uuid(db, "b")
    reply = client.admin.command({
        "bulkWrite": 1, "ordered": False,
        "nsInfo": [{"ns": f"{db.name}.a", "collectionUUID": b}, {"ns": f"{db.name}.b", "collectionUUID": b},
                   {"ns": f"{db.name}.missing", "collectionUUID": a}],
        "ops": [{"insert": 0, "document": {"_id": 2}}, {"insert": 0, "document": {"_id": 3}},
                {"update": 0, "filter": {}, "updateMods": {"$set": {"y": 1}}},
                {"delete": 0, "filter": {"_id": 1}, "multi": False},
                {"insert": 1, "document": {"_id": 2}}, {"insert": 2, "document": {"_id": 1}}]})
    items = reply["cursor"]["firstBatch"]
    info = ("ok", "idx", "code", "errmsg", "db", "collectionUUID", "expectedCollection", "actualCollection")
    mismatch = {"ok": 0.0, "code": 361, "errmsg": "Collection UUID does not match that specified", "db": db.name,
                "collectionUUID": b, "expectedCollection": "a", "actualCollection": "b"}
    assert [{k: item[k] for k in info} for item in items[:4]] == [{**mismatch, "idx": i} for i in range(4)]
    assert items[2]["nModified"] == 0 and items[4] == {"ok": 1.0, "idx": 4, "n": 1}
    assert {k: items[5][k] for k in info} == {**mismatch, "idx": 5, "collectionUUID": a,
                                              "expectedCollection": "missing", "actualCollection": "a"}
    assert (reply["nErrors"], reply["nInserted"]) == (5, 1)
    assert list(db.a.find()) == [{"_id": 1, "x": 1}] and "missing" not in db.list_collection_names()
    # ordered: the first mismatch stops it; the right UUID runs
    reply = client.admin.command({
        "bulkWrite": 1, "nsInfo": [{"ns": f"{db.name}.a", "collectionUUID": a}, {"ns": f"{db.name}.b",
                                                                                 "collectionUUID": a}],
        "ops": [{"insert": 0, "document": {"_id": 2}}, {"insert": 1, "document": {"_id": 3}},
                {"insert": 0, "document": {"_id": 4}}]})
    assert [(i["idx"], i["ok"]) for i in reply["cursor"]["firstBatch"]] == [(0, 1.0), (1, 0.0)]
    assert reply["cursor"]["firstBatch"][1]["actualCollection"] == "a"
    assert sorted(d["_id"] for d in db.a.find()) == [1, 2]
    with pytest.raises(OperationFailure) as e:
        client.admin.command({"bulkWrite": 1, "nsInfo": [{"ns": f"{db.name}.a", "collectionUUID": "x"}],
                              "ops": [{"insert": 0, "document": {}}]})
    assert e.value.code == 14  # TypeMismatch


# -- the sharding commands that take it (jstests/sharding/collection_uuid_{shard_collection,
# refine_collection_shard_key,reshard_collection}.js) --------------------------------------------------
def test_sharding_commands(sharded_client):
    client = sharded_client
    client.drop_database("cu_shard")
    db = client.cu_shard
    db.a.insert_one({"_id": 0, "k": 1, "j": 2})
    db.b.insert_one({"_id": 1, "k": 1, "j": 2})
    db.a.create_index([("k", 1), ("j", 1)])
    db.b.create_index([("k", 1), ("j", 1)])
    db.b.create_index([("j", 1)])
    db.create_collection("v", viewOn="a", pipeline=[])
    a = _uuid(db, "a")
    missing = Binary(bytes(16), 4)
    try:
        def refused(cmd: dict, expected: str, uuid, actual):
            with pytest.raises(OperationFailure) as e:
                client.admin.command({**cmd, "collectionUUID": uuid})
            _mismatch(e, "cu_shard", uuid, expected, actual)

        refused({"shardCollection": "cu_shard.b", "key": {"k": 1}}, "b", a, "a")
        refused({"shardCollection": "cu_shard.b", "key": {"k": 1}}, "b", missing, None)
        refused({"shardCollection": "cu_shard.v", "key": {"k": 1}}, "v", a, "a")  # (a view has no UUID)
        assert client.admin.command({"shardCollection": "cu_shard.a", "key": {"k": 1}, "collectionUUID": a})["ok"]
        assert client.admin.command({"shardCollection": "cu_shard.b", "key": {"k": 1}})["ok"]
        refused({"shardCollection": "cu_shard.b", "key": {"k": 1}}, "b", a, "a")  # (already sharded too)
        refused({"refineCollectionShardKey": "cu_shard.b", "key": {"k": 1, "j": 1}}, "b", a, "a")
        refused({"refineCollectionShardKey": "cu_shard.gone", "key": {"k": 1, "j": 1}}, "gone", a, "a")
        assert client.admin.command({"refineCollectionShardKey": "cu_shard.a", "key": {"k": 1, "j": 1},
                                     "collectionUUID": a})["ok"]
        refused({"reshardCollection": "cu_shard.b", "key": {"j": 1}}, "b", a, "a")
        refused({"reshardCollection": "cu_shard.v", "key": {"j": 1}}, "v", a, "a")
        b = _uuid(db, "b")
        assert client.admin.command({"reshardCollection": "cu_shard.b", "key": {"j": 1}, "collectionUUID": b})["ok"]
        assert _uuid(db, "b") != b
        assert client.config.collections.find_one({"_id": "cu_shard.b"})["key"] == {"j": 1}
        with pytest.raises(OperationFailure) as e:
            client.admin.command({"reshardCollection": "cu_shard.b", "key": {"k": 1}, "collectionUUID": "b"})
        assert e.value.code == 14
    finally:
        client.drop_database("cu_shard")
