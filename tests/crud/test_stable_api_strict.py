"""The Stable API's strictness, through pymongo, on mongos and on a replica set's members.

A client declaring `ServerApi("1", strict=True)` may run only API Version 1: other commands fail with
APIStrictError (323) and the server's message naming the command; so do a field the command's IDL marks
unstable, a write to system.js, and an aggregation stage outside the API (at any depth of a pipeline,
or of a view's definition).  Without strict, all of them run.  A transaction's statements and a cursor's
getMores must give the API parameters of the command that began them (APIMismatchError, 347).
"""

from __future__ import annotations

import pymongo
import pytest
from pymongo.errors import OperationFailure
from pymongo.server_api import ServerApi

from mongosim import Cluster

_DOCHUB = "https://dochub.mongodb.org/core/manual-versioned-api"


def _not_in_v1(name: str) -> str:
    return (f"Provided apiStrict:true, but the command {name} is not in API Version 1. Information on supported "
            f"commands and migrations in API Version 1 can be found at {_DOCHUB}")


@pytest.fixture(scope="module", params=["sharded", "replset"])
def clients(request):
    with Cluster(shards=2, port=0, instant_hwm=True, topology=request.param) as cluster:
        strict = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=10000,
                                     server_api=ServerApi("1", strict=True, deprecation_errors=True))
        lax = pymongo.MongoClient(cluster.uri, serverSelectionTimeoutMS=10000, server_api=ServerApi("1"))
        lax.api.c.insert_many([{"_id": i, "a": i} for i in range(3)])
        yield strict, lax
        strict.close()
        lax.close()


def _plain(strict) -> pymongo.MongoClient:
    host, port = strict.address
    return pymongo.MongoClient(f"mongodb://{host}:{port}", serverSelectionTimeoutMS=10000)


_V1 = {"apiVersion": "1"}
_V1_STRICT = {"apiVersion": "1", "apiStrict": True}


def _fails(fn, code: int = 323) -> str:
    with pytest.raises(OperationFailure) as info:
        fn()
    assert info.value.code == code, info.value.details
    assert info.value.details["codeName"] == {323: "APIStrictError", 347: "APIMismatchError"}[code]
    return info.value.details["errmsg"]


def test_v1_commands_run_strictly(clients):
    strict, _lax = clients
    db = strict.api
    db.c.insert_one({"_id": 10, "a": 10})
    assert db.c.find_one({"_id": 10}) == {"_id": 10, "a": 10}
    assert db.c.count_documents({"a": {"$lt": 3}}) == 3
    assert db.c.estimated_document_count() == 4
    assert db.c.update_one({"_id": 10}, {"$set": {"b": 1}}).modified_count == 1
    assert db.c.find_one_and_update({"_id": 10}, {"$inc": {"b": 1}}, return_document=True)["b"] == 2
    assert [d["_id"] for d in db.c.aggregate([{"$match": {"a": {"$gte": 1}}}, {"$sort": {"_id": 1}}])] == [1, 2, 10]
    assert db.c.delete_one({"_id": 10}).deleted_count == 1
    assert "c" in db.list_collection_names()
    assert db.command("ping")["ok"] == 1.0
    assert db.command("explain", {"find": "c", "filter": {"a": 1}})["ok"] == 1.0
    # $collStats with its count option is in API Version 1 (drivers count with it)
    assert list(db.c.aggregate([{"$collStats": {"count": {}}}, {"$group": {"_id": 1, "n": {"$sum": "$count"}}}])
                )[0]["n"] == 3


@pytest.mark.parametrize("cmd, name", [
    ({"collStats": "c"}, "collStats"),
    ({"dbStats": 1}, "dbStats"),
    ({"distinct": "c", "key": "a"}, "distinct"),
    ({"listCommands": 1}, "listCommands"),
    ({"isMaster": 1}, "isMaster"),
    ({"ismaster": 1}, "isMaster"),
    ({"buildinfo": 1}, "buildInfo"),
    ({"serverStatus": 1}, "serverStatus"),
])
def test_commands_outside_v1_are_refused(clients, cmd, name):
    strict, lax = clients
    assert _fails(lambda: strict.api.command(cmd)) == _not_in_v1(name)
    assert lax.api.command(cmd)["ok"] == 1.0


@pytest.mark.parametrize("command, field, value", [
    ("find", "returnKey", True),
    ("find", "showRecordId", True),
    ("find", "min", {"_id": 0}),
    ("find", "noCursorTimeout", True),
    ("aggregate", "explain", True),
    ("aggregate", "isMapReduceCommand", False),
])
def test_unstable_fields_are_refused(clients, command, field, value):
    strict, _lax = clients
    extra = {"pipeline": [], "cursor": {}} if command == "aggregate" else {}
    msg = _fails(lambda: strict.api.command(command, "c", **extra, **{field: value}))
    assert msg == f"BSON field '{command}.{field}' is not allowed with apiStrict:true."


def test_an_unstable_field_of_coll_mods_index_is_refused(clients):
    strict, _lax = clients
    msg = _fails(lambda: strict.api.command("collMod", "c", index={"name": "_id_", "prepareUnique": True}))
    assert msg == "BSON field 'collMod.index.prepareUnique' is not allowed with apiStrict:true."


def test_writes_to_system_js_are_refused(clients):
    strict, _lax = clients
    msg = _fails(lambda: strict.api.command("insert", "system.js", documents=[{"_id": "f", "value": 1}]))
    assert msg == "Provided apiStrict:true, but the command insert attempts to write to system.js"
    msg = _fails(lambda: strict.api.command("findAndModify", "system.js", query={}, remove=True))
    assert msg == "Provided apiStrict:true, but the command findAndModify attempts to write to system.js"
    assert strict.api.command("find", "system.js")["ok"] == 1.0  # (reading it is allowed)


@pytest.mark.parametrize("pipeline, stage", [
    ([{"$currentOp": {}}], "$currentOp"),
    ([{"$indexStats": {}}], "$indexStats"),
    ([{"$planCacheStats": {}}], "$planCacheStats"),
    ([{"$match": {}}, {"$lookup": {"from": "c", "pipeline": [{"$indexStats": {}}], "as": "x"}}], "$indexStats"),
    ([{"$unionWith": {"coll": "c", "pipeline": [{"$planCacheStats": {}}]}}], "$planCacheStats"),
    ([{"$facet": {"a": [], "b": [{"$indexStats": {}}]}}], "$indexStats"),
])
def test_stages_outside_v1_are_refused(clients, pipeline, stage):
    strict, lax = clients
    db = "admin" if stage == "$currentOp" else "api"
    coll = 1 if stage == "$currentOp" else "c"
    expected = f"{stage} is not allowed with 'apiStrict: true' in API Version 1"
    assert _fails(lambda: strict[db].command("aggregate", coll, pipeline=pipeline, cursor={})) == expected
    if stage != "$currentOp":  # (a view's definition is checked too)
        assert _fails(lambda: strict.api.command("create", "v", viewOn="c", pipeline=pipeline)) == expected
    try:  # (without strict the stage is no API error; a nested one may fail for other reasons)
        lax[db].command("aggregate", coll, pipeline=pipeline, cursor={})
    except OperationFailure as err:
        assert err.code != 323 and len(pipeline[0]) == 1 and next(iter(pipeline[0])) != stage


@pytest.mark.parametrize("spec", [{"latencyStats": {}}, {"storageStats": {}}, {"count": {}, "queryExecStats": {}}])
def test_coll_stats_outside_its_count_is_refused(clients, spec):
    strict, lax = clients
    msg = _fails(lambda: strict.api.c.aggregate([{"$collStats": spec}]))
    assert msg == "only the 'count' option to $collStats is supported in API Version 1"
    assert len(list(lax.api.c.aggregate([{"$collStats": spec}]))) >= 1


def test_explicit_parameters_on_a_client_without_server_api(clients):
    strict, _lax = clients
    plain = _plain(strict)
    try:
        db = plain.api
        assert db.command("collStats", "c", apiVersion="1", apiStrict=False)["ok"] == 1.0
        assert db.command("collStats", "c", apiVersion="1")["ok"] == 1.0
        assert _fails(lambda: db.command("collStats", "c", apiVersion="1", apiStrict=True)) == _not_in_v1("collStats")
        # no command of API Version 1 is deprecated: apiDeprecationErrors refuses none
        assert db.command("count", "c", apiVersion="1", apiStrict=True, apiDeprecationErrors=True)["n"] == 3
        # mongos forwards a strict command's own fields to the shards, which accept them
        assert db.command("find", "c", filter={"_id": 1}, apiVersion="1", apiStrict=True)["cursor"]["firstBatch"] == [
            {"_id": 1, "a": 1}]
    finally:
        plain.close()



def test_a_get_more_gives_its_cursors_api_parameters(clients):
    plain = _plain(clients[0])
    try:
        db = plain.api
        cid = db.command("find", "c", batchSize=1, **_V1_STRICT)["cursor"]["id"]
        msg = _fails(lambda: db.command("getMore", cid, collection="c", batchSize=1, **_V1), 347)
        assert msg == ('API parameter mismatch: getMore used params { apiVersion: "1" }, the cursor-creating command '
                       'used { apiVersion: "1", apiStrict: true }')
        more = db.command("getMore", cid, collection="c", batchSize=1, **_V1_STRICT)  # (the cursor survives)
        assert more["cursor"]["nextBatch"] == [{"_id": 1, "a": 1}]
        cid = db.command("find", "c", batchSize=1)["cursor"]["id"]
        msg = _fails(lambda: db.command("getMore", cid, collection="c", **_V1), 347)
        assert msg == ('API parameter mismatch: getMore used params { apiVersion: "1" }, the cursor-creating command '
                       'used {}')
        assert len(db.command("getMore", cid, collection="c")["cursor"]["nextBatch"]) == 2
    finally:
        plain.close()


@pytest.mark.parametrize("ending", ["commitTransaction", "abortTransaction"])
def test_a_transaction_keeps_its_first_commands_api_parameters(clients, ending):
    strict, lax = clients
    plain = _plain(strict)
    try:
        with plain.start_session() as s:
            lsid, txn = {"lsid": s.session_id}, {"txnNumber": 1, "autocommit": False}
            db = plain.api
            db.command("insert", "c", documents=[{"_id": f"t-{ending}"}], startTransaction=True, **lsid, **txn,
                       **_V1)
            msg = _fails(lambda: db.command("insert", "c", documents=[{"_id": "t2"}], **lsid, **txn, **_V1_STRICT), 347)
            assert msg == ('API parameter mismatch: insert used params { apiVersion: "1", apiStrict: true }, the '
                           "transaction's first command used { apiVersion: \"1\" }")
            msg = _fails(lambda: plain.admin.command(ending, 1, **lsid, **txn, apiVersion="1", apiStrict=False), 347)
            assert msg == (f'API parameter mismatch: {ending} used params {{ apiVersion: "1", apiStrict: false }}, the '
                           "transaction's first command used { apiVersion: \"1\" }")
            # the transaction goes on: it ends with its own parameters
            assert plain.admin.command(ending, 1, **lsid, **txn, **_V1)["ok"] == 1.0
        found = lax.api.c.find_one({"_id": f"t-{ending}"})
        assert (found is not None) == (ending == "commitTransaction")
        assert lax.api.c.find_one({"_id": "t2"}) is None
    finally:
        lax.api.c.delete_many({"_id": {"$in": [f"t-{ending}", "t2"]}})
        plain.close()


def test_a_driver_transaction_with_a_server_api_runs(clients):
    strict, lax = clients
    with strict.start_session() as s:
        with s.start_transaction():
            strict.api.c.insert_one({"_id": "driver-txn"}, session=s)
            assert strict.api.c.find_one({"_id": "driver-txn"}, session=s) == {"_id": "driver-txn"}
    assert lax.api.c.find_one({"_id": "driver-txn"}) == {"_id": "driver-txn"}
    lax.api.c.delete_one({"_id": "driver-txn"})
    assert [d["_id"] for d in strict.api.c.find({}, batch_size=1).sort("_id")] == [0, 1, 2]  # (getMores)
