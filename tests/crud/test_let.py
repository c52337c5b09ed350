"""`let` on aggregate, find, update, delete and findAndModify, and the system variables.

Through pymongo against both topologies; on the sharded cluster the collection
is sharded across both shards where it matters (mongos evaluates `let` once
and sends the values to every shard).
"""

from __future__ import annotations

import datetime

import pymongo
import pytest
from bson import Timestamp
from pymongo.errors import OperationFailure

from tests.crud.conftest import shard_two_ways


@pytest.fixture
def coll(client):
    c = client.lt.c
    c.insert_many([{"_id": 1, "k": 1, "name": "a"}, {"_id": 2, "k": 150, "name": "b"},
                   {"_id": 3, "k": 160, "name": "b"}])
    return c


def test_find_with_let(coll):
    assert list(coll.find({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 1})) == [{"_id": 1, "k": 1, "name": "a"}]
    # computed projection fields see the variables too
    got = list(coll.find({"_id": 2}, {"_id": 0, "v": "$$x"}, let={"x": {"$add": [1, 2]}}))
    assert got == [{"v": 3}]


def test_aggregate_with_let(coll):
    got = list(coll.aggregate([
        {"$match": {"$expr": {"$eq": ["$_id", "$$id"]}}},
        {"$project": {"_id": 0, "x": "$$x", "y": "$$y", "rand": "$$rand"}},
    ], let={"id": 1, "x": "foo", "y": {"$literal": "$bar"}, "rand": {"$rand": {}}}))
    assert len(got) == 1
    assert got[0]["x"] == "foo" and got[0]["y"] == "$bar"
    assert isinstance(got[0]["rand"], float) and 0 <= got[0]["rand"] < 1


def test_let_values_may_use_earlier_ones(coll):
    got = list(coll.aggregate([{"$match": {"_id": 1}}, {"$project": {"_id": 0, "b": "$$b"}}],
                              let={"a": 2, "b": {"$multiply": ["$$a", 10]}}))
    assert got == [{"b": 20}]


def test_update_and_delete_with_let(coll):
    r = coll.update_many({"$expr": {"$eq": ["$name", "$$name"]}}, [{"$set": {"x": "$$x", "y": "$$y"}}],
                         let={"name": "b", "x": "foo", "y": {"$literal": "bar"}})
    assert (r.matched_count, r.modified_count) == (2, 2)
    assert sorted(d["_id"] for d in coll.find({"x": "foo", "y": "bar"})) == [2, 3]
    r = coll.update_one({"$expr": {"$eq": ["$_id", "$$id"]}}, [{"$set": {"z": "$$v"}}], let={"id": 1, "v": 7})
    assert r.modified_count == 1 and coll.find_one({"_id": 1})["z"] == 7
    r = coll.replace_one({"$expr": {"$eq": ["$_id", "$$id"]}}, {"k": 1, "r": True}, let={"id": 1})
    assert r.modified_count == 1 and coll.find_one({"_id": 1}) == {"_id": 1, "k": 1, "r": True}
    assert coll.delete_one({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 3}).deleted_count == 1
    assert coll.delete_many({"$expr": {"$gt": ["$k", "$$lo"]}}, let={"lo": 100}).deleted_count == 1
    assert sorted(d["_id"] for d in coll.find()) == [1]


def test_find_and_modify_with_let(coll):
    doc = coll.find_one_and_update({"$expr": {"$eq": ["$_id", "$$id"]}}, [{"$set": {"x": "$$x"}}],
                                   let={"id": 1, "x": "foo"}, return_document=pymongo.ReturnDocument.AFTER)
    assert doc["x"] == "foo"
    doc = coll.find_one_and_replace({"$expr": {"$eq": ["$_id", "$$id"]}}, {"k": 1, "x": "x"}, let={"id": 1})
    assert doc["_id"] == 1
    assert coll.find_one({"_id": 1}) == {"_id": 1, "k": 1, "x": "x"}
    doc = coll.find_one_and_delete({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 2})
    assert doc["_id"] == 2


@pytest.mark.parametrize("name, code, msg", [
    ("Bad", 16867, "'Bad' starts with an invalid character for a user variable name"),
    ("a-b", 16868, "'a-b' contains an invalid character for a variable name: '-'"),
    ("", 16866, "empty variable names are not allowed"),
])
def test_bad_variable_names(coll, name, code, msg):
    with pytest.raises(OperationFailure) as ei:
        list(coll.find({}, let={name: 1}))
    assert ei.value.code == code
    assert ei.value.details["errmsg"] == "Invalid 'let' parameter :: caused by :: " + msg
    with pytest.raises(OperationFailure) as ei:
        list(coll.aggregate([], let={name: 1}))
    assert ei.value.code == code


def test_system_variables_cannot_be_set_by_a_client(coll):
    with pytest.raises(OperationFailure) as ei:
        list(coll.find({}, let={"NOW": datetime.datetime(2020, 1, 1)}))
    assert ei.value.code == 4738901
    assert ei.value.details["errmsg"] == "Attempt to set internal constant: NOW"


def test_let_may_not_read_a_document(coll):
    with pytest.raises(OperationFailure) as ei:
        list(coll.find({}, let={"x": "$k"}))
    assert ei.value.code == 4890500
    with pytest.raises(OperationFailure) as ei:
        list(coll.aggregate([], let={"x": {"$add": ["$$ROOT.k", 1]}}))
    assert ei.value.code == 4890500


def test_undefined_variable_is_17276(coll):
    with pytest.raises(OperationFailure) as ei:
        list(coll.find({"$expr": {"$eq": ["$_id", "$$nope"]}}))
    assert ei.value.code == 17276
    assert ei.value.details["errmsg"] == "Use of undefined variable: nope"
    # ... also on an empty collection: the check is made when the expression is parsed
    with pytest.raises(OperationFailure) as ei:
        list(coll.database.empty.aggregate([{"$project": {"x": "$$nope"}}]))
    assert ei.value.code == 17276
    # a variable bound inside the expression is defined
    got = list(coll.aggregate([{"$match": {"_id": 1}},
                               {"$project": {"_id": 0, "m": {"$map": {"input": [1, 2], "as": "v", "in": "$$v"}}}}]))
    assert got == [{"m": [1, 2]}]


def test_now_and_cluster_time_are_one_value_per_command(coll):
    coll.insert_many([{"_id": 10 + i, "k": i} for i in range(50)])
    got = list(coll.aggregate([{"$project": {"now": "$$NOW", "ct": "$$CLUSTER_TIME"}}]))
    assert len({d["now"] for d in got}) == 1
    assert len({d["ct"] for d in got}) == 1
    assert isinstance(got[0]["now"], datetime.datetime)
    assert isinstance(got[0]["ct"], Timestamp)
    coll.update_many({}, [{"$set": {"t": "$$NOW"}}])
    assert len({d["t"] for d in coll.find()}) == 1


def test_sharded_let_is_evaluated_once_for_every_shard(sharded_client):
    shard_two_ways(sharded_client, "lt.s")
    c = sharded_client.lt.s
    c.insert_many([{"_id": i, "k": k} for i, k in enumerate([1, 2, 150, 160])])
    r = c.update_many({}, [{"$set": {"r": "$$r", "t": "$$NOW"}}], let={"r": {"$rand": {}}})
    assert r.modified_count == 4
    docs = list(c.find())
    assert len({d["r"] for d in docs}) == 1 and len({d["t"] for d in docs}) == 1
    got = list(c.aggregate([{"$match": {"$expr": {"$gte": ["$k", "$$lo"]}}}, {"$sort": {"k": 1}},
                            {"$project": {"_id": 0, "k": 1, "x": "$$x"}}], let={"lo": 2, "x": "y"}))
    assert got == [{"k": 2, "x": "y"}, {"k": 150, "x": "y"}, {"k": 160, "x": "y"}]
    assert [d["_id"] for d in c.find({"$expr": {"$lt": ["$k", "$$hi"]}}, let={"hi": 155}).sort("k")] == [0, 1, 2]
    assert c.delete_many({"$expr": {"$gt": ["$k", "$$lo"]}}, let={"lo": 100}).deleted_count == 2


def test_let_through_a_view(client):
    client.lt.src.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 150}])
    client.lt.create_collection("v", viewOn="src", pipeline=[{"$match": {"k": {"$gt": 0}}}])
    assert [d["_id"] for d in client.lt.v.find({"$expr": {"$eq": ["$k", "$$k"]}}, let={"k": 150})] == [2]
    got = list(client.lt.v.aggregate([{"$project": {"_id": 0, "x": "$$x"}}, {"$limit": 1}], let={"x": 5}))
    assert got == [{"x": 5}]
