"""collMod on a view, through pymongo, on both topologies (mongos sends it to the database's primary shard).

Facts from the server (8.0): catalog/coll_mod.cpp parseCollModRequest and _collModInternal (a view
takes `viewOn` and `pipeline`; every other collMod option is "option not supported on a view"),
catalog/collection_catalog.cpp modifyView and catalog/views_for_database.cpp update (the definition
validated as at create, the view's collation kept, `system.views` updated), views/view_graph.cpp
(cycles, depth), views/view_catalog_helpers.cpp validatePipeline.
"""

from __future__ import annotations

import pytest
from pymongo.errors import OperationFailure


@pytest.fixture
def db(client, request):
    db = client[f"cmv_{request.node.name.split('[')[0][-20:]}"]
    client.drop_database(db.name)
    if client.topology_name == "sharded":  # the backing collection sharded: mongos reads it from both shards
        client.admin.command("enableSharding", db.name, primaryShard="shard00")
        client.admin.command("shardCollection", f"{db.name}.base", key={"_id": 1})
        client.admin.command("split", f"{db.name}.base", middle={"_id": 5})
        client.admin.command("moveChunk", f"{db.name}.base", find={"_id": 5}, to="shard01")
    db.base.insert_many([{"_id": i, "k": i % 3} for i in range(10)])
    db.other.insert_many([{"_id": i, "z": i * 10} for i in range(4)])
    db.create_collection("v", viewOn="base", pipeline=[{"$match": {"k": 0}}])
    return db


def _views(db) -> dict:
    return {c["name"]: c["options"] for c in db.list_collections() if c["type"] == "view"}


def _refused_and_unchanged(db, fields: dict, code: int, message: str | None) -> None:
    """collMod of the view v with `fields` fails with `code` (and `message`), and v is as it was."""
    with pytest.raises(OperationFailure) as e:
        db.command({"collMod": "v", **fields})
    assert e.value.code == code
    if message is not None:
        assert e.value.details["errmsg"] == message.format(db=db.name)
    assert _views(db)["v"] == {"viewOn": "base", "pipeline": [{"$match": {"k": 0}}]}


def _reply(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("$clusterTime", "operationTime")}


def test_coll_mod_replaces_the_definition_that_reads_and_list_collections_use(db):
    assert sorted(d["_id"] for d in db.v.find()) == [0, 3, 6, 9]
    reply = db.command("collMod", "v", viewOn="other", pipeline=[{"$match": {"z": {"$gte": 10}}}])
    assert _reply(reply) == {"ok": 1.0}
    assert _views(db) == {"v": {"viewOn": "other", "pipeline": [{"$match": {"z": {"$gte": 10}}}]}}
    assert [d["_id"] for d in db.v.find().sort("_id", 1)] == [1, 2, 3]
    assert db.v.count_documents({"z": {"$lt": 30}}) == 2
    assert db.v.distinct("z") == [10, 20, 30]
    assert list(db.v.aggregate([{"$group": {"_id": None, "s": {"$sum": "$z"}}}])) == [{"_id": None, "s": 60}]


def test_either_field_alone_keeps_the_other(db):
    """Without auth the server's checkAuthForCollMod does not run (the command is authorized before it is
    parsed), so one of viewOn / pipeline may change alone; an empty viewOn is ignored (coll_mod.cpp sets
    the view's viewOn only when the string is not empty)."""
    db.command("collMod", "v", pipeline=[{"$match": {"k": 1}}])
    assert _views(db)["v"] == {"viewOn": "base", "pipeline": [{"$match": {"k": 1}}]}
    db.command("collMod", "v", viewOn="other")
    assert _views(db)["v"] == {"viewOn": "other", "pipeline": [{"$match": {"k": 1}}]}
    assert list(db.v.find()) == []
    db.command("collMod", "v", viewOn="", pipeline=[])
    assert _views(db)["v"] == {"viewOn": "other", "pipeline": []}
    assert db.v.count_documents({}) == 4
    db.command("collMod", "v")  # nothing to change: the definition is written again as it is
    assert _views(db)["v"] == {"viewOn": "other", "pipeline": []}


def test_a_view_keeps_its_collation(db):
    db.create_collection("cv", viewOn="base", pipeline=[], collation={"locale": "fr", "strength": 1})
    db.command("collMod", "cv", viewOn="other", pipeline=[{"$project": {"s": {"$cond": [{"$eq": ["a", "A"]}, 1, 0]}}}])
    opts = _views(db)["cv"]
    assert opts["viewOn"] == "other" and opts["collation"]["locale"] == "fr" and opts["collation"]["strength"] == 1
    assert {d["s"] for d in db.cv.find()} == {1}  # "a" == "A" at strength 1: the view's collation applies


@pytest.mark.parametrize("fields, code, message", [
    ({"validator": {"a": 1}}, 72, "option not supported on a view: validator"),
    ({"validationLevel": "off"}, 72, "option not supported on a view: validationLevel"),
    ({"validationAction": "warn"}, 72, "option not supported on a view: validationAction"),
    ({"index": {"name": "x", "hidden": True}}, 72, "option not supported on a view: index"),
    ({"expireAfterSeconds": 10}, 72, "option not supported on a view: expireAfterSeconds"),
    ({"changeStreamPreAndPostImages": {"enabled": True}}, 72,
     "option not supported on a view: changeStreamPreAndPostImages"),
    # (recordPreImages left create and collMod in 6.2, SERVER-60919: 8.0's IDL does not know it)
    ({"recordPreImages": True}, 40415, "BSON field 'collMod.recordPreImages' is an unknown field."),
    ({"index": {"name": "x", "unique": True}}, 26, "ns does not exist for unique index conversion: {db}.v"),
    ({"collation": {"locale": "fr"}}, 40415, "BSON field 'collMod.collation' is an unknown field."),
    ({"pipeline": {}}, 14, "BSON field 'collMod.pipeline' is the wrong type 'object', expected type 'array'"),
    ({"pipeline": [1]}, 14, "BSON field 'collMod.pipeline.0' is the wrong type 'int', expected type 'object'"),
    ({"viewOn": 5}, 14, "BSON field 'collMod.viewOn' is the wrong type 'int', expected type 'string'"),
    ({"validationLevel": "sometimes"}, 2, None),  # (the IDL's enum check comes first)
    ({"pipeline": [], "validator": {}}, 72, "option not supported on a view: validator"),  # (in the IDL's order)
    # (parseCollModRequest looks at the capped fields first)
    ({"index": {"name": "x", "hidden": True}, "cappedMax": 5}, 72, "option not supported on a view: cappedMax"),
])
def test_options_a_view_does_not_take(db, fields, code, message):
    _refused_and_unchanged(db, fields, code, message)


def test_time_series_options_on_a_view(db, client):
    """Through mongos the CollModCoordinator refuses bucketing options on a collection that is not a
    time-series collection (6201808) before the primary shard's parseCollModRequest would
    (collmod_coordinator.cpp)."""
    if client.topology_name == "sharded":
        code, message = 6201808, "Cannot use time-series options for a non-timeseries collection"
    else:
        code, message = 72, "option only supported on a time-series collection: timeseries"
    _refused_and_unchanged(db, {"timeseries": {"granularity": "hours"}}, code, message)
    _refused_and_unchanged(db, {"timeseries": {}}, 72, "option only supported on a time-series collection: timeseries")


def _chain(db, names: list[str]) -> None:
    """names[0] on names[1] on ... on base."""
    for name, on in zip(reversed(names), ["base", *reversed(names)]):
        db.create_collection(name, viewOn=on, pipeline=[])


@pytest.mark.parametrize("fields, code, message", [
    ({"viewOn": "v", "pipeline": []}, 5, "View cycle detected: {db}.v => {db}.v => {db}.v"),
    ({"viewOn": "w2", "pipeline": []}, 5, "View cycle detected: {db}.v => {db}.v => {db}.w2 => {db}.v"),
    ({"viewOn": "w1", "pipeline": []}, 5, "View cycle detected: {db}.v => {db}.v => {db}.w2 => {db}.w1 => {db}.v"),
    ({"viewOn": "base", "pipeline": [{"$unionWith": "w1"}]}, 5,
     "View cycle detected: {db}.v => {db}.v => {db}.w2 => {db}.w1 => {db}.v"),
    ({"viewOn": "base", "pipeline": [{"$out": "x"}]}, 167,
     "Invalid pipeline for view {db}.v :: caused by :: The aggregation stage $out in location 0 of the pipeline "
     "cannot be used in the view definition of {db}.v because it writes to disk"),
    ({"viewOn": "base", "pipeline": [{"$match": {}}, {"$merge": "x"}]}, 167,
     "Invalid pipeline for view {db}.v :: caused by :: The aggregation stage $merge in location 1 of the pipeline "
     "cannot be used in the view definition of {db}.v because it writes to disk"),
    ({"viewOn": "base", "pipeline": [{"$changeStream": {}}]}, 167,
     "Invalid pipeline for view {db}.v :: caused by :: $changeStream cannot be used in a view definition"),
    ({"viewOn": "base", "pipeline": [{"$bogus": 1}]}, 40324,
     "Invalid pipeline for view {db}.v :: caused by :: Unrecognized pipeline stage name: '$bogus'"),
    ({"viewOn": "base", "pipeline": [{"$lookup": {"from": "a", "localField": "b", "foreignField": "c"}}]}, 9, None),
    ({"viewOn": "base", "pipeline": [{"$project": {"f": "$$undef"}}]}, 17276,
     "Invalid pipeline for view {db}.v :: caused by :: Use of undefined variable: undef"),
    ({"viewOn": "system.buckets.t", "pipeline": []}, 73,
     "Invalid view: cannot define a view over a system.buckets namespace except by creating a time-series collection"),
    ({"viewOn": "a$b", "pipeline": []}, 73, "invalid name for 'viewOn': a$b"),
    ({"viewOn": "fr", "pipeline": []}, 167, "View {db}.v has conflicting collation with view {db}.fr"),
])
def test_the_new_definition_is_validated_as_at_create(db, fields, code, message):
    """views_for_database.cpp: the pipeline validated (its errors under "Invalid pipeline for view ..."),
    the collations of the views it reads compared, the view graph checked (the cycle's path printed from
    its end, its last namespace first: view_graph.cpp's loop), the buckets rule last."""
    _chain(db, ["w1", "w2"])
    db.command("collMod", "w2", viewOn="v", pipeline=[])  # w1 -> w2 -> v -> base
    db.create_collection("fr", viewOn="base", collation={"locale": "fr"})
    _refused_and_unchanged(db, fields, code, message)
    assert sorted(d["_id"] for d in db.w1.find()) == [0, 3, 6, 9]


def test_depth_limit(db):
    """view_graph.cpp: the longest chain of views through the modified one may hold 20 views."""
    names = [f"d{i}" for i in range(19)]
    _chain(db, names)  # d0 -> ... -> d18 -> base: 19 views
    db.command("collMod", "v", viewOn="d0", pipeline=[])  # v -> d0: 20 views
    assert db.v.count_documents({}) == 10
    db.create_collection("top", viewOn="base")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "top", viewOn="v", pipeline=[])  # 21
    assert (e.value.code, e.value.details["errmsg"]) == (165, "View depth limit exceeded; maximum depth is 20")
    with pytest.raises(OperationFailure) as e:
        db.create_collection("top2", viewOn="v")
    assert e.value.code == 165


def test_view_fields_on_a_collection_or_a_time_series_collection(db):
    """On a collection (and on a time-series collection, whose collMod the server runs on its buckets
    collection) `pipeline`, then `viewOn`, are "option only supported on a view"."""
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "other", viewOn="base", pipeline=[])
    assert (e.value.code, e.value.details["errmsg"]) == (72, "option only supported on a view: pipeline")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "other", viewOn="base")
    assert (e.value.code, e.value.details["errmsg"]) == (72, "option only supported on a view: viewOn")
    db.create_collection("ts", timeseries={"timeField": "t"})
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "ts", viewOn="base", pipeline=[])
    assert (e.value.code, e.value.details["errmsg"]) == (72, "option only supported on a view: pipeline")
    with pytest.raises(OperationFailure) as e:
        db.command("collMod", "missing", viewOn="base", pipeline=[])
    assert e.value.code == 26


def test_create_validates_the_definition_too(db):
    with pytest.raises(OperationFailure) as e:
        db.create_collection("loop", viewOn="loop")
    assert e.value.code == 5
    with pytest.raises(OperationFailure) as e:
        db.create_collection("frv", viewOn="v", collation={"locale": "fr"})
    assert (e.value.code, e.value.details["errmsg"]) == (167, f"View {db.name}.frv has conflicting collation with "
                                                               f"view {db.name}.v")
    assert "loop" not in _views(db) and "frv" not in _views(db)
