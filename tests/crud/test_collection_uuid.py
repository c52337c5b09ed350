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
